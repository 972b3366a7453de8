// P-CLHT's persistent layouts: the 64-byte bucket (one cache line, CLHT's unit of everything)
// and the index's words in the pool's root area, and the lock-free read of one slot.
//
// Empty slots: CLHT marks an empty slot with key 0. pmindex must store every 8-byte key, so
// key 0 does not live in the buckets at all: it has a slot of its own in the root area
// (PclhtRoot::zero_*), whose `zero_present` word (1 = present) plays the role of the key
// word. Every other key keeps CLHT's rule, so the commit of an insert stays one 8-byte store
// of the key into a slot whose key word is 0, the commit of a remove one store of 0, and a
// reader tells a stored key from an empty slot by one load. A validity bitmap would need
// bits the line does not have (the 8-byte lock word, 3 keys, 3 values and the next offset
// fill it) or a second commit store; a biased key (k + 1) only moves the unstorable key.
#ifndef PMINDEX_HASH_PCLHT_BUCKET_H_
#define PMINDEX_HASH_PCLHT_BUCKET_H_

#include <cstddef>
#include <cstdint>

#include "pm/racy.h"
#include "pmindex/pool.h"

namespace pmindex::hash::pclht {

inline constexpr int kSlots = 3;  // CLHT's ENTRIES_PER_BUCKET

// One bucket, one cache line, 64-byte aligned (a table is an array of them; an overflow
// bucket is a 64-byte block of its own):
//
//   offset  0  lock      pm::VersionLock word, pool generation. Only the lock of a chain's
//                        first bucket (the one in the table) is used: it covers the chain.
//                        Never flushed on purpose; a crash-held value is free on reopen.
//   offset  8  key[3]    0 = empty slot; the commit word of insert and remove
//   offset 32  value[3]  the value of key[i]; an update's commit word
//   offset 56  next      pool offset of the next (overflow) bucket of the chain, 0 = end
//
// The bucket_bytes=256 variant (pclht.h) makes a table entry a group of 4 buckets, 256 bytes,
// one XPLine, allocated and persisted with the table:
//
//   +0    bucket 0  lock (the chain's), key[3], value[3], next = +64
//   +64   bucket 1  lock unused (0),    key[3], value[3], next = +128
//   +128  bucket 2  lock unused (0),    key[3], value[3], next = +192
//   +192  bucket 3  lock unused (0),    key[3], value[3], next = overflow bucket or 0
struct alignas(64) Bucket {
  uint64_t lock;
  uint64_t key[kSlots];
  uint64_t value[kSlots];
  uint64_t next;
};
static_assert(sizeof(Bucket) == 64 && alignof(Bucket) == 64);
static_assert(offsetof(Bucket, key) == 8 && offsetof(Bucket, value) == 32 &&
              offsetof(Bucket, next) == 56);

// The index's words in the pool's root area (one cache line of the header page):
//
//   offset  0  magic         kPclhtMagic once initialized (the commit of creation)
//   offset  8  kind          32
//   offset 16  table         pool offset of the current bucket array | log2(its buckets) in
//                            the low 6 bits (offsets are 64-byte aligned); 0 = no table yet.
//                            One 8-byte store switches a resize (its commit).
//   offset 24  zero_lock     pm::VersionLock word of key 0's slot (pool generation)
//   offset 32  zero_present  1 while key 0 is present: its commit word (0 = absent)
//   offset 40  zero_value    key 0's value
struct PclhtRoot {
  uint64_t magic;
  uint64_t kind;
  uint64_t table;
  uint64_t zero_lock;
  uint64_t zero_present;
  uint64_t zero_value;
};
static_assert(sizeof(PclhtRoot) == 48 && offsetof(PclhtRoot, table) == 16 &&
              offsetof(PclhtRoot, zero_present) == 32);
static_assert(sizeof(PclhtRoot) <= kRootAreaSize);
inline constexpr uint64_t kPclhtMagic = 0x3174686c63702d70ull;  // "p-pclht1"
inline constexpr IndexKind kPclhtKind = IndexKind{32};         // never reuse (doc/format.md)

inline constexpr uint64_t kLog2Mask = 63;
inline uint64_t TableOffset(uint64_t word) { return word & ~kLog2Mask; }
inline uint32_t TableLog2(uint64_t word) { return static_cast<uint32_t>(word & kLog2Mask); }
inline uint64_t TableWord(uint64_t offset, uint32_t log2) { return offset | log2; }

using pm::LoadAcquire;  // pm/racy.h
using pm::StoreRelease;

enum class SlotRead : uint8_t { kOther, kHit, kTorn };

// CLHT's lock-free read of one slot for key `want`: the value, then the key, then the value
// again. kHit: the slot held `want` with *value between the two value loads; kTorn: it held
// `want` but the value changed under the read (an update, or the slot was emptied and
// refilled): read again. (CLHT returns "absent" there, wrong for a present key.)
inline SlotRead ReadSlot(const uint64_t& key, const uint64_t& val, uint64_t want,
                         uint64_t* value) {
  const uint64_t v = LoadAcquire(val);
  if (LoadAcquire(key) != want) return SlotRead::kOther;
  if (LoadAcquire(val) != v) return SlotRead::kTorn;
  *value = v;
  return SlotRead::kHit;
}

}  // namespace pmindex::hash::pclht

#endif  // PMINDEX_HASH_PCLHT_BUCKET_H_
