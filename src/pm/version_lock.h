// VersionLock: the one version-lock word of the library (optimistic lock coupling). Every
// node lock is an 8-byte word used through these functions: the B+tree leaves and inner
// nodes and PFtree's inner nodes and leaf arrays.
//
//   bits 63..32  generation of the writer (see below)
//   bits 31..2   version, advanced by kStep on every unlock that changed what readers see
//   bit  1       obsolete: the node was replaced and will be freed (it stays locked)
//   bit  0       locked
//
// The locked and obsolete bits count only when the word's generation is the caller's. A word
// that lives in the pool and is never reset carries the pool generation (the low 32 bits of
// Pool::generation(), new on every open): a lock or obsolete mark left by a crashed process
// is then free after reopening, with no recovery write. Words that recovery resets (or that
// live in DRAM) use kResetGeneration. The word is never flushed: its persistent value means
// nothing beyond "stale generation".
//
// Writers lock (Lock spins, TryLock does not, TryUpgrade turns a read version into the lock if
// nothing changed); readers take a version with ReadBegin and check it with ReadValidate after
// reading (the orderings are pm/seqlock.h's). Readers that do not wait for writers (their
// writers change nothing readable in place) ignore the lock bit on both sides. Obsolete nodes
// stay locked, so Lock/TryLock on them fail and callers restart. Versions wrap after 2^30
// unlocks; a reader would need to sleep through all of them to be misled.
//
// Thread safety: all functions are atomic on the word; any thread.
#ifndef PMINDEX_PM_VERSION_LOCK_H_
#define PMINDEX_PM_VERSION_LOCK_H_

#include <immintrin.h>
#include <sched.h>

#include <cstdint>

#include "pm/seqlock.h"

namespace pmindex::pm {

class VersionLock {
 public:
  static constexpr uint64_t kLocked = 1;
  static constexpr uint64_t kObsolete = 2;
  static constexpr uint64_t kStep = 4;
  static constexpr uint64_t kVersionMask = 0xFFFFFFFCull;
  // The generation of words that recovery resets to 0 (or that live in DRAM).
  static constexpr uint32_t kResetGeneration = 0;

  static bool Held(uint64_t w, uint32_t gen) { return (w & kLocked) && (w >> 32) == gen; }
  static bool Obsolete(uint64_t w, uint32_t gen) { return (w & kObsolete) && (w >> 32) == gen; }

  // A reader's snapshot of the word; false if the node is obsolete. With wait_for_writer it
  // waits while a writer holds the lock; otherwise the lock bit is dropped from the snapshot.
  static bool ReadBegin(const uint64_t* word, uint32_t gen, uint64_t* version,
                        bool wait_for_writer = true) {
    for (int spins = 0;; ++spins) {
      const uint64_t w = __atomic_load_n(word, __ATOMIC_ACQUIRE);
      if ((w & (kLocked | kObsolete)) == 0) [[likely]] {  // neither bit: any generation
        *version = w;
        return true;
      }
      if (Obsolete(w, gen)) return false;
      if (!wait_for_writer) {
        *version = w & ~kLocked;
        return true;
      }
      if (!Held(w, gen)) {
        *version = w;
        return true;
      }
      Backoff(spins);
    }
  }
  // True if no writer changed the node since ReadBegin returned `version`. Readers that wait
  // for writers also fail while a writer holds the lock (it may be mid-change).
  static bool ReadValidate(const uint64_t* word, uint64_t version, bool wait_for_writer = true) {
    const uint64_t now = ReadAgain(word);
    return (wait_for_writer ? now : now & ~kLocked) == version;
  }
  // True if the node is obsolete now (for readers that found nothing).
  static bool IsObsolete(const uint64_t* word, uint32_t gen) {
    return Obsolete(__atomic_load_n(word, __ATOMIC_ACQUIRE), gen);
  }

  // Spins until locked; false if the node is (or becomes) obsolete. With `held`, the word as
  // locked is stored there, for Release.
  static bool Lock(uint64_t* word, uint32_t gen, uint64_t* held = nullptr) {
    for (int spins = 0;; ++spins) {
      uint64_t w = __atomic_load_n(word, __ATOMIC_RELAXED);
      if (Obsolete(w, gen)) return false;
      if (!Held(w, gen) && Acquire(word, w, gen, held)) return true;
      Backoff(spins);
    }
  }
  // Lock with its first attempt inline: uncontended, a load and a CAS and no call (whose
  // return address and saved registers would be stores: pm/persist.h, flush_in). Callers on
  // a hot write path use it; the others call Lock.
  [[gnu::always_inline]] static bool LockInline(uint64_t* word, uint32_t gen,
                                                uint64_t* held = nullptr) {
    uint64_t w = __atomic_load_n(word, __ATOMIC_RELAXED);
    if ((w & (kLocked | kObsolete)) == 0 || (!Obsolete(w, gen) && !Held(w, gen))) [[likely]] {
      const uint64_t locked = (uint64_t{gen} << 32) | (w & kVersionMask) | kLocked;
      if (__atomic_compare_exchange_n(word, &w, locked, false, __ATOMIC_ACQUIRE,
                                      __ATOMIC_RELAXED)) [[likely]] {
        WriterLocked();  // seqlock writer order (pm/seqlock.h)
        if (held != nullptr) *held = locked;
        return true;
      }
    }
    return Lock(word, gen, held);
  }
  // One attempt; false if held, obsolete or contended.
  static bool TryLock(uint64_t* word, uint32_t gen) {
    const uint64_t w = __atomic_load_n(word, __ATOMIC_RELAXED);
    if (Obsolete(w, gen) || Held(w, gen)) return false;
    return Acquire(word, w, gen);
  }
  // Locks the node if its word still equals `version` (from ReadBegin with wait_for_writer):
  // the reader's view stays valid under the lock. The word keeps its generation, so it must
  // be the caller's already (DRAM and reset words, kResetGeneration, always are): on a word
  // of an older generation whose lock bit a crash left set, the compare-and-swap would
  // succeed without locking anything.
  static bool TryUpgrade(uint64_t* word, uint64_t version) {
    if (!__atomic_compare_exchange_n(word, &version, version | kLocked, false, __ATOMIC_ACQUIRE,
                                     __ATOMIC_RELAXED)) {
      return false;
    }
    WriterLocked();
    return true;
  }
  // Releases the lock. With bump, optimistic readers that began before fail validation.
  [[gnu::always_inline]] static void Unlock(uint64_t* word, uint32_t gen, bool bump = true) {
    const uint64_t w = __atomic_load_n(word, __ATOMIC_RELAXED);
    Release(word, (uint64_t{gen} << 32) | (w & 0xFFFFFFFF), bump);
  }
  // Unlock by a holder that kept the word as it locked it (Lock's `held`): the same store as
  // Unlock, without reading the word first. While the lock is held no other thread writes the
  // word, so `held` is its value. Where a persist of a neighbouring field has just written
  // the word's line back (a flush may evict it), Unlock's load waits for memory and the
  // operation with it; a store does not wait.
  [[gnu::always_inline]] static void Release(uint64_t* word, uint64_t held, bool bump = true) {
    __atomic_store_n(word,
                     (held & ~uint64_t{0xFFFFFFFF}) | ((bump ? held + kStep : held) & kVersionMask),
                     __ATOMIC_RELEASE);
  }
  // Marks a locked node obsolete; it stays locked. Readers that validate fail from now on.
  static void MarkObsolete(uint64_t* word, uint32_t gen) {
    const uint64_t w = __atomic_load_n(word, __ATOMIC_RELAXED);
    __atomic_store_n(word,
                     (uint64_t{gen} << 32) | ((w + kStep) & kVersionMask) | kObsolete | kLocked,
                     __ATOMIC_RELEASE);
  }

  static void Backoff(int spins) {
    if (spins < 64) {
      _mm_pause();
    } else {
      sched_yield();  // the holder may be descheduled (oversubscribed threads)
    }
  }

 private:
  // CAS from the unlocked word `w` to locked in generation `gen`, keeping the version; the
  // locked word goes to `held` when given.
  static bool Acquire(uint64_t* word, uint64_t w, uint32_t gen, uint64_t* held = nullptr) {
    const uint64_t locked = (uint64_t{gen} << 32) | (w & kVersionMask) | kLocked;
    if (!__atomic_compare_exchange_n(word, &w, locked, false, __ATOMIC_ACQUIRE,
                                     __ATOMIC_RELAXED)) {
      return false;
    }
    WriterLocked();  // seqlock writer order (pm/seqlock.h)
    if (held != nullptr) *held = locked;
    return true;
  }
};

}  // namespace pmindex::pm

#endif  // PMINDEX_PM_VERSION_LOCK_H_
