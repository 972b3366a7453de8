// PFtree's persistent ART inner nodes: Node4, Node16, Node48, Node256.
//
// Every inner node starts with the same 24-byte header and ends with its full compressed
// prefix (prefix_len bytes right after the type's fixed part, so the node's size is
// sizeof(NodeN) + prefix_len). A node at `depth` has consumed key[0..depth); its prefix is
// key[depth..depth+prefix_len); its children are indexed by key[depth+prefix_len]; `term`
// holds the leaf array of the key that ends exactly at depth+prefix_len (at most one key).
//
// Child references are 8-byte pool offsets; bit 0 set = leaf array (blocks are 64-byte
// aligned, so the bit is free). 0 = no child.
//
// Ranges: a Node48 or Node256 may route a run of consecutive bytes [lo, hi] to one leaf array
// (a *shared* child, always a leaf: Node48 index bytes naming the same slot, or Node256 slots
// holding the same reference). Its keys share key[0..p) with the path (p = depth +
// prefix_len, the leaf's depth) and have key[p] in [lo, hi]; a child of one byte holds keys
// with key[p] = b and has depth p + 1. Node4/16 never share. A Node48 slot serves its whole
// run, so replacing a shared child there is one 8-byte store; a Node256 run (and any change
// of the runs themselves) is changed by copying the node.
//
// What changes in place, and how (each is one failure-atomic 8-byte or 1-byte store):
//   - any child slot or `term`: replaced by a persisted new child (split, compaction) or
//     cleared (last key removed). Commit = the 8-byte store + persist.
//   - Node256: a new child is stored into its slot.
//   - Node48: a new child is persisted into a slot no index byte references, then the index
//     byte is set and persisted (commit). A slot whose child was cleared stays referenced.
//   - Node4/16 with room: the new key byte and child are written into position `count`
//     (beyond what readers look at) and persisted, then `count` is raised by one (commit: a
//     1-byte store, persisted). Keys are therefore in insertion order, not byte order:
//     iteration sorts the (at most 16) positions.
// Everything else (a full Node4/16/48, a prefix split) builds and persists a new node and
// swaps the parent's 8-byte reference (copy-on-write), so type, the keys below count and the
// prefix are immutable once a node is reachable.
//
// Crash argument: a node is reachable only after its content was persisted; each in-place
// change commits with one store; a crash before it leaves the old state, after it the new.
//
// Node type values are on-media format: never reuse or renumber one.
#ifndef PMINDEX_RADIX_PFTREE_INNER_NODE_H_
#define PMINDEX_RADIX_PFTREE_INNER_NODE_H_

#include <emmintrin.h>

#include <atomic>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <string_view>
#include <utility>
#include <vector>

#include "pm/alloc.h"
#include "pm/persist.h"
#include "pmindex/status.h"

namespace pmindex::pftree {

enum class NodeType : uint8_t {
  kNode4 = 1,
  kNode16 = 2,
  kNode48 = 3,
  kNode256 = 4,
  kLeafArray = 5,
};

inline constexpr uint64_t kLeafTag = 1;
inline bool IsLeafRef(uint64_t ref) { return (ref & kLeafTag) != 0; }
inline uint64_t RefOffset(uint64_t ref) { return ref & ~kLeafTag; }

// Common header, bytes 0..23 of cache line 0.
//   0  lock        8  VersionLock word (generation | version | obsolete | locked), never flushed
//   8  type        1  NodeType
//   9  count       1  Node4/16: number of keys (raised in place); Node48: slots filled at
//                     build; Node256: 0
//  10  prefix_len  2  bytes of compressed prefix (stored in full after the fixed part)
//  12  depth       2  key bytes consumed before the prefix
//  14  reserved    2
//  16  term        8  leaf-array reference for the key ending at depth+prefix_len, or 0
struct InnerHeader {
  uint64_t lock;
  uint8_t type;
  uint8_t count;
  uint16_t prefix_len;
  uint16_t depth;
  uint16_t reserved;
  uint64_t term;
};
static_assert(sizeof(InnerHeader) == 24);
static_assert(offsetof(InnerHeader, type) == 8);
static_assert(offsetof(InnerHeader, term) == 16);

//   0..23 header | 24 keys[4] | 28 pad | 32 children[4] (line 0) | 64 prefix
struct Node4 {
  InnerHeader h;
  uint8_t keys[4];
  uint8_t pad[4];
  uint64_t children[4];
};
static_assert(sizeof(Node4) == 64 && offsetof(Node4, children) == 32);

//   0..23 header | 24 keys[16] | 40 children[16] (lines 0-2) | 168 prefix
struct Node16 {
  InnerHeader h;
  uint8_t keys[16];
  uint64_t children[16];
};
static_assert(sizeof(Node16) == 168 && offsetof(Node16, children) == 40);

//   0..23 header | 24 index[256] (0 = none, else slot+1; lines 0-4) | 280 children[48] | 664
struct Node48 {
  InnerHeader h;
  uint8_t index[256];
  uint64_t children[48];
};
static_assert(sizeof(Node48) == 664 && offsetof(Node48, children) == 280);
static_assert(offsetof(Node48, index) % 8 == 0 && std::endian::native == std::endian::little,
              "ForEachChildFrom reads the index eight bytes per load");

//   0..23 header | 24 children[256] (lines 0-32) | 2072 prefix
struct Node256 {
  InnerHeader h;
  uint64_t children[256];
};
static_assert(sizeof(Node256) == 2072 && offsetof(Node256, children) == 24);

inline uint64_t LoadRef(const uint64_t* slot) {
  return std::atomic_ref<uint64_t>(*const_cast<uint64_t*>(slot)).load(std::memory_order_acquire);
}
// Stores and persists a reference: the commit point of every structural change.
void StoreRef(pm::PersistContext& pc, uint64_t* slot, uint64_t ref);

size_t FixedSize(NodeType type);
inline const char* PrefixOf(const InnerHeader* n) {
  return reinterpret_cast<const char*>(n) + FixedSize(static_cast<NodeType>(n->type));
}

// The slot that holds (or would hold, for Node256 / a cleared Node4/16/48 entry) the child
// for byte b; nullptr if the node has no slot for b.
uint64_t* FindChildSlot(InnerHeader* n, uint8_t b);
// FindChildSlot with a Node256 and a Node48 (a tree's upper levels) inline: descents call it
// at every level.
[[gnu::always_inline]] inline uint64_t* ChildSlot(InnerHeader* n, uint8_t b) {
  if (n->type == static_cast<uint8_t>(NodeType::kNode256))
    return &reinterpret_cast<Node256*>(n)->children[b];
  if (n->type == static_cast<uint8_t>(NodeType::kNode48)) {
    auto* n48 = reinterpret_cast<Node48*>(n);
    const uint8_t idx = std::atomic_ref<uint8_t>(n48->index[b]).load(std::memory_order_acquire);
    return idx != 0 ? &n48->children[idx - 1] : nullptr;
  }
  return FindChildSlot(n, b);
}

// The published key count of a Node4/16 (acquire: its keys and children are visible).
inline int KeyCount(InnerHeader* n) {
  return std::atomic_ref<uint8_t>(n->count).load(std::memory_order_acquire);
}
// Positions [0, count) of a Node4/16's keys in byte order (insertion sort of <= 16 bytes).
inline int SortedPositions(InnerHeader* n, const uint8_t* keys, uint8_t* order) {
  const int count = KeyCount(n);
  for (int i = 0; i < count; ++i) {
    int j = i;
    while (j > 0 && keys[order[j - 1]] > keys[i]) {
      order[j] = order[j - 1];
      --j;
    }
    order[j] = static_cast<uint8_t>(i);
  }
  return count;
}

// Calls fn(byte, slot) for each slot with a byte, in byte order (children may be 0).
template <typename Fn>
void ForEachSlot(InnerHeader* n, Fn&& fn) {
  switch (static_cast<NodeType>(n->type)) {
    case NodeType::kNode4: {
      auto* n4 = reinterpret_cast<Node4*>(n);
      uint8_t order[16];
      const int count = SortedPositions(n, n4->keys, order);
      for (int i = 0; i < count; ++i) fn(n4->keys[order[i]], &n4->children[order[i]]);
      break;
    }
    case NodeType::kNode16: {
      auto* n16 = reinterpret_cast<Node16*>(n);
      uint8_t order[16];
      const int count = SortedPositions(n, n16->keys, order);
      for (int i = 0; i < count; ++i) fn(n16->keys[order[i]], &n16->children[order[i]]);
      break;
    }
    case NodeType::kNode48: {
      auto* n48 = reinterpret_cast<Node48*>(n);
      for (int b = 0; b < 256; ++b) {
        uint8_t idx = std::atomic_ref<uint8_t>(n48->index[b]).load(std::memory_order_acquire);
        if (idx != 0) fn(static_cast<uint8_t>(b), &n48->children[idx - 1]);
      }
      break;
    }
    case NodeType::kNode256: {
      auto* n256 = reinterpret_cast<Node256*>(n);
      for (int b = 0; b < 256; ++b) fn(static_cast<uint8_t>(b), &n256->children[b]);
      break;
    }
    default:
      break;
  }
}

// Eight Node48 index bytes (8-byte aligned) with one acquire load; byte b of the word is
// index[b] (little endian). Writers store single index bytes atomically.
inline uint64_t LoadIndexWord(const uint8_t* p) {
  using Word [[gnu::may_alias]] = uint64_t;
  return __atomic_load_n(reinterpret_cast<const Word*>(p), __ATOMIC_ACQUIRE);
}
// Calls fn(byte, child) for each non-zero child with byte >= first, in byte order, until fn
// returns false; without allocating (scans). A shared child is visited once, with the first
// byte of its run that is >= first. False if fn stopped it.
template <typename Fn>
bool ForEachChildFrom(InnerHeader* n, int first, Fn&& fn) {
  switch (static_cast<NodeType>(n->type)) {
    case NodeType::kNode4:
    case NodeType::kNode16: {
      const bool n4 = n->type == static_cast<uint8_t>(NodeType::kNode4);
      const uint8_t* keys = n4 ? reinterpret_cast<Node4*>(n)->keys : reinterpret_cast<Node16*>(n)->keys;
      uint64_t* children =
          n4 ? reinterpret_cast<Node4*>(n)->children : reinterpret_cast<Node16*>(n)->children;
      uint8_t order[16];
      const int count = SortedPositions(n, keys, order);
      for (int i = 0; i < count; ++i) {
        const int k = order[i];
        if (keys[k] < first) continue;
        uint64_t ref = LoadRef(&children[k]);
        if (ref != 0 && !fn(keys[k], ref)) return false;
      }
      return true;
    }
    case NodeType::kNode48: {
      // Sixteen index bytes per step: a byte is visited if it names a slot and the byte
      // before it names another (runs of a shared leaf repeat a slot, and a run's bytes are
      // consecutive), or if it is `first`. A node of a few runs costs 16 steps, not 256 byte
      // tests.
      auto* n48 = reinterpret_cast<Node48*>(n);
      const __m128i zero = _mm_setzero_si128();
      __m128i last = zero;  // the 16 index bytes before these
      for (int b = first & ~15; b < 256; b += 16) {
        const uint64_t lo = LoadIndexWord(&n48->index[b]), hi = LoadIndexWord(&n48->index[b + 8]);
        const __m128i x = _mm_set_epi64x(static_cast<long long>(hi), static_cast<long long>(lo));
        const __m128i before = _mm_or_si128(_mm_slli_si128(x, 1), _mm_srli_si128(last, 15));
        last = x;
        const unsigned named = ~static_cast<unsigned>(_mm_movemask_epi8(_mm_cmpeq_epi8(x, zero))) & 0xFFFF;
        unsigned visit = named & ~static_cast<unsigned>(_mm_movemask_epi8(_mm_cmpeq_epi8(x, before)));
        if (b < first) {  // the step of `first` (s > 0): nothing below it, `first` if named
          const int s = first - b;
          visit = (visit | (named & (1u << s))) & (0xFFFFu << s);
        }
        for (; visit != 0; visit &= visit - 1) {
          const int i = __builtin_ctz(visit);
          const unsigned slot = static_cast<unsigned>((i < 8 ? lo >> (8 * i) : hi >> (8 * (i - 8))) & 0xFF);
          const uint64_t ref = LoadRef(&n48->children[slot - 1]);
          if (ref != 0 && !fn(static_cast<uint8_t>(b + i), ref)) return false;
        }
      }
      return true;
    }
    case NodeType::kNode256: {
      auto* n256 = reinterpret_cast<Node256*>(n);
      uint64_t prev = 0;
      for (int b = first; b < 256; ++b) {
        uint64_t ref = LoadRef(&n256->children[b]);
        if (ref == 0 || ref == prev) continue;
        prev = ref;
        if (!fn(static_cast<uint8_t>(b), ref)) return false;
      }
      return true;
    }
    default:
      return true;
  }
}

// Adds child `ref` for byte b without copying the node, if its type allows (Node256, a
// Node48 with a free slot, a Node4/16 with room, or an existing slot for b whose child was
// cleared). Caller holds the node's lock and has persisted the child. False: copy-on-write
// needed.
bool AddChildInPlace(pm::PersistContext& pc, InnerHeader* n, uint8_t b, uint64_t ref);

// Builds a new node of the smallest type that holds `children` (sorted by byte, non-zero
// refs; consecutive bytes with the same leaf reference form a shared run, which takes a
// Node48 while there are at most 48 distinct children, else a Node256) and flushes it; the caller fences once, for every block it built, before any
// reference to them is stored. Returns its offset.
Result<uint64_t> BuildInnerNode(pm::PersistContext& pc, pm::Allocator& alloc, char* base, uint16_t depth,
                                std::string_view prefix, uint64_t term,
                                const std::vector<std::pair<uint8_t, uint64_t>>& children,
                                bool flush = true);

// The non-zero children of n, in byte order, one pair per byte (a shared child once per byte
// of its run: what BuildInnerNode takes to copy the node with its runs).
std::vector<std::pair<uint8_t, uint64_t>> LiveChildren(InnerHeader* n);

// The distinct non-zero children of n in byte order, each with its run of bytes.
struct ChildRun {
  uint8_t lo, hi;
  uint64_t ref;
};
std::vector<ChildRun> ChildRuns(InnerHeader* n);

// The run of bytes [*lo, *hi] that reaches the same child as byte b (b alone unless the
// child is shared). Caller holds the node's lock (or the node is not reachable yet).
void RunOf(InnerHeader* n, uint8_t b, uint8_t* lo, uint8_t* hi);

}  // namespace pmindex::pftree

#endif  // PMINDEX_RADIX_PFTREE_INNER_NODE_H_
