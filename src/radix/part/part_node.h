// What every P-ART node shares: its first three words, its tags and the byte-in-word helpers
// the node types use to change one key byte with one atomic 8-byte store.
//
//   offset  size  field    (every node type, line 0)
//   0       8     lock     pm::VersionLock word in the pool generation; never flushed (a
//                          flush of its line may carry it to media: a stale generation
//                          reads as free after reopening)
//   8       8     header   PrefixHeader word (depth, prefix length, first prefix units)
//   16      8     end      leaf of the key that ends at the node's position, or 0
//
// Child words (radix/common/node_search.h) are tagged pool offsets; in a P-ART pool the tags
// 2..5 name P-ART's Node4, Node16, Node48 and Node256 (on-media format: never reuse them).
//
// Thread safety: node words that a lock-free reader can meet are written with one atomic
// store (StoreWord) and read with atomic loads (LoadWord); writers hold the node's lock.
#ifndef PMINDEX_RADIX_PART_PART_NODE_H_
#define PMINDEX_RADIX_PART_PART_NODE_H_

#include <cstddef>
#include <cstdint>

#include "radix/common/node_search.h"
#include "radix/common/prefix_header.h"

namespace pmindex::radix::part {

struct NodeBase {
  uint64_t lock;
  uint64_t header;
  uint64_t end;
};
static_assert(sizeof(NodeBase) == 24);
static_assert(offsetof(NodeBase, header) == 8);

// The mutant names of the node types (src/pm/mutant.h).
inline constexpr char kCountBeforeEntry[] = "part.count_before_entry";

// Byte i (0..7) of a little-endian word, and the word with byte i replaced.
inline uint8_t ByteOf(uint64_t w, unsigned i) { return static_cast<uint8_t>(w >> (8 * i)); }
inline uint64_t WithByte(uint64_t w, unsigned i, uint8_t b) {
  return (w & ~(uint64_t{0xFF} << (8 * i))) | (uint64_t{b} << (8 * i));
}

// Sorts n (key, child) pairs by key (n <= 16: insertion sort).
inline void SortPairs(uint8_t* keys, uint64_t* kids, unsigned n) {
  for (unsigned i = 1; i < n; ++i) {
    const uint8_t k = keys[i];
    const uint64_t c = kids[i];
    unsigned j = i;
    for (; j > 0 && keys[j - 1] > k; --j) {
      keys[j] = keys[j - 1];
      kids[j] = kids[j - 1];
    }
    keys[j] = k;
    kids[j] = c;
  }
}

}  // namespace pmindex::radix::part

#endif  // PMINDEX_RADIX_PART_PART_NODE_H_
