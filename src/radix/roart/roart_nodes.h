// ROART's persistent blocks (Ma et al., "ROART: Range-query Optimized Persistent ART",
// FAST 2021): ART inner nodes (Node4/16/48/256) whose entries pack the key byte and the
// child into one 8-byte word (entry compression), and the leaf array that holds up to 64
// leaves of a subtree in one block (leaf compaction). Leaves are radix::PmLeaf blocks.
//
// Child words (radix::ChildTag in the low 3 bits of a 64-byte aligned pool offset):
// kTagLeaf (a PmLeaf), kTagLeafArray, kTagNode4..kTagNode256. An inner node's *entry* is
// the child word with the key byte it serves in bits 63..56 (EntryOf). A leaf array's entry
// is the leaf's offset with the key's 2-byte fingerprint in bits 63..48 (LeafEntryOf).
// Pool offsets are below 2^48. Tag values and node types are on-media format: never reuse
// or renumber one.
//
// What is persistent, and what recovery rebuilds (selective metadata persistence):
//   persistent: every entry word, the end word, the prefix word (depth, prefix length), the
//               node's type and its stored prefix bytes, a leaf array's depth;
//   never flushed, rebuilt by Roart::recover(): `count` of every node and leaf array, a
//               Node48's index bytes (from its entries' key bytes), and the lock words (they
//               carry the pool generation: a crash-held lock is free on reopen).
// A prefix word may be stale after a crash (minimally ordered split, roart.h): its depth is
// smaller than the depth the node is reached at; its position depth + prefix_len is right.
//
// Crash argument: a block is reachable only after its content was persisted; every change
// of a reachable block commits with one persisted 8-byte store (an entry, the end word, a
// leaf's value word, or a prefix word that a stale one is repaired from).
//
// Thread safety: writers hold the lock of a node or leaf array to change it; readers load
// entries, end and prefix words and Node48 index bytes atomically (Load) and never lock.
#ifndef PMINDEX_RADIX_ROART_ROART_NODES_H_
#define PMINDEX_RADIX_ROART_ROART_NODES_H_

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <string_view>
#include <utility>
#include <vector>

#include "pm/alloc.h"
#include "pm/persist.h"
#include "pmindex/status.h"
#include "radix/common/fingerprint.h"
#include "radix/common/node_search.h"
#include "radix/common/pm_leaf.h"
#include "radix/common/prefix_header.h"

namespace pmindex::roart {

using radix::kTagLeaf;
using radix::kTagLeafArray;
using radix::kTagNode16;
using radix::kTagNode256;
using radix::kTagNode4;
using radix::kTagNode48;

inline constexpr unsigned kLeafArraySize = 64;  // leaves per leaf array (the paper's bound)
inline constexpr uint64_t kOffsetLimit = uint64_t{1} << 48;

inline uint64_t Load(const uint64_t* w) {
  return std::atomic_ref<uint64_t>(*const_cast<uint64_t*>(w)).load(std::memory_order_acquire);
}
inline void Store(uint64_t* w, uint64_t v) {
  std::atomic_ref<uint64_t>(*w).store(v, std::memory_order_release);
}

// Inner-node entries: key byte in bits 63..56, child word below.
inline constexpr uint64_t kChildMask = (uint64_t{1} << 56) - 1;
inline constexpr uint64_t EntryOf(uint8_t b, uint64_t child) { return uint64_t{b} << 56 | child; }
inline constexpr uint8_t EntryByte(uint64_t e) { return static_cast<uint8_t>(e >> 56); }
inline constexpr uint64_t EntryChild(uint64_t e) { return e & kChildMask; }
inline constexpr uint64_t TagOf(uint64_t child) { return radix::ChildTagOf(child); }
inline constexpr uint64_t OffsetOf(uint64_t child) { return radix::ChildOffset(child & kChildMask); }
inline constexpr bool IsNodeTag(uint64_t tag) { return tag >= kTagNode4 && tag <= kTagNode256; }

// Leaf-array entries: fingerprint in bits 63..48, the leaf's offset below.
inline constexpr uint64_t LeafEntryOf(uint16_t fp, uint64_t leaf_off) {
  return uint64_t{fp} << 48 | leaf_off;
}
inline constexpr uint16_t LeafEntryFp(uint64_t e) { return static_cast<uint16_t>(e >> 48); }
inline constexpr uint64_t LeafEntryOffset(uint64_t e) { return e & (kOffsetLimit - 1); }

// Common node header, bytes 0..31 of line 0:
//   0  lock         8  pm::VersionLock word (pool generation), never flushed
//   8  prefix       8  radix::PrefixHeader word: depth (key bytes above the node), prefix_len,
//                      first 5 prefix bytes; rewritten with one store by a prefix split
//  16  type         1  child tag of the node (kTagNode4..kTagNode256), immutable
//  17  count        1  live entries of a Node4/16/48 (Node256: 0): never flushed, rebuilt
//                      by recover()
//  18  prefix_base  2  key position of the first stored prefix byte (the depth at build)
//  20  prefix_cap   2  stored prefix bytes (after the type's fixed part), immutable
//  22  reserved     2
//  24  end          8  child word (a leaf) of the key that ends at depth + prefix_len, or 0
// The stored prefix covers key positions [prefix_base, prefix_base + prefix_cap); the node's
// prefix is the part from its depth to its position, so a split shortens it with the one
// store of the prefix word and no byte moves.
struct NodeHeader {
  uint64_t lock;
  uint64_t prefix;
  uint8_t type;
  uint8_t count;
  uint16_t prefix_base;
  uint16_t prefix_cap;
  uint16_t reserved;
  uint64_t end;
};
static_assert(sizeof(NodeHeader) == 32);
static_assert(offsetof(NodeHeader, prefix) == 8 && offsetof(NodeHeader, type) == 16);
static_assert(offsetof(NodeHeader, prefix_base) == 18 && offsetof(NodeHeader, end) == 24);

//   0..31 header | 32 entries[4] (line 0) | 64 prefix bytes
struct Node4 {
  NodeHeader h;
  uint64_t e[4];
};
static_assert(sizeof(Node4) == 64 && offsetof(Node4, e) == 32);

//   0..31 header | 32 entries[16] (lines 0-2) | 160 prefix bytes
struct Node16 {
  NodeHeader h;
  uint64_t e[16];
};
static_assert(sizeof(Node16) == 160 && offsetof(Node16, e) == 32);

//   0..31 header | 32 index[256] (slot + 1, 0 = none; never flushed) | 288 entries[48] | 672
struct Node48 {
  NodeHeader h;
  uint8_t index[256];
  uint64_t e[48];
};
static_assert(sizeof(Node48) == 672 && offsetof(Node48, e) == 288);

//   0..31 header | 32 entries[256] (entry b serves byte b, and says so) | 2080 prefix bytes
struct Node256 {
  NodeHeader h;
  uint64_t e[256];
};
static_assert(sizeof(Node256) == 2080 && offsetof(Node256, e) == 32);

// Leaf array of `capacity` entries (4, 8, 16, 32 or 64): 64 + 8 * capacity bytes (a block of
// 128, 128, 192, 320 or 640 bytes):
//   line 0:  0 lock      8  pm::VersionLock word (pool generation), never flushed
//            8 type      1  kTagLeafArray, immutable
//            9 count     1  live entries: never flushed, rebuilt by recover()
//           10 depth     2  every key shares key[0..depth) with the path, immutable
//           12 capacity  2  entries, immutable
//           14 reserved 50
//   64..:    entries[capacity], unsorted: LeafEntryOf(fingerprint, leaf offset), 0 = free.
// Insert: the leaf is persisted, then its entry is stored into a free slot and persisted
// (the commit). Remove: the entry is cleared and persisted. Update: the leaf's 8-byte value
// word in place, or a new leaf persisted and the entry swapped. A full array of less than 64
// is copied into one of twice the capacity (growth); a full one of 64 splits. Never empty
// while reachable.
struct LeafArray {
  uint64_t lock;
  uint8_t type;
  uint8_t count;
  uint16_t depth;
  uint16_t capacity;
  uint8_t reserved[50];
  uint64_t e[kLeafArraySize];  // the first `capacity` exist
};
static_assert(sizeof(LeafArray) == 576 && offsetof(LeafArray, e) == 64);
static_assert(offsetof(LeafArray, capacity) == 12);
inline constexpr unsigned kMinLeafArray = 4;
inline constexpr size_t LeafArrayBytes(unsigned capacity) { return 64 + 8 * size_t{capacity}; }
// The capacity a new leaf array of n entries gets: the smallest that holds them.
inline constexpr unsigned LeafArrayCapacityFor(size_t n) {
  unsigned c = kMinLeafArray;
  while (c < n) c *= 2;
  return c;
}
static_assert(offsetof(LeafArray, depth) == 10);

size_t FixedSize(uint64_t tag);
// The prefix word of a node at `depth` whose prefix is `prefix`.
inline uint64_t PrefixWord(uint32_t depth, std::string_view prefix) {
  radix::PrefixHeader h;
  h.depth = depth;
  h.prefix_len = static_cast<uint32_t>(prefix.size());
  for (unsigned i = 0; i < h.stored(); ++i) h.prefix[i] = static_cast<uint8_t>(prefix[i]);
  return h.Encode();
}
inline const uint8_t* StoredPrefix(const NodeHeader* n) {
  return reinterpret_cast<const uint8_t*>(n) + FixedSize(n->type);
}
// The key position the node's children are chosen at (right whether or not the prefix word
// is stale).
inline uint32_t PosOf(const NodeHeader* n) {
  return radix::PrefixHeader::PosOf(Load(&n->prefix));
}
// The prefix of a node reached at `depth`: key positions [depth, PosOf(n)) from the stored
// bytes (stale prefix words included). Requires prefix_base <= depth <= PosOf(n).
inline std::string_view PrefixAt(const NodeHeader* n, uint32_t depth) {
  return {reinterpret_cast<const char*>(StoredPrefix(n)) + (depth - n->prefix_base),
          PosOf(n) - depth};
}

// The child word serving byte b (0 if none), as a lock-free reader reads it.
uint64_t FindChild(const NodeHeader* n, uint8_t b);
// The slot whose entry serves byte b, or nullptr. Caller holds the node's lock.
uint64_t* SlotOf(NodeHeader* n, uint8_t b);
// Live entries (Node256: up to 256). Caller holds the lock (or recovery runs alone).
unsigned LiveCount(const NodeHeader* n);
// The live entries serving bytes >= from, in byte order, into out (the first `limit` of
// them, all if there are fewer; at most 256); their count. A reader's view: each entry is
// loaded once.
size_t EntriesFrom(const NodeHeader* n, unsigned from, uint64_t* out, size_t limit);
// Calls fn(byte, child) for each live entry, in byte order.
template <typename Fn>
void ForEachChild(const NodeHeader* n, Fn&& fn) {
  uint64_t entries[256];
  const size_t k = EntriesFrom(n, 0, entries, 256);
  for (size_t i = 0; i < k; ++i) fn(EntryByte(entries[i]), EntryChild(entries[i]));
}

// Adds child for byte b in place if the node has room (none serves b). Caller holds the
// lock and has persisted the child. Commit: the entry's persisted store (Node48: its index
// byte after it, never flushed). False if the node is full.
bool AddChildInPlace(pm::PersistContext& pc, NodeHeader* n, uint8_t b, uint64_t child);
// Replaces the child of the entry `slot` (for byte b) with one persisted store.
void ReplaceEntry(pm::PersistContext& pc, uint64_t* slot, uint8_t b, uint64_t child);
// Clears byte b's entry (persisted) and its Node48 index byte. Caller holds the lock.
void RemoveChild(pm::PersistContext& pc, NodeHeader* n, uint8_t b);

// A node of the smallest type that holds `children` (byte order, distinct bytes) at depth
// `depth` with prefix `prefix` (key positions [depth, depth + prefix.size())) and end word
// `end`, flushed, not fenced (the caller fences once for all it built). Its child word.
Result<uint64_t> BuildNode(pm::PersistContext& pc, pm::Allocator& alloc, char* base,
                           uint32_t depth, std::string_view prefix, uint64_t end,
                           const std::vector<std::pair<uint8_t, uint64_t>>& children);
// A leaf array at `depth` holding `entries` (LeafEntryOf words) with room for `capacity`
// (0: the least that holds them), flushed, not fenced.
Result<uint64_t> BuildLeafArray(pm::PersistContext& pc, pm::Allocator& alloc, char* base,
                                uint32_t depth, const std::vector<uint64_t>& entries,
                                unsigned capacity = 0);


}  // namespace pmindex::roart

#endif  // PMINDEX_RADIX_ROART_ROART_NODES_H_
