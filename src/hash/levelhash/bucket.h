// Level hashing's persistent layouts: the bucket (four slots and their token byte) and the
// table descriptor in the pool's root area, with the two hash functions that place a key.
// The operations and their crash arguments are in levelhash.h.
#ifndef PMINDEX_HASH_LEVELHASH_BUCKET_H_
#define PMINDEX_HASH_LEVELHASH_BUCKET_H_

#include <cstddef>
#include <cstdint>

#include "pm/mix64.h"
#include "pmindex/pool.h"

namespace pmindex::hash::levelhash {

inline constexpr IndexKind kLevelHashKind = IndexKind{31};  // never reuse (doc/format.md)
inline constexpr uint64_t kLevelHashMagic = 0x31687361686c766cull;  // "lvlhash1"
inline constexpr int kSlots = 4;

// One key-value item, 16 bytes; never straddles a cache line (slots start at 16-byte
// offsets).
struct Slot {
  uint64_t key;    // the key as a number (IntKey decoded); every value is a valid key
  uint64_t value;  // the 8-byte value, native order
};
static_assert(sizeof(Slot) == 16);

// A bucket, 80 bytes, 16-byte aligned; levels are arrays of buckets, so a bucket spans two
// cache lines (the paper's 128-byte bucket held 4 items of 31 bytes; with 16-byte items the
// token and lock need 16 bytes more than one line).
//
//   off  size field
//     0    1  token   bits 0-3: slot i holds a committed item (the commit bit)
//                     bits 4-7: slot i was filled by a move whose source may still be
//                               committed ("moved-in", cleared once the source is cleared)
//     1    7  unused  (zero)
//     8    8  lock    pm::VersionLock word (pool generation); never flushed
//    16   64  slot[0..3]
//
// A slot is free when its token bit is 0, whatever its bytes hold. The token byte is written
// with one store: an update that moves an item to another slot of the bucket sets the new
// bit and clears the old one (and its moved-in bit) at once.
struct Bucket {
  uint8_t token;
  uint8_t unused[7];
  uint64_t lock;
  Slot slot[kSlots];
};
static_assert(sizeof(Bucket) == 80 && alignof(Bucket) == 8);
static_assert(offsetof(Bucket, lock) == 8 && offsetof(Bucket, slot) == 16);

inline constexpr uint8_t kCommitMask = 0x0F;
inline constexpr uint8_t CommitBit(int i) { return static_cast<uint8_t>(1u << i); }
inline constexpr uint8_t MovedBit(int i) { return static_cast<uint8_t>(0x10u << i); }

// The table: which blocks are the levels. 32 bytes, one half of a cache line.
//
//   off 0  top         pool offset of the top level: 2^top_bits buckets
//   off 8  bottom      pool offset of the bottom level: 2^(top_bits-1) buckets
//   off 16 top_bits    0 while the table is empty (no levels yet)
//   off 24 resize_top  0, or the pool offset of the new top level (2^(top_bits+1) buckets,
//                      zeroed and persisted) of a resize in progress
struct Table {
  uint64_t top;
  uint64_t bottom;
  uint64_t top_bits;
  uint64_t resize_top;
};
static_assert(sizeof(Table) == 32);

// The pool's root area. A new table is written into the inactive one of table[0..1],
// persisted, and committed by the 8-byte store of `active`, persisted.
//
//   off 0   magic   kLevelHashMagic once initialized (written last)
//   off 8   kind    31
//   off 16  active  0 or 1: which table is current
//   off 24  unused
//   off 32  table[0]   (cache line 0 of the root area)
//   off 64  table[1]   (cache line 1)
struct LevelRoot {
  uint64_t magic;
  uint64_t kind;
  uint64_t active;
  uint64_t unused;
  Table table[2];
};
static_assert(sizeof(LevelRoot) == 96 && offsetof(LevelRoot, table) == 32);
static_assert(sizeof(LevelRoot) <= kRootAreaSize);

// Largest top level: 2^kMaxTopBits buckets (recovery refuses a table claiming more).
inline constexpr uint64_t kMaxTopBits = 40;

// The two hash functions. A key's top-level buckets are the top `bits` bits of each hash, so
// its bottom-level buckets (bits - 1) are those indexes halved: top buckets 2j and 2j+1 share
// bottom bucket j, and after a resize the old top level, indexed with one bit fewer than the
// new one, is the new bottom level without moving an item.
inline uint64_t Hash1(uint64_t key) { return pm::Mix64(key); }
inline uint64_t Hash2(uint64_t key) { return pm::Mix64(key ^ 0xc3a5c85c97cb3127ull); }
inline uint64_t IndexOf(uint64_t hash, uint64_t bits) {
  return bits == 0 ? 0 : hash >> (64 - bits);
}

// Racy reads of bucket words (lock-free readers, writers of other buckets) are atomics.
inline uint8_t LoadToken(const Bucket* b) { return __atomic_load_n(&b->token, __ATOMIC_RELAXED); }
inline void StoreToken(Bucket* b, uint8_t t) { __atomic_store_n(&b->token, t, __ATOMIC_RELAXED); }
inline uint64_t LoadWord(const uint64_t* p) { return __atomic_load_n(p, __ATOMIC_RELAXED); }
inline void StoreWord(uint64_t* p, uint64_t v) { __atomic_store_n(p, v, __ATOMIC_RELAXED); }

// The first free slot of a token, -1 if the bucket is full.
inline int FreeSlot(uint8_t token) {
  const unsigned free = ~token & kCommitMask;
  return free == 0 ? -1 : __builtin_ctz(free);
}
inline int UsedSlots(uint8_t token) { return __builtin_popcount(token & kCommitMask); }

// A key's bucket indexes in a level of 2^bits buckets.
struct Pair {
  uint64_t first;
  uint64_t second;
};
inline Pair BucketsOf(uint64_t key, uint64_t bits) {
  return {IndexOf(Hash1(key), bits), IndexOf(Hash2(key), bits)};
}

}  // namespace pmindex::hash::levelhash

#endif  // PMINDEX_HASH_LEVELHASH_BUCKET_H_
