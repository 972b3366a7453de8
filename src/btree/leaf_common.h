// What every leaf layout of the hybrid B+tree shares: the entry type, the write protocol's
// outcomes, relaxed atomic access helpers and the leaf version word.
//
// The leaf version word (8 bytes inside each leaf, volatile: reset by recovery, never
// persisted on purpose) is
//
//   bit 0      locked    a writer owns the leaf
//   bit 1      obsolete  the leaf was replaced (split, compaction or unlink); permanent
//   bits 63..2 counter   bumped when a writer changes what readers may see
//
// Readers of layouts whose writers change readable state under the lock (FPTree, RNTree,
// NV-Tree, wB+-Tree) wait while the lock bit is set and retry when the counter moved. RNTree+DS
// readers ignore the lock bit: its writers bump the counter only when the leaf is replaced.
#ifndef PMINDEX_BTREE_LEAF_COMMON_H_
#define PMINDEX_BTREE_LEAF_COMMON_H_

#include <immintrin.h>

#include <atomic>
#include <cstddef>
#include <cstdint>

#include "pm/seqlock.h"

namespace pmindex::btree {

struct Entry {
  uint64_t key;
  uint64_t value;
};
static_assert(sizeof(Entry) == 16);

enum class Op : uint8_t { kInsert, kUpdate, kUpsert, kRemove };

enum class Outcome : uint8_t {
  kDone,      // applied and durable; lock released
  kExists,    // insert of a present key; nothing changed; lock released
  kNotFound,  // update/remove of an absent key; nothing changed; lock released
  kRetry,     // the leaf was replaced meanwhile: restart from the root; lock released
  kFull,      // no room: the caller now HOLDS the leaf lock and must replace the leaf
};

struct WriteResult {
  Outcome outcome;
  bool now_empty = false;  // a remove left the leaf without live entries
  uint32_t live = UINT32_MAX;  // live entries the write left (UINT32_MAX: not reported)
};

// Relaxed atomic loads and stores for fields that optimistic readers read while a writer may
// change them (plain moves on x86; they keep ThreadSanitizer and the compiler honest).
template <typename T>
inline T Load(const T& x) {
  return __atomic_load_n(&x, __ATOMIC_RELAXED);
}
template <typename T>
inline void Store(T& x, T v) {
  __atomic_store_n(&x, v, __ATOMIC_RELAXED);
}
template <typename T>
inline T LoadAcquire(const T& x) {
  return __atomic_load_n(&x, __ATOMIC_ACQUIRE);
}
template <typename T>
inline void StoreRelease(T& x, T v) {
  __atomic_store_n(&x, v, __ATOMIC_RELEASE);
}

inline void CpuRelax() { _mm_pause(); }

// Requests the cache lines of bytes [from, to) of the object at p, all at once.
inline void PrefetchLines(const void* p, size_t from, size_t to) {
  for (size_t off = from; off < to; off += 64) {
    __builtin_prefetch(static_cast<const char*>(p) + off);
  }
}

namespace version {

inline constexpr uint64_t kLocked = 1;
inline constexpr uint64_t kObsolete = 2;
inline constexpr uint64_t kStep = 4;

// Takes the writer lock; false if the leaf is (or becomes) obsolete.
inline bool Lock(uint64_t* w) {
  for (;;) {
    uint64_t v = __atomic_load_n(w, __ATOMIC_RELAXED);
    if (v & kObsolete) return false;
    if (v & kLocked) {
      CpuRelax();
      continue;
    }
    if (__atomic_compare_exchange_n(w, &v, v | kLocked, false, __ATOMIC_ACQUIRE,
                                    __ATOMIC_RELAXED)) {
      pm::WriterLocked();  // seqlock writer order
      return true;
    }
  }
}

// One attempt; false if locked by another thread or obsolete.
inline bool TryLock(uint64_t* w) {
  uint64_t v = __atomic_load_n(w, __ATOMIC_RELAXED);
  if (v & (kLocked | kObsolete)) return false;
  if (!__atomic_compare_exchange_n(w, &v, v | kLocked, false, __ATOMIC_ACQUIRE,
                                   __ATOMIC_RELAXED)) {
    return false;
  }
  pm::WriterLocked();
  return true;
}

// Releases the lock; `bump` moves the counter so optimistic readers retry.
inline void Unlock(uint64_t* w, bool bump) {
  const uint64_t v = __atomic_load_n(w, __ATOMIC_RELAXED) & ~kLocked;
  __atomic_store_n(w, bump ? v + kStep : v, __ATOMIC_RELEASE);
}

// Marks a locked leaf replaced and releases it: every reader of it retries from the root.
inline void RetireAndUnlock(uint64_t* w) {
  const uint64_t v = __atomic_load_n(w, __ATOMIC_RELAXED) & ~kLocked;
  __atomic_store_n(w, (v | kObsolete) + kStep, __ATOMIC_RELEASE);
}

// A reader's snapshot of the word. Returns false if obsolete. With wait_for_writer the reader
// spins while a writer holds the lock; otherwise the lock bit is ignored.
inline bool ReadBegin(const uint64_t* w, bool wait_for_writer, uint64_t* out) {
  for (;;) {
    uint64_t v = __atomic_load_n(w, __ATOMIC_ACQUIRE);
    if (v & kObsolete) return false;
    if (wait_for_writer && (v & kLocked)) {
      CpuRelax();
      continue;
    }
    *out = v & ~kLocked;
    return true;
  }
}

// True if nothing a reader may have seen changed since ReadBegin returned `v`. Readers that
// wait for writers also fail while a writer holds the lock (it may be mid-change).
inline bool ReadValidate(const uint64_t* w, bool wait_for_writer, uint64_t v) {
  const uint64_t now = pm::ReadAgain(w);
  return (wait_for_writer ? now : now & ~kLocked) == v;
}

}  // namespace version

}  // namespace pmindex::btree

#endif  // PMINDEX_BTREE_LEAF_COMMON_H_
