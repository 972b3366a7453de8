// Dash's persistent layouts (Lu, Hao, Wang, Lo, "Dash: Scalable Hashing on Persistent
// Memory", VLDB 2020): the 256-byte bucket, the segment, its header, the directory and the
// root words, and the hash bits every path derives from a key.
//
// A segment is one block. Layout 1 (the default; DashGeometry::stagger = 0): the header, then
// `normal` buckets, then `stash` buckets, 256 bytes each, so every bucket is one XPLine.
// Layout 2 (index parameter layout=2; stagger = 4):
//
//   off 0             SegmentHeader (256 B)
//   off 256           pad: 64 x k bytes, k = (segment offset >> log2(block size)) mod 4
//   off 256 + 64k     `normal` buckets, then `stash` buckets, 256 B each (64-byte aligned)
//   up to 256 x (1 + normal + stash) + 192 bytes
//
// The pad staggers segments across cache sets: the allocator hands out power-of-two blocks
// aligned to their size, so without it every bucket's first line (its metadata) falls at a
// line index = 0 mod 4 and all buckets of all segments share a quarter of the cache's sets;
// with it consecutive segments use the four residues. k is derived from the segment's pool
// offset (a pure function: no reader reads the header for it). Measured (doc/dash.md): no
// gain in CPU time on the machine at hand, and 27% more media writes per insert (a bucket
// then straddles two XPLines), so it is not the default.
// Two geometries (DashGeometry):
//   large  60 normal + 3 stash: (1 + 60 + 3) x 256 = 16384 bytes, the 16 KiB size class
//          exactly (the paper's 64 + 2..4 plus a header would take a 20 KiB block); layout 2:
//          59 + 3, 256 + 192 + 62 x 256 = 16320 bytes;
//   small  4 normal + 2 stash, 4 slots of each bucket used (1792 bytes; layout 2: 1984):
//          index parameter geometry=small (the crash campaign's,
//          IndexRegistration::campaign_params, and the tests'), so that a few dozen keys
//          split segments and double the directory.
#ifndef PMINDEX_HASH_DASH_LAYOUT_H_
#define PMINDEX_HASH_DASH_LAYOUT_H_

#include <cstddef>
#include <cstdint>

#include "pm/mix64.h"
#include "pm/racy.h"
#include "pmindex/pool.h"

namespace pmindex::hash::dash {

inline constexpr size_t kSlots = 14;        // pairs per bucket
inline constexpr size_t kOverflowFps = 4;   // stash fingerprints per bucket
inline constexpr size_t kBucketBytes = 256;
inline constexpr uint32_t kMaxStash = 4;    // 2 bits of stash index per overflow entry
inline constexpr uint32_t kMaxNormal = 192; // overflow counters in the header

// The bitmap word of a bucket (Bucket::bitmap).
inline constexpr uint32_t kAllocMask = (1u << kSlots) - 1;  // bit i: slot i holds a pair
inline constexpr int kMemberShift = 14;  // bit 14+i: slot i's key is homed at the bucket before
inline constexpr int kOverflowShift = 28;  // bit 28+e: overflow entry e is valid
// Bucket::ovf_member bit 7: the header's ovf_count of this bucket may be non-zero (set and
// persisted with every increment, before the stash key's commit; cleared when the count
// returns to 0 or the segment's overflow metadata is rebuilt). A reader tests it in the line
// it has already read instead of reading the header.
inline constexpr uint8_t kOvfCounted = 1u << 7;
// Bucket::ovf_member bits 4-6 (kOvfHomedMask): the fingerprint classes (HomedBit) of the keys
// homed at this bucket that have an overflow entry (here or, as members, in the next bucket)
// or a count. Set and persisted with the overflow entry, before the stash key's commit;
// recomputed from the entries left when one is removed; cleared when the segment's overflow
// metadata is rebuilt. A lookup that missed both buckets probes the stash only where its
// class's bit (or kOvfCounted) is set: one test of the home bucket's line, true for about one
// lookup in ten at a full table, where "any overflow entry in either bucket" was true for
// about half of them and its branch was mispredicted as often.
inline constexpr uint8_t kOvfHomedMask = 0x70;
inline constexpr uint8_t HomedBit(uint8_t fp) {
  return static_cast<uint8_t>(0x10u << ((fp * 3u) >> 8));  // class 0, 1 or 2 of 256 values
}

struct Slot {
  uint64_t key;    // the integer key (IntKey decoded)
  uint64_t value;  // 8 bytes, native order
};

// One bucket, 256 bytes, 64-byte aligned (its first cache line holds every metadata byte and
// slots 0-1; one XPLine in layout 1, straddling two in layout 2 with a pad of 1-3 lines).
//
//   off  0  lock        pm::VersionLock word (pool generation); never flushed for itself
//   off  8  bitmap      bits 0-13 alloc, 14-27 member (slot's key homed at the previous
//                       bucket: a "probing" item), 28-31 overflow entry valid
//   off 12  ovf_member  bit e (0-3): overflow entry e belongs to a key homed at the previous
//                       bucket; bits 4-6 (kOvfHomedMask): fingerprint classes of stash
//                       keys homed here;
//                       bit 7 (kOvfCounted): ovf_count of this bucket may be non-zero
//   off 13  ovf_stash   2 bits per overflow entry: the stash bucket that holds its key
//   off 14  fp[14]      1-byte fingerprints of the slots' keys (valid where alloc is set)
//   off 28  ovf_fp[4]   fingerprints of keys stored in the stash (valid where bit 28+e)
//   off 32  slot[14]    16-byte pairs; slots 0-1 share line 0 with the metadata
//
// Bytes 8-15 (bitmap, ovf_member, ovf_stash, fp[0..1]) are one 8-byte word: an insert's
// commit (alloc bit, member bit) and an overflow entry's valid bit are single-word stores.
// Stash buckets use only lock, the alloc bits, fp and slot.
struct alignas(64) Bucket {
  uint64_t lock;
  uint32_t bitmap;
  uint8_t ovf_member;
  uint8_t ovf_stash;
  uint8_t fp[kSlots];
  uint8_t ovf_fp[kOverflowFps];
  Slot slot[kSlots];
};
static_assert(sizeof(Bucket) == kBucketBytes && alignof(Bucket) == 64);
static_assert(offsetof(Bucket, bitmap) == 8 && offsetof(Bucket, ovf_member) == 12 &&
              offsetof(Bucket, ovf_stash) == 13 && offsetof(Bucket, fp) == 14 &&
              offsetof(Bucket, ovf_fp) == 28 && offsetof(Bucket, slot) == 32);

// The header of a segment, in the room of one bucket at the segment's start.
//
//   off  0  move_lock      pm::VersionLock word: one displacement at a time per segment
//   off  8  depth_pattern  bits 63-48 local depth d, bits 47-0 pattern: the top d bits of
//                          the hash of every key the segment holds; one word, so a split
//                          changes both with one 8-byte store
//   off 16  move_record    the displacement under way (or last done): kMoveValid | from
//                          bucket << 24 | from slot << 16 | to bucket << 8 | to slot
//   off 24  reserved[5]
//   off 64  ovf_count[192] per normal bucket: its stash keys that found no overflow entry
//                          (lookups then search every stash bucket)
struct alignas(kBucketBytes) SegmentHeader {
  uint64_t move_lock;
  uint64_t depth_pattern;
  uint64_t move_record;
  uint64_t reserved[5];
  uint8_t ovf_count[kMaxNormal];
};
static_assert(sizeof(SegmentHeader) == kBucketBytes);
static_assert(offsetof(SegmentHeader, depth_pattern) == 8 &&
              offsetof(SegmentHeader, move_record) == 16 &&
              offsetof(SegmentHeader, ovf_count) == 64);

inline constexpr uint64_t kMoveValid = 1ull << 63;
inline constexpr uint64_t kPatternMask = (1ull << 48) - 1;
inline constexpr uint64_t DepthPattern(uint64_t depth, uint64_t pattern) {
  return (depth << 48) | pattern;
}
inline constexpr uint32_t DepthOf(uint64_t dp) { return static_cast<uint32_t>(dp >> 48); }
inline constexpr uint64_t PatternOf(uint64_t dp) { return dp & kPatternMask; }

// The directory: one block, 64 + 8 x 2^depth bytes.
//
//   off  0  depth     global depth G
//   off  8  reserved[7]
//   off 64  seg[2^G]  pool offsets of segments; entry i serves the hashes whose top G bits
//                     are i; a segment of local depth d fills 2^(G-d) consecutive entries
struct Directory {
  uint64_t depth;
  uint64_t reserved[7];
  uint64_t seg[1];  // 2^depth entries
};
static_assert(offsetof(Directory, seg) == 64);
inline constexpr size_t DirectoryBytes(uint32_t depth) { return 64 + (size_t{8} << depth); }

// The root words in the pool's root area.
//
//   off  0  magic      kDashMagic once initialized (the commit of initialization)
//   off  8  kind       33
//   off 16  directory  pool offset of the directory, 0 = empty table (made at first insert)
//   off 24  geometry   normal buckets | stash buckets << 16 | slots used << 32 |
//                      stagger << 48 (0: layout 1, the default; 4: layout 2)
//   off 32  keys       kIntKeys (0: 8-byte integer keys inline, the default; pools made
//                      before the bytes mode existed hold 0 here) or kByteKeys (slot.key is
//                      the pool offset of a KeyRecord)
//   off 40  flags      bit 0 (kHomedFlags): every bucket's kOvfHomedMask bits are maintained (pools
//                      made before the flag existed hold 0: recovery sets the flags once)
struct DashRoot {
  uint64_t magic;
  uint64_t kind;
  uint64_t directory;
  uint64_t geometry;
  uint64_t keys;
  uint64_t flags;
};
static_assert(sizeof(DashRoot) == 48 && offsetof(DashRoot, directory) == 16 &&
              offsetof(DashRoot, keys) == 32 && offsetof(DashRoot, flags) == 40);
inline constexpr uint64_t kHomedFlags = 1;
inline constexpr uint64_t kIntKeys = 0;
inline constexpr uint64_t kByteKeys = 1;

// The variable-length-key mode (index parameter keys=bytes): a key's bytes live in a
// KeyRecord, one allocator block of its own, and the slot's key word is the record's pool
// offset. Written and persisted before the slot that names it is committed; never changed
// after; retired through the pool's epoch when the slot that names it is cleared.
//
//   off 0  length  1..kMaxKeyBytes
//   off 8  bytes   `length` bytes of the key
inline constexpr size_t kMaxKeyBytes = 1024;
struct KeyRecord {
  uint64_t length;
  char bytes[8];  // `length` bytes: the block holds 8 + length
};
static_assert(offsetof(KeyRecord, length) == 0 && offsetof(KeyRecord, bytes) == 8);
inline constexpr size_t KeyRecordBytes(size_t length) { return 8 + length; }
static_assert(sizeof(DashRoot) <= kRootAreaSize);

inline constexpr uint64_t kDashMagic = 0x3168736168736164ull;  // "dashhsh1"
inline constexpr IndexKind kDashKind = IndexKind{33};            // never reuse (doc/format.md)

struct DashGeometry {
  uint32_t normal;   // normal buckets per segment
  uint32_t stash;    // stash buckets per segment
  uint32_t slots;    // slots used per bucket (<= kSlots)
  uint32_t stagger;  // pad steps of 64 bytes before the buckets: 4 (layout 2) or 0 (layout 1)
  constexpr uint64_t Encode() const {
    return uint64_t{normal} | (uint64_t{stash} << 16) | (uint64_t{slots} << 32) |
           (uint64_t{stagger} << 48);
  }
  static constexpr DashGeometry Decode(uint64_t g) {
    return {static_cast<uint32_t>(g & 0xFFFF), static_cast<uint32_t>((g >> 16) & 0xFFFF),
            static_cast<uint32_t>((g >> 32) & 0xFFFF), static_cast<uint32_t>(g >> 48)};
  }
  constexpr bool Valid() const {
    return normal >= 4 && normal <= kMaxNormal && stash >= 1 && stash <= kMaxStash &&
           slots >= 1 && slots <= kSlots && (stagger == 0 || stagger == 4);
  }
  // The block to allocate: header, the largest pad, the buckets.
  constexpr size_t SegmentBytes() const {
    return kBucketBytes * (1 + normal + stash) + (stagger == 0 ? 0 : 64 * (stagger - 1));
  }
};
inline constexpr DashGeometry kLargeGeometry{60, 3, 14, 0};
inline constexpr DashGeometry kSmallGeometry{4, 2, 4, 0};
// Layout 2's (index parameter layout=2: segments staggered across cache sets).
inline constexpr DashGeometry kLargeGeometryV2{59, 3, 14, 4};
inline constexpr DashGeometry kSmallGeometryV2{4, 2, 4, 4};
static_assert(kLargeGeometry.SegmentBytes() == 16384 && kLargeGeometryV2.SegmentBytes() == 16320);
static_assert(kSmallGeometry.SegmentBytes() == 1792 && kSmallGeometryV2.SegmentBytes() == 1984);
// Layout 1 pools are the pools made before layout 2 existed: nothing above bit 47.
static_assert(kLargeGeometry.Encode() == 0x0000000E0003003Cull);
// Index parameters (Options::index_params): the default, and the small geometry's.
inline constexpr const char* kLargeParams = "dash geometry=large (60+3 buckets of 256 B, 14 slots)";
inline constexpr const char* kSmallParams = "dash geometry=small (4+2 buckets, 4 slots used)";

// What a key's hash decides: directory entry (top bits), home bucket (low 32 bits, by
// multiply-shift), fingerprint (bits 32-39), and at a split of depth d, bit 63-d.
struct KeyHash {
  uint64_t h;
  explicit KeyHash(uint64_t key) : h(pm::Mix64(key)) {}
  // A byte key's (keys=bytes): every field below derives from this hash as from Mix64's.
  static KeyHash OfBytes(const void* p, size_t n) {
    KeyHash kh(0);
    kh.h = pm::Mix64Bytes(p, n);
    return kh;
  }
  // The top global_depth bits of h (0 at depth 0), without a branch: (h >> 1) has a clear
  // top bit, so shifting it by 63 - depth leaves nothing at depth 0.
  uint64_t DirIndex(uint32_t global_depth) const { return (h >> 1) >> (63 - global_depth); }
  uint32_t Home(uint32_t normal) const {
    return static_cast<uint32_t>(((h & 0xFFFFFFFFull) * normal) >> 32);
  }
  uint8_t Fp() const { return static_cast<uint8_t>(h >> 32); }
  // The top `depth` bits: the pattern of the segment that holds the key.
  uint64_t Pattern(uint32_t depth) const { return depth == 0 ? 0 : h >> (64 - depth); }
};

// Racy accesses to bucket, header and directory words are relaxed atomics (TSan-clean; plain
// loads and stores on x86); the orderings are VersionLock's (pm/seqlock.h).
using pm::Load;  // pm/racy.h
using pm::LoadAcquire;
using pm::Store;
using pm::StoreRelease;

}  // namespace pmindex::hash::dash

#endif  // PMINDEX_HASH_DASH_LAYOUT_H_
