// CCEH's persistent layouts: the root words, the directory and the segments of 64-byte
// buckets, and the hash arithmetic that places a key (the MSBs of its hash pick the directory
// entry, the LSBs its home bucket in the segment).
//
// The hash is pm::Mix64 of the integer key, a bijection: two keys never share a hash, so a
// segment split always separates a full probing unit eventually.
#ifndef PMINDEX_HASH_CCEH_LAYOUT_H_
#define PMINDEX_HASH_CCEH_LAYOUT_H_

#include <cstddef>
#include <cstdint>

#include "pm/mix64.h"
#include "pmindex/pool.h"

namespace pmindex::hash::cceh {

inline constexpr IndexKind kCcehKind = IndexKind{30};  // never reuse (doc/format.md)
inline constexpr uint64_t kRootMagic = 0x31686563632d6d70ull;       // "pm-cceh1"
inline constexpr uint64_t kDirectoryMagic = 0x3172696468656363ull;  // "ccehdir1"
inline constexpr uint64_t kSegmentMagic = 0x3167657368656363ull;    // "ccehseg1"

// The index's words in the pool's root area. `dir` is switched with one 8-byte store after
// the directory it names was persisted whole (the commit point of a doubling).
//
//   offset 0   magic          kRootMagic once the root words are durable
//   offset 8   kind           30
//   offset 16  dir            pool offset of the directory; 0 = no table yet (empty index)
//   offset 24  segment_bytes  bytes of one segment block (header line + buckets)
//   offset 32  probe          buckets of one probing unit
struct Root {
  uint64_t magic;
  uint64_t kind;
  uint64_t dir;
  uint64_t segment_bytes;
  uint64_t probe;
};
static_assert(sizeof(Root) == 40 && offsetof(Root, dir) == 16 && offsetof(Root, probe) == 32);
static_assert(sizeof(Root) <= kRootAreaSize);

// A bucket: one cache line. A slot holds a pair when its bit in `valid` is set: the marker is
// a per-bucket validity bitmap, not a sentinel key, so every 8-byte key is storable. A valid
// slot whose key's hash does not match its segment's pattern is stale (left behind by a
// split: lazy deletion) and counts as free.
//
//   offset 0   valid     bits 0..2: slot i holds a pair; other bits zero
//   offset 8   reserved  zero
//   offset 16  slot[0]   key, value
//   offset 32  slot[1]   key, value
//   offset 48  slot[2]   key, value
struct Slot {
  uint64_t key;
  uint64_t value;
};
struct alignas(64) Bucket {
  static constexpr int kSlots = 3;
  uint64_t valid;
  uint64_t reserved;
  Slot slot[kSlots];
};
static_assert(sizeof(Bucket) == 64 && alignof(Bucket) == 64);
static_assert(offsetof(Bucket, slot) == 16 && offsetof(Bucket, slot[2]) == 48);
inline constexpr uint64_t kValidMask = (uint64_t{1} << Bucket::kSlots) - 1;

// A segment's shape word: its local depth and pattern in one 8-byte word, so a torn write can
// never pair one's new value with the other's old.
//
//   bits 7..0   local depth d (0..kMaxDepth)
//   bits 63..8  pattern: the d most significant bits of every hash the segment holds
inline constexpr uint32_t kMaxDepth = 48;
inline constexpr uint64_t MakeShape(uint32_t depth, uint64_t pattern) {
  return uint64_t{depth} | (pattern << 8);
}
inline constexpr uint32_t ShapeDepth(uint64_t shape) { return static_cast<uint32_t>(shape & 0xff); }
inline constexpr uint64_t ShapePattern(uint64_t shape) { return shape >> 8; }
// The top `bits` bits of h (0 for bits == 0).
inline constexpr uint64_t Prefix(uint64_t h, uint32_t bits) { return bits == 0 ? 0 : h >> (64 - bits); }
// True if a key of hash h belongs to a segment of this shape.
inline constexpr bool Belongs(uint64_t h, uint64_t shape) {
  return Prefix(h, ShapeDepth(shape)) == ShapePattern(shape);
}

// A segment: a header line, then `buckets` buckets (segment_bytes / 64 - 1 of them).
//
//   offset 0   lock   pm::VersionLock word (pool generation; never flushed on purpose, but
//                     it shares the line with `shape`, so it reaches media locked)
//   offset 8   shape  local depth and pattern (above)
//   offset 16  magic  kSegmentMagic
//   offset 24..63     zero
//   offset 64  bucket[0], bucket[1], ...
struct alignas(64) SegmentHeader {
  uint64_t lock;
  uint64_t shape;
  uint64_t magic;
  uint64_t reserved[5];
};
static_assert(sizeof(SegmentHeader) == 64 && offsetof(SegmentHeader, shape) == 8);

struct Segment {
  SegmentHeader header;
  Bucket bucket[1];  // really `buckets` of them
};
static_assert(offsetof(Segment, bucket) == 64);

// The directory: a header line, then 2^depth entries, each the pool offset of a segment. A
// segment of local depth d and pattern p fills the 2^(depth-d) entries from p << (depth-d).
//
//   offset 0   magic  kDirectoryMagic
//   offset 8   depth  global depth G
//   offset 16..63     zero
//   offset 64  entry[0 .. 2^G)
struct Directory {
  uint64_t magic;
  uint64_t depth;
  uint64_t reserved[6];
  uint64_t entry[1];  // really 2^depth of them
};
static_assert(offsetof(Directory, entry) == 64);
inline constexpr uint64_t DirectoryBytes(uint32_t depth) { return 64 + (uint64_t{8} << depth); }

inline uint64_t Hash(uint64_t key) { return pm::Mix64(key); }
// The home bucket of hash h among n buckets: its low 32 bits scaled to [0, n).
inline uint32_t HomeBucket(uint64_t h, uint32_t n) {
  return static_cast<uint32_t>(((h & 0xFFFFFFFFull) * n) >> 32);
}

}  // namespace pmindex::hash::cceh

#endif  // PMINDEX_HASH_CCEH_LAYOUT_H_
