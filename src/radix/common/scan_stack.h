// ScanStack: the pending child words of an ordered radix scan (PersistentRadixTree's and the
// volatile ART's walks) and the leaves it has reached.
//
// The walk keeps the children it has not visited yet on a stack, the top next in key order,
// and output the leaves it reaches in order without reading them. The descent records the
// path (ScanPath) and pushes each level's right children after it, deepest level first,
// under what is kept, until `need` words are: the levels above one that already gives
// enough keys are not read at all (the root's right children, in a scan of 100 from a
// random key). Every pending word holds
// at least one key (nodes are never empty), so a word deeper than the `need`-th from the top
// is never reached: the stack is a ring that keeps only the top `need` words, `need` being
// at most kScanChunk (a longer scan is walked in chunks), and so is bounded whatever the
// keys' length and the nodes' fanout.
//
// Thread safety: one scan's private state.
#ifndef PMINDEX_RADIX_COMMON_SCAN_STACK_H_
#define PMINDEX_RADIX_COMMON_SCAN_STACK_H_

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace pmindex::radix {

inline constexpr size_t kScanChunk = 256;  // leaves per walk
inline constexpr size_t kScanRing = 1024;  // >= kScanChunk + the largest fanout + 1 (end word)
inline constexpr unsigned kScanPathPrefetch = 2;  // right siblings prefetched per path node
inline constexpr size_t kScanStartPrefetch = 16;  // pending words prefetched after the descent
inline constexpr size_t kScanPath = 64;  // descent levels whose right children are pushed last
static_assert((kScanRing & (kScanRing - 1)) == 0);
static_assert(kScanRing >= kScanChunk + 256 + 1);

// Word: a child word (0 never pushed). Depths are < 0x8000 (keys of at most 1024 bytes, two
// units a byte at most).
template <typename Word>
struct ScanStack {
  static constexpr uint16_t kPreExpanded = 0x8000;  // depth flag
  size_t need = 0;  // leaves the walk may still output
  size_t top = 0;   // ring index of the next pending word
  size_t size = 0;  // pending words kept (<= need after every push)
  size_t out = 0;   // leaves output
  // Left uninitialized: the ring of pending words with the depth each is reached at (and
  // kPreExpanded), and the output.
  Word word[kScanRing];
  uint16_t depth[kScanRing];
  Word leaves[kScanChunk];

  // Pushes kids[n - 1] .. kids[0] (kids[0] on top) reached at depth d, keeping the top `need`
  // words; returns how many of kids were pushed.
  size_t Push(const Word* kids, size_t n, size_t d) {
    n = std::min(n, need);
    for (size_t i = n; i-- > 0;) {
      top = (top + 1) & (kScanRing - 1);
      word[top] = kids[i];
      depth[top] = static_cast<uint16_t>(d);
    }
    size = std::min(size + n, need);
    return n;
  }
  // Pushes kids[0] .. kids[n - 1] under the bottom word (kids[0] nearest the top), while
  // fewer than `need` words are kept; returns how many were pushed. Words pushed this way
  // are greater than every word already kept.
  size_t PushUnder(const Word* kids, size_t n, size_t d) {
    n = std::min(n, need - size);
    size_t at = top - size;
    for (size_t i = 0; i < n; ++i, --at) {
      word[at & (kScanRing - 1)] = kids[i];
      depth[at & (kScanRing - 1)] = static_cast<uint16_t>(d);
    }
    size += n;
    return n;
  }
  // Pops the top word into *w, its depth into *d.
  void Pop(Word* w, size_t* d) {
    *w = word[top];
    *d = depth[top] & ~kPreExpanded;
    top = (top - 1) & (kScanRing - 1);
    --size;
  }
  // The pending word `below` places under the top into *w, if there is one, it may be
  // reached (below < need), is_node(it) and it has not been pre-expanded yet: marks it
  // pre-expanded and returns true.
  template <typename IsNode>
  bool TakeForPreExpansion(size_t below, IsNode is_node, Word* w) {
    if (size <= below || need <= below) return false;
    const size_t i = (top - below) & (kScanRing - 1);
    if (!is_node(word[i]) || (depth[i] & kPreExpanded)) return false;
    depth[i] |= kPreExpanded;
    *w = word[i];
    return true;
  }
  // The pending word `below` places under the top (below < size).
  Word Peek(size_t below) const { return word[(top - below) & (kScanRing - 1)]; }
  void Output(Word leaf_word) {
    leaves[out++] = leaf_word;
    --need;
  }
};

// The levels of a scan's descent whose right children are still to be pushed: node word,
// first unit right of the path, depth of the children. A descent deeper than kScanPath
// levels pushes them as it goes instead (Push, shallowest first: the same stack).
template <typename Word>
struct ScanPath {
  size_t levels = 0;
  bool eager = false;
  Word node[kScanPath];
  uint16_t from[kScanPath];
  uint16_t depth[kScanPath];
  void Add(Word w, unsigned f, size_t d) {
    node[levels] = w;
    from[levels] = static_cast<uint16_t>(f);
    depth[levels] = static_cast<uint16_t>(d);
    ++levels;
  }
  // One level of the descent: recorded, or pushed at once (push(word, from, depth, false))
  // once the path is full, after every recorded level.
  template <typename Push>
  void Step(Word w, unsigned f, size_t d, Push&& push) {
    if (levels == kScanPath && !eager) {  // too deep to defer: push as we go
      for (size_t i = 0; i < levels; ++i) push(node[i], from[i], depth[i], false);
      eager = true;
    }
    if (eager)
      push(w, f, d, false);
    else
      Add(w, f, d);
  }
  // After the descent: the recorded levels' right children, deepest level first
  // (push(word, from, depth, true)), until the stack holds what the scan needs.
  template <typename Stack, typename Push>
  void PushRecorded(const Stack& st, Push&& push) const {
    if (eager) return;
    for (size_t i = levels; i-- > 0 && st.size < st.need;) push(node[i], from[i], depth[i], true);
  }
};

// A scan of max_count pairs as walks of at most kScanChunk leaves each, each walk after the
// first starting just past the last key emitted (that key and a 0 byte). chunk(start, st)
// runs one walk into a State (a ScanStack); pair(word) is a leaf's (key, value). Returns
// the pairs handed to fn, stopping early when fn returns false.
template <typename State, typename Chunk, typename Pair, typename Fn>
size_t ScanInChunks(std::string_view start, size_t max_count, Fn& fn, Chunk&& chunk,
                    Pair&& pair) {
  size_t total = 0;
  std::string after;
  while (total < max_count) {
    State st;  // the ring and the output are left uninitialized
    st.need = std::min(max_count - total, kScanChunk);
    const size_t want = st.need;
    chunk(start, st);
    for (size_t i = 0; i < st.out; ++i) {
      const auto [key, value] = pair(st.leaves[i]);
      ++total;
      if (!fn(key, value)) return total;
    }
    if (st.out < want) break;
    after.assign(pair(st.leaves[st.out - 1]).first);
    after.push_back('\0');
    start = after;
  }
  return total;
}

}  // namespace pmindex::radix

#endif  // PMINDEX_RADIX_COMMON_SCAN_STACK_H_
