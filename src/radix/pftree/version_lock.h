// The PFtree node lock: one 8-byte word in the persistent header of every inner node and leaf
// array, carrying the pool generation of the process that wrote it.
//
//   bits 63..32  generation (low 32 bits of Pool::generation()) of the writer
//   bits 31..2   version, incremented by every unlock (optimistic readers compare it)
//   bit  1       obsolete: the node was replaced and will be freed (set while locked)
//   bit  0       locked
//
// The locked and obsolete bits count only when the word's generation is the current one.
// Every open bumps the generation, so a lock (or obsolete mark) left behind by a crashed
// process is free after reopening, without any recovery write. The word is never flushed:
// its persistent value has no meaning beyond "stale generation".
//
// Writers take the lock (Lock spins, TryLock does not); readers take a version with
// ReadBegin and check it with ReadValidate after reading (optimistic lock coupling).
// Obsolete nodes stay locked forever, so Lock/TryLock on them fail and callers restart.
//
// Thread safety: all functions are atomic on the word; any thread.
#ifndef PMINDEX_RADIX_PFTREE_VERSION_LOCK_H_
#define PMINDEX_RADIX_PFTREE_VERSION_LOCK_H_

#include <immintrin.h>
#include <sched.h>

#include <atomic>
#include <cstdint>

#include "pm/seqlock.h"

namespace pmindex::pftree {

class VersionLock {
 public:
  static constexpr uint64_t kLocked = 1;
  static constexpr uint64_t kObsolete = 2;
  static constexpr uint64_t kVersionMask = 0xFFFFFFFCull;

  static bool Held(uint64_t w, uint32_t gen) { return (w & kLocked) && (w >> 32) == gen; }
  static bool Obsolete(uint64_t w, uint32_t gen) { return (w & kObsolete) && (w >> 32) == gen; }

  // Waits while a writer holds the lock; false if the node is obsolete.
  static bool ReadBegin(uint64_t* word, uint32_t gen, uint64_t* version) {
    std::atomic_ref<uint64_t> a(*word);
    for (int spins = 0;; ++spins) {
      uint64_t w = a.load(std::memory_order_acquire);
      if (Obsolete(w, gen)) return false;
      if (!Held(w, gen)) {
        *version = w;
        return true;
      }
      Backoff(spins);
    }
  }
  // True if no writer changed the node since ReadBegin returned `version`.
  static bool ReadValidate(uint64_t* word, uint64_t version) {
    return pm::ReadAgain(word) == version;
  }
  // True if the node is obsolete now (for readers that found nothing).
  static bool IsObsolete(uint64_t* word, uint32_t gen) {
    return Obsolete(std::atomic_ref<uint64_t>(*word).load(std::memory_order_acquire), gen);
  }

  // Spins until locked; false if the node is (or becomes) obsolete.
  static bool Lock(uint64_t* word, uint32_t gen) {
    std::atomic_ref<uint64_t> a(*word);
    for (int spins = 0;; ++spins) {
      uint64_t w = a.load(std::memory_order_relaxed);
      if (Obsolete(w, gen)) return false;
      if (!Held(w, gen)) {
        uint64_t locked = (uint64_t{gen} << 32) | (w & kVersionMask) | kLocked;
        if (a.compare_exchange_weak(w, locked, std::memory_order_acquire)) return true;
      }
      Backoff(spins);
    }
  }
  // One attempt; false if held, obsolete or contended.
  static bool TryLock(uint64_t* word, uint32_t gen) {
    std::atomic_ref<uint64_t> a(*word);
    uint64_t w = a.load(std::memory_order_relaxed);
    if (Obsolete(w, gen) || Held(w, gen)) return false;
    uint64_t locked = (uint64_t{gen} << 32) | (w & kVersionMask) | kLocked;
    return a.compare_exchange_strong(w, locked, std::memory_order_acquire);
  }
  static void Unlock(uint64_t* word, uint32_t gen) {
    std::atomic_ref<uint64_t> a(*word);
    uint64_t w = a.load(std::memory_order_relaxed);
    a.store((uint64_t{gen} << 32) | ((w + 4) & kVersionMask), std::memory_order_release);
  }
  // Marks a locked node obsolete; it stays locked. Readers that validate fail from now on.
  static void MarkObsolete(uint64_t* word, uint32_t gen) {
    std::atomic_ref<uint64_t> a(*word);
    uint64_t w = a.load(std::memory_order_relaxed);
    a.store((uint64_t{gen} << 32) | ((w + 4) & kVersionMask) | kObsolete | kLocked,
            std::memory_order_release);
  }

  static void Backoff(int spins) {
    if (spins < 64) {
      _mm_pause();
    } else {
      sched_yield();  // the holder may be descheduled (oversubscribed threads)
    }
  }
};

}  // namespace pmindex::pftree

#endif  // PMINDEX_RADIX_PFTREE_VERSION_LOCK_H_
