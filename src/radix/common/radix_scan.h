// RadixScan<Access>: one walk of an ordered scan over an ART-shaped radix tree, the one
// PersistentRadixTree (WORT, WOART) runs, through a small node-access policy `Access`. (The
// volatile ART, whose writers run beside its scans under optimistic lock coupling, has a
// validating scan of its own: src/radix/art/art_walk.cc.)
//
// A scan is a descent to `start` and an in-order walk from there over a ScanStack of pending
// child words (scan_stack.h). Its cost is cache misses on blocks scattered over memory, one
// per leaf and one to three lines per node, so the walk runs ahead of itself instead of
// waiting for them one by one:
//  - descending, it pushes the children right of the path (every key below them is greater
//    than `start`) and prefetches the nearest ones; the next block of the path, all the lines
//    the descent and the walk read of it, is requested before a level's right children are
//    collected: one wait per level instead of one per line read (header, then child slot);
//  - expanding a node, it prefetches its children and moves the leading leaves among them
//    to the output, the rest onto the stack. A node that has nodes among its children then
//    pre-expands the next pending node below them (prefetched earlier, so its child words
//    are read without a wait): its children, likely nodes too, are fetched while the
//    current node's subtree is walked;
//  - a leaf is not read when reached: its word goes to the output, and the output is read
//    (emitted) after the walk, by which time the lines have arrived.
// A scan of more than kScanChunk pairs is walked in chunks (ScanInChunks).
//
// The policy `Access` (a small value; `w` is a node word unless it says otherwise):
//   Word                                   a child word (0 = none)
//   Node                                   what Enter reads of a node (header, pointer)
//   kMaxChildren                           most children a node can have
//   kStoredPrefix                          prefix units a node stores; the rest are read
//                                          from a leaf below it
//   kSizeInNode                            a node's size is in its first line, not in its
//                                          word: its lines are requested in two steps
//   Units(bytes), Unit(key, i)             key length in units; unit i of a key
//   Root() -> Word                         the root word
//   IsLeaf(word), LeafKey(word)            a leaf word; its key
//   Enter(w, depth) -> Node                reads the node reached at depth (repairing what
//                                          the tree repairs on traversal)
//   PrefixLen(node), StoredPrefixUnit(node, j)
//   AnyLeafKey(w) -> const uint8_t*        the key of some leaf below the node
//   End(w) -> Word                         the leaf of the key that ends at the node, or 0
//   Children(w, from, kids, limit)         the child words from unit `from` in key order
//                                          into kids, at least the first `limit` (>= 1)
//                                          of them; their count
//   FindChild(w, unit) -> Word             the child of `unit`, or 0
//   Prefetch(word)                         requests the lines the scan reads of a leaf, or
//                                          of a node (all of them unless kSizeInNode)
// and, if Access::kLeafArrays is true (ROART: a word naming up to kMaxChildren leaves kept
// unsorted in one block, its leaf array, where another tree has a subtree):
//   IsLeafArray(word)                      the word names a leaf array; Enter, PrefixLen (0),
//                                          End (0) and Children (its leaves in key order,
//                                          sorted on the fly) treat it as a node of leaves
//   LeafArrayFrom(w, start, kids, limit)   its leaves with key >= start in key order into
//                                          kids, at most `limit`; their count
// and, if kSizeInNode:
//   PrefetchRest(w)                        once the node's first line is read: the rest of
//                                          the lines a walk over its children reads
//   ChildrenInFirstLines(w)                Prefetch(w) requested all its child words
//   PrefetchWhole(w)                       requests the node's other lines
//
// Thread safety: one scan's private state; the caller holds the tree against writers.
#ifndef PMINDEX_RADIX_COMMON_RADIX_SCAN_H_
#define PMINDEX_RADIX_COMMON_RADIX_SCAN_H_

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "radix/common/key.h"
#include "radix/common/scan_stack.h"

namespace pmindex::radix {

// Whether the policy has leaf arrays (Access::kLeafArrays, absent: false).
template <typename Access>
constexpr bool HasLeafArrays() {
  if constexpr (requires { Access::kLeafArrays; })
    return Access::kLeafArrays;
  else
    return false;
}

template <typename Access>
class RadixScan {
 public:
  using Word = typename Access::Word;
  using Node = typename Access::Node;

  RadixScan(const Access& access, ScanStack<Word>& st) : a_(access), st_(st) {}

  // One chunk: the words of up to st.need leaves with key >= start, in key order, into
  // st.leaves. The descent and the walk (the always_inline phases) are compiled into this
  // one function, kept out of the caller's loop over chunks, as the scans were before
  // RadixScan: left to GCC, WOART's walk called Expand once per node (its node dispatch is
  // large) and ran 7% more instructions per scan.
  [[gnu::noinline]] void Run(std::string_view start) {
    Descend(start);
    // The path's right children, deepest level first, under the word the descent ended on.
    path_.PushRecorded(st_, [this](Word w, unsigned from, size_t d, bool under) {
      PushLevel(w, from, d, under);
    });
    // The nearest pending words, the ones the walk starts with, whatever path level pushed
    // them.
    for (size_t i = 0; i < std::min(st_.size, kScanStartPrefetch); ++i) a_.Prefetch(st_.Peek(i));
    Walk();
  }

 private:
  // The descent: the words right of the path to `start`, nearest on top (or recorded in
  // path_, to be pushed after it).
  [[gnu::always_inline]] void Descend(std::string_view start) {
    const uint8_t* s = Bytes(start);
    const size_t su = Access::Units(start.size());
    Word w = a_.Root();
    size_t depth = 0;
    while (w != 0) {
      if (a_.IsLeaf(w)) {
        if (a_.LeafKey(w) >= start) st_.Push(&w, 1, depth);
        return;
      }
      if constexpr (HasLeafArrays<Access>()) {
        if (a_.IsLeafArray(w)) {  // the leaves at or above start, nearest on top
          st_.Push(kids_, a_.LeafArrayFrom(w, start, kids_, st_.need), depth);
          return;
        }
      }
      const Node n = a_.Enter(w, depth);
      const size_t pos = depth + a_.PrefixLen(n);
      const int order = ComparePrefix(w, n, depth, pos, s, su);
      if (order < 0) return;          // the whole subtree is below start
      if (order > 0 || su == pos) {  // the whole subtree is at or above start
        st_.Push(&w, 1, depth);
        return;
      }
      const uint8_t u = Access::Unit(s, pos);  // the end word's key is a prefix of start: below
      const Word down = a_.FindChild(w, u);
      if (down != 0) a_.Prefetch(down);
      path_.Step(w, u + 1u, pos + 1, [this](Word node, unsigned from, size_t d, bool under) {
        PushLevel(node, from, d, under);
      });
      PrefetchLevel(w, u + 1u);
      w = down;
      depth = pos + 1;
    }
  }

  // The order of the node's prefix (units [depth, pos)) against start's units there.
  int ComparePrefix(Word w, const Node& n, size_t depth, size_t pos, const uint8_t* s,
                    size_t su) const {
    const uint8_t* leaf_key = nullptr;  // for the units past the stored prefix
    for (size_t i = depth; i < pos; ++i) {
      if (i == su) return 1;  // start ends inside the prefix: every key here is longer
      uint8_t a;
      if (i - depth < Access::kStoredPrefix) {
        a = a_.StoredPrefixUnit(n, i - depth);
      } else {
        if (leaf_key == nullptr) leaf_key = a_.AnyLeafKey(w);
        a = Access::Unit(leaf_key, i);
      }
      const uint8_t b = Access::Unit(s, i);
      if (a != b) return a < b ? -1 : 1;
    }
    return 0;
  }

  // Requests a path level's nearest right children, during the descent: they are the first
  // blocks the walk reads after the path's, and their lines arrive meanwhile.
  void PrefetchLevel(Word w, unsigned from) {
    const size_t k = std::min<size_t>(a_.Children(w, from, kids_, kScanPathPrefetch),
                                      kScanPathPrefetch);
    for (size_t i = 0; i < k; ++i) a_.Prefetch(kids_[i]);
  }

  // Pushes a path level's right children (on top, or under what is kept).
  void PushLevel(Word w, unsigned from, size_t d, bool under) {
    const size_t got = a_.Children(w, from, kids_, st_.need - (under ? st_.size : 0));
    if (under)
      st_.PushUnder(kids_, got, d);
    else
      st_.Push(kids_, got, d);
  }

  // The node's end word (if any) and children in key order into kids_, the first `limit`
  // (>= 1) of them; their count.
  [[gnu::always_inline]] size_t AllChildren(Word w, size_t limit) {
    const Word end = a_.End(w);
    size_t k;
    if (end == 0) {
      k = a_.Children(w, 0, kids_, limit);
    } else {
      kids_[0] = end;
      k = limit == 1 ? 1 : 1 + a_.Children(w, 0, kids_ + 1, limit - 1);
    }
    return std::min(k, limit);
  }

  [[gnu::always_inline]] void Walk() {
    while (st_.size != 0 && st_.need != 0) {
      Word w;
      size_t depth;
      st_.Pop(&w, &depth);
      if (a_.IsLeaf(w))
        st_.Output(w);
      else
        Expand(w, depth);
    }
  }

  [[gnu::always_inline]] void Expand(Word w, size_t depth) {
    const Node n = a_.Enter(w, depth);
    const size_t k = AllChildren(w, st_.need);
    // Again if the node was pre-expanded: a request for a line already in flight or cached
    // costs little, and measured faster than skipping it.
    for (size_t i = 0; i < k; ++i) a_.Prefetch(kids_[i]);
    size_t i = 0;
    while (i < k && a_.IsLeaf(kids_[i])) st_.Output(kids_[i++]);
    if (i == k) {
      PrefetchAfterLeaves();
      return;
    }
    PreExpand(st_.Push(kids_ + i, k - i, depth + a_.PrefixLen(n) + 1));
  }

  // A node of only leaves was expanded: the next pending word is expanded now, and was
  // requested earlier (the descent, or this rule one expansion ago); the one after it is
  // requested here. If a node's size is in the node, in two steps: the word after the next,
  // whose first lines were requested one expansion ago, has the rest of its lines requested;
  // the one after that its first lines.
  void PrefetchAfterLeaves() {
    if constexpr (Access::kSizeInNode) {
      if (st_.size > 1 && !a_.IsLeaf(st_.Peek(1))) a_.PrefetchRest(st_.Peek(1));
      if (st_.size > 2) a_.Prefetch(st_.Peek(2));
    } else {
      if (st_.size > 1) a_.Prefetch(st_.Peek(1));
    }
  }

  // Pre-expands the next pending node below the `pushed` children just pushed, and requests
  // the pending word below it, which the next pre-expansion reads.
  [[gnu::always_inline]] void PreExpand(size_t pushed) {
    Word y;
    if (!st_.TakeForPreExpansion(pushed, [this](Word c) { return !a_.IsLeaf(c); }, &y)) return;
    if (ChildrenPrefetched(y)) {
      const size_t m = AllChildren(y, st_.need - pushed);
      for (size_t j = 0; j < m; ++j) a_.Prefetch(kids_[j]);
    }
    if (st_.size > pushed + 1 && st_.need > pushed + 1) a_.Prefetch(st_.Peek(pushed + 1));
  }

  // Whether the lines requested with node y's word hold its child words, so that
  // pre-expansion reads them without a wait; if not, the rest of its lines are requested, and
  // its children are read without a wait when it is expanded.
  bool ChildrenPrefetched(Word y) const {
    if constexpr (Access::kSizeInNode) {
      if (!a_.ChildrenInFirstLines(y)) {
        a_.PrefetchWhole(y);
        return false;
      }
    }
    return true;
  }

  const Access a_;
  ScanStack<Word>& st_;
  ScanPath<Word> path_;
  Word kids_[Access::kMaxChildren + 1];  // + the end word
};

}  // namespace pmindex::radix

#endif  // PMINDEX_RADIX_COMMON_RADIX_SCAN_H_
