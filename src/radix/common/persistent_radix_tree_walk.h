// PersistentRadixTree whole-tree walks: ordered scan, verify, stats and the block visitor.
// Included only by the .cc file of a design, which instantiates the template for its Ops.
#ifndef PMINDEX_RADIX_COMMON_PERSISTENT_RADIX_TREE_WALK_H_
#define PMINDEX_RADIX_COMMON_PERSISTENT_RADIX_TREE_WALK_H_

#include <algorithm>
#include <cstdlib>
#include <mutex>
#include <shared_mutex>
#include <string>

#include "pm/alloc.h"
#include "pm/prefetch.h"
#include "radix/common/persistent_radix_tree.h"
#include "radix/common/scan_stack.h"

namespace pmindex::radix {

// A scan is a descent to `start` and an in-order walk from there over a ScanStack of pending
// child words (scan_stack.h). Its cost is cache misses on blocks scattered over the pool, one
// per leaf and one to three lines per node, so the walk runs ahead of itself instead of
// waiting for them one by one:
//  - descending, it pushes the children right of the path (every key below them is greater
//    than `start`) and prefetches the nearest ones;
//  - expanding a node, it prefetches its children and moves the leading leaves among them
//    to the output, the rest onto the stack. A node that has nodes among its children then
//    pre-expands the next pending node below them (prefetched earlier, so its child words
//    are read without a wait): its children, likely nodes too, are fetched while the
//    current node's subtree is walked;
//  - a leaf is not read when reached: its word goes to the output, and the output is read
//    (emitted) after the walk, by which time the lines have arrived.
// A scan of more than kScanChunk pairs is walked in chunks, each starting just after the
// last key of the one before (that key, then a 0 byte).
template <typename Ops>
struct PersistentRadixTree<Ops>::ScanState : ScanStack<uint64_t> {};

// Requests the lines a scan reads of the block of child word w: a leaf's first line, or the
// lines of a node the walk reads to visit all its children.
template <typename Ops>
void PersistentRadixTree<Ops>::ScanPrefetch(const char* mem, uint64_t w) {
  if (IsLeafChild(w))
    pm::PrefetchLine(mem + ChildOffset(w));
  else
    Ops::PrefetchChildren(mem, w);
}

// The node's end word (if any) and children in key order into kids, at least the first
// `limit` (>= 1) of them; their count (capped by the caller).
template <typename Ops>
size_t PersistentRadixTree<Ops>::ScanChildren(uint64_t w, uint64_t* kids, size_t limit) const {
  const uint64_t end = base(w)->end;
  if (end == 0) return Ops::Children(*pool_, w, 0, kids, limit);
  kids[0] = end;
  return limit == 1 ? 1 : 1 + Ops::Children(*pool_, w, 0, kids + 1, limit - 1);
}

// One chunk: the words of up to st.need leaves with key >= start, in key order, into
// st.leaves.
template <typename Ops>
void PersistentRadixTree<Ops>::ScanChunk(std::string_view start, ScanState& st) {
  const char* const mem = pool_->base();
  uint64_t kids[Ops::kMaxChildren + 1];
  // Requests a path level's nearest right children, during the descent: they are the
  // first blocks the walk reads after the path's, and their lines arrive meanwhile.
  auto prefetch_level = [&](uint64_t node, unsigned from) {
    const size_t n = std::min<size_t>(Ops::Children(*pool_, node, from, kids, kScanPathPrefetch),
                                      kScanPathPrefetch);
    for (size_t i = 0; i < n; ++i) ScanPrefetch(mem, kids[i]);
  };
  // Pushes a path level's right children (on top, or under what is kept).
  auto push_level = [&](uint64_t node, unsigned from, size_t d, bool under) {
    const size_t got = Ops::Children(*pool_, node, from, kids, st.need - (under ? st.size : 0));
    if (under)
      st.PushUnder(kids, got, d);
    else
      st.Push(kids, got, d);
  };
  ScanPath<uint64_t> path;
  // Descent: the words right of the path to `start`, nearest on top.
  const uint8_t* s = Bytes(start);
  const size_t su = Span::units(start.size());
  uint64_t w = LoadWord(RootSlot(*pool_));
  uint32_t depth = 0;
  while (w != 0) {
    if (IsLeafChild(w)) {
      if (leaf(w)->key() >= start) st.Push(&w, 1, depth);
      break;
    }
    uint64_t hw = LoadWord(&base(w)->header);
    if (PrefixHeader::DepthOf(hw) != depth) [[unlikely]]
      hw = RepairHeader(w, depth, hw).Encode();
    const uint32_t pos = PrefixHeader::PosOf(hw);
    int order = 0;  // of the node's prefix against start's units there
    for (uint32_t i = depth; i < pos && order == 0; ++i) {
      if (i == su) {  // start ends inside the prefix: every key here is longer, so greater
        order = 1;
        break;
      }
      const uint8_t a = i - depth < kStoredPrefix
                            ? static_cast<uint8_t>(hw >> (24 + 8 * (i - depth)))
                            : Span::unit(AnyLeaf(w)->key_ptr(), i);
      const uint8_t b = Span::unit(s, i);
      if (a != b) order = a < b ? -1 : 1;
    }
    if (order < 0) break;           // the whole subtree is below start
    if (order > 0 || su == pos) {  // the whole subtree is at or above start
      st.Push(&w, 1, depth);
      break;
    }
    const uint8_t u = Span::unit(s, pos);  // the end word's key is a prefix of start: below
    // The next block of the path, all the lines the descent and the walk read of it, is
    // requested before this node's right children are collected: one wait per level
    // instead of one per line read (header, then child slot).
    const uint64_t* next = Ops::FindChild(*pool_, w, u);
    const uint64_t down = next != nullptr ? *next : 0;
    if (down != 0) ScanPrefetch(mem, down);
    path.Step(w, u + 1u, pos + 1, push_level);
    prefetch_level(w, u + 1u);
    w = down;
    depth = pos + 1;
  }
  // The path's right children, deepest level first, under the word the descent ended on.
  path.PushRecorded(st, push_level);
  // The nearest pending words, the ones the walk starts with, whatever path level pushed
  // them.
  for (size_t i = 0; i < std::min(st.size, kScanStartPrefetch); ++i)
    ScanPrefetch(mem, st.Peek(i));
  // The walk.
  while (st.size != 0 && st.need != 0) {
    size_t d;
    st.Pop(&w, &d);
    depth = static_cast<uint32_t>(d);
    if (IsLeafChild(w)) {
      st.Output(w);
      continue;
    }
    uint64_t hw = LoadWord(&base(w)->header);
    if (PrefixHeader::DepthOf(hw) != depth) [[unlikely]]
      hw = RepairHeader(w, depth, hw).Encode();
    const size_t n = std::min(ScanChildren(w, kids, st.need), st.need);
    // Again if the node was pre-expanded: a request for a line already in flight or cached
    // costs little, and measured faster than skipping it.
    for (size_t i = 0; i < n; ++i) ScanPrefetch(mem, kids[i]);
    size_t i = 0;
    while (i < n && IsLeafChild(kids[i])) st.Output(kids[i++]);
    if (i == n) {
      // Only leaves: the next pending word is expanded now, and was requested earlier (the
      // descent, or this rule one expansion ago); the one after it is requested here.
      if (st.size > 1) ScanPrefetch(mem, st.Peek(1));
      continue;
    }
    const size_t pushed = st.Push(kids + i, n - i, PrefixHeader::PosOf(hw) + 1);
    // Pre-expand the next pending node below the children just pushed, and request the
    // pending word below it, which the next pre-expansion reads.
    uint64_t y;
    if (st.TakeForPreExpansion(pushed, [](uint64_t c) { return !IsLeafChild(c); }, &y)) {
      const size_t m = std::min(ScanChildren(y, kids, st.need - pushed), st.need - pushed);
      for (size_t j = 0; j < m; ++j) ScanPrefetch(mem, kids[j]);
      if (st.size > pushed + 1 && st.need > pushed + 1) ScanPrefetch(mem, st.Peek(pushed + 1));
    }
  }
}

template <typename Ops>
size_t PersistentRadixTree<Ops>::scan(std::string_view start, size_t max_count,
                                      ScanCallback fn) {
  if (max_count == 0) return 0;
  std::shared_lock lock(mu_);
  const char* const mem = pool_->base();  // held here: the callback may alias anything
  return ScanInChunks<ScanState>(
      start, max_count, fn, [&](std::string_view from, ScanState& st) { ScanChunk(from, st); },
      [mem](uint64_t w) {
        const auto* l = reinterpret_cast<const PmLeaf*>(LeafAt(mem, w));
        return std::pair<std::string_view, std::string_view>(l->key(), l->value());
      });
}

// `path` holds the units every key below w must start with.
template <typename Ops>
Status PersistentRadixTree<Ops>::VerifyWord(uint64_t w, uint32_t depth,
                                            std::vector<uint8_t>& path) {
  const std::string where = " at offset " + std::to_string(ChildOffset(w));
  if (!ValidWord(w)) return Corruption("bad child word or leaf " + std::to_string(w));
  if (IsLeafChild(w)) {
    const PmLeaf* l = leaf(w);
    if (Span::units(l->key_len) < path.size())
      return Corruption("leaf key shorter than its path" + where);
    for (size_t i = 0; i < path.size(); ++i)
      if (Span::unit(l->key_ptr(), i) != path[i])
        return Corruption("leaf key off its path" + where);
    return Status::OK();
  }
  if (const char* e = Ops::CheckNode(*pool_, w)) return Corruption(e + where);
  const RadixNodeBase* nb = base(w);
  bool bad_child = nb->end != 0 && !ValidWord(nb->end);
  Ops::ForEachChild(*pool_, w, 0, [&](uint8_t, uint64_t c) {
    if (c != 0 && !ValidWord(c)) bad_child = true;
    return true;
  });
  if (bad_child) return Corruption("bad child word in node" + where);
  PrefixHeader h = PrefixHeader::Decode(LoadWord(&nb->header));
  const PmLeaf* any = AnyLeaf(w);
  if (any == nullptr) return Corruption("empty node" + where);
  if (h.pos() < depth || h.pos() > Span::units(kMaxKeySize))
    return Corruption("header position out of range" + where);
  // An interrupted split leaves a stale header: legal, repaired on the next traversal.
  if (h.depth != depth) h = h.template Repaired<Ops::kBits>(depth, any->key_ptr());
  if (Span::units(any->key_len) < h.pos())
    return Corruption("leaf shorter than node prefix" + where);
  const size_t saved = path.size();
  for (uint32_t i = 0; i < h.prefix_len; ++i) {
    const uint8_t u = Span::unit(any->key_ptr(), depth + i);
    if (i < kStoredPrefix && u != h.prefix[i])
      return Corruption("stored prefix disagrees with keys" + where);
    path.push_back(u);
  }
  if (nb->end != 0) {
    if (!IsLeafChild(nb->end) || Span::units(leaf(nb->end)->key_len) != h.pos())
      return Corruption("bad end word" + where);
    if (Status s = VerifyWord(nb->end, h.pos(), path); !s.ok()) return s;
  }
  Status result;
  int prev = -1;
  Ops::ForEachChild(*pool_, w, 0, [&](uint8_t unit, uint64_t c) {
    if (static_cast<int>(unit) <= prev) {
      result = Corruption("duplicate or unordered key unit" + where);
    } else if (c == 0) {
      result = Corruption("valid slot with an empty child" + where);
    } else if (IsLeafChild(c) && Span::units(leaf(c)->key_len) <= h.pos()) {
      result = Corruption("child leaf too short" + where);
    } else {
      prev = unit;
      path.push_back(unit);
      result = VerifyWord(c, h.pos() + 1, path);
      path.pop_back();
    }
    return result.ok();
  });
  if (!result.ok()) return result;
  path.resize(saved);
  return Status::OK();
}

template <typename Ops>
Status PersistentRadixTree<Ops>::verify() {
  std::shared_lock lock(mu_);
  const uint64_t root = *RootSlot(*pool_);
  if (root == 0) return Status::OK();
  std::vector<uint8_t> path;
  return VerifyWord(root, 0, path);
}

template <typename Ops>
Status PersistentRadixTree<Ops>::Walk(uint64_t w, FunctionRef<Status(uint64_t word)> fn) {
  if (w == 0) return Status::OK();
  if (!ValidWord(w)) return Corruption("bad child word " + std::to_string(w));
  if (Status s = fn(w); !s.ok()) return s;
  if (IsLeafChild(w)) return Status::OK();
  if (Status s = Walk(base(w)->end, fn); !s.ok()) return s;
  Status result;
  Ops::ForEachChild(*pool_, w, 0, [&](uint8_t, uint64_t c) {
    result = Walk(c, fn);
    return result.ok();
  });
  return result;
}

template <typename Ops>
IndexStats PersistentRadixTree<Ops>::stats() {
  std::shared_lock lock(mu_);
  IndexStats st;
  uint64_t count[kTagMask + 1] = {};
  Walk(*RootSlot(*pool_), [&](uint64_t w) {
    st.pm_bytes += pool_->allocator().block_size(ChildOffset(w));
    ++count[ChildTagOf(w)];
    return Status::OK();
  }).IgnoreError();  // stats count what the walk reaches; a breach is verify()'s to report
  st.keys = count[kTagLeaf];
  for (const auto& [name, tag] : Ops::kNodeNames) st.nodes.push_back({name, count[tag]});
  st.nodes.push_back({"leaves", count[kTagLeaf]});
  st.nodes.push_back({"header_repairs", header_repairs()});
  return st;
}

template <typename Ops>
Status PersistentRadixTree<Ops>::visit_blocks(BlockVisitor& visitor) {
  std::shared_lock lock(mu_);
  return Walk(*RootSlot(*pool_), [&](uint64_t w) { return visitor.visit(ChildOffset(w)); });
}

}  // namespace pmindex::radix

#endif  // PMINDEX_RADIX_COMMON_PERSISTENT_RADIX_TREE_WALK_H_
