// RwLock: the reader-writer lock of the single-threaded designs (WORT, WOART, ART, and the
// B+trees with NV-Tree, wB+-Tree and wB+-Tree-SO leaves).
// Writer-preferring: once a writer waits, new readers wait behind it (glibc's default
// rwlock and std::shared_mutex prefer readers, which starved the one writer while readers
// kept arriving).
//
// One 32-bit word for the lock's state, inline: a reader enters and leaves with one
// compare-and-swap and one fetch_sub (a glibc pthread rwlock takes the same two atomic
// operations inside ~120 instructions of calls and state checks per lookup). A waiter first
// spins a bounded while (about as long as a short critical section: a few microseconds),
// then blocks in the kernel (std::atomic::wait, a futex). Sleeping at once made every
// contended hand-off cost a membarrier, a futex wait and a futex wake, several times the
// critical sections these designs hold (two threads ran at a third of one's throughput).
//
// A release wakes sleepers once per sleep, not once per release: sleepers_ is a flag that the
// first release to see it clears (exchange) before it bumps wakes_ and wakes every thread
// waiting on wakes_. It used to be a count that each sleeper took back only once it ran again;
// on a loaded machine a woken thread waits milliseconds for a CPU, and meanwhile every release
// of the running writer paid a futex wake-up system call (874,116 of them for 276 sleeps in
// the five designs' load of 200,000 keys and workload a at two threads, doc/performance.md).
//
//   state_     bits 0..15   readers holding the lock
//              bits 16..30  writers waiting for readers to leave (new readers stay out)
//              bit  31      a writer holds the lock
//   sleepers_  1 while a thread may be inside, or about to enter, wakes_.wait()
//   wakes_     bumped by every release that clears sleepers_; sleepers wait on it (it only
//              grows, so a sleeper cannot miss a wake-up to an A-B-A of state_)
//   handoffs_  bumped by every writer's release: a spinning waiter sees the lock change
//              hands even when the writer took it again before the waiter looked
//
// The lock is aligned to its own cache line: the line moves between the writers' cores at
// every hand-off and must not drag a tree's root fields (read by lock-free lookups) with it.
//
// While the writer bit is set no thread changes state_: readers' and writers' compare-and-
// swaps expect it clear, and a writer registers as waiting only while it is clear (a writer
// that finds the lock held by a writer sleeps unregistered). So a writer's unlock clears the
// bit with a plain store and decides whether to wake anyone with one load of sleepers_ (no
// locked instruction unless someone sleeps), where the process has expedited membarrier
// (pm/epoch.h): a locked instruction there would wait for the write-backs of the writer's
// persists (doc/performance.md, "FPTree in adr"). The wake-up is not lost: a thread about to
// sleep reads wakes_, sets sleepers_, runs pm::detail::HeavyFence() (a full fence in every
// running thread of the process) and reads state_ again; either that fence comes after the
// unlocking store, which the sleeper then sees (it does not sleep), or before it, and then
// the unlock's load of sleepers_ sees the flag and wakes it (after a full fence of its own,
// which std::atomic::notify_all's bookkeeping needs). A release that cleared the flag before
// the sleeper read wakes_ did not clear this sleeper's flag; one that cleared it later bumps
// wakes_ past what the sleeper read, so its wait returns at once. Without membarrier (and
// under TSan) the unlock is a fetch_and.
//
// Thread safety: that is its purpose. Satisfies Lockable and SharedLockable, so it works
// with std::unique_lock and std::shared_lock. At most 65,535 concurrent readers and 32,767
// waiting writers.
#ifndef PMINDEX_PM_RW_LOCK_H_
#define PMINDEX_PM_RW_LOCK_H_

#include <atomic>
#include <cstdint>

#include "pm/epoch.h"

namespace pmindex::pm {

class RwLock {
 public:
  RwLock() = default;
  RwLock(const RwLock&) = delete;
  RwLock& operator=(const RwLock&) = delete;

  void lock_shared() {
    uint32_t s = state_.load(std::memory_order_relaxed);
    if ((s & ~kReaders) == 0 &&
        state_.compare_exchange_weak(s, s + 1, std::memory_order_acquire,
                                     std::memory_order_relaxed)) [[likely]]
      return;
    LockSharedSlow();
  }
  void unlock_shared() {
    // seq_cst on both sides (here and in Sleep): the last reader out sees a sleeper's count,
    // or the sleeper sees the reader gone (a lock xadd and a plain load on x86).
    const uint32_t prev = state_.fetch_sub(1, std::memory_order_seq_cst);
    // The last reader out wakes waiting writers.
    if ((prev & kReaders) == 1 && sleepers_.load(std::memory_order_seq_cst) != 0) [[unlikely]]
      Wake();
  }

  void lock() {
    uint32_t s = 0;
    if (state_.compare_exchange_strong(s, kWriter, std::memory_order_acquire,
                                       std::memory_order_relaxed)) [[likely]]
      return;
    LockSlow();
  }
  void unlock() {
#ifndef PMINDEX_TSAN
    if (pm::detail::g_asymmetric_announce) [[likely]] {
      // Nothing changes state_ while the writer bit is set: a plain store clears it.
      BumpHandoffs();
      state_.store(state_.load(std::memory_order_relaxed) & ~kWriter,
                   std::memory_order_release);
      std::atomic_signal_fence(std::memory_order_seq_cst);
      if (sleepers_.load(std::memory_order_relaxed) != 0) [[unlikely]] {
        std::atomic_thread_fence(std::memory_order_seq_cst);
        Wake();
      }
      return;
    }
#endif
    BumpHandoffs();
    state_.fetch_and(~kWriter, std::memory_order_seq_cst);
    if (sleepers_.load(std::memory_order_seq_cst) != 0) Wake();
  }

 private:
  static constexpr uint32_t kReaders = 0xFFFF;
  static constexpr uint32_t kOneWaiting = 1u << 16;
  static constexpr uint32_t kWriter = 1u << 31;
  // Pause instructions a waiter spins before it sleeps: 3-15 us (a pause is 40-150 cycles by
  // CPU), the length of a few short critical sections.
  static constexpr int kSpins = 256;

  // Spins while state_ is `s` and no writer released the lock, at most kSpins pauses; true
  // if either changed meanwhile. A writer that releases and takes the lock again within the
  // spin leaves state_ as it was: without handoffs_ the waiter took that for a lock held
  // throughout and went to sleep (a HeavyFence and often a futex call each time; two writers
  // of fptree-var made 21,690 membarrier calls in a 500,000-key load).
  bool SpinWhile(uint32_t s) const {
    const uint32_t h = handoffs_.load(std::memory_order_relaxed);
    for (int i = 0; i < kSpins; ++i) {
      __builtin_ia32_pause();
      if (state_.load(std::memory_order_relaxed) != s ||
          handoffs_.load(std::memory_order_relaxed) != h)
        return true;
    }
    return false;
  }

  // Only the writer holding the lock writes handoffs_ (on the lock's line, which its unlock
  // writes anyway).
  void BumpHandoffs() {
    handoffs_.store(handoffs_.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
  }

  // Sleeps until a release after state_ was `s` wakes it (see the header comment); the
  // caller looks at state_ again.
  void Sleep(uint32_t s) {
    const uint32_t seen = wakes_.load(std::memory_order_seq_cst);  // before the flag
    sleepers_.store(1, std::memory_order_seq_cst);
#ifndef PMINDEX_TSAN
    if (pm::detail::g_asymmetric_announce) pm::detail::HeavyFence();
#endif
    // Re-read once flagged: a change before the flag is seen here, one after it wakes us.
    if (state_.load(std::memory_order_seq_cst) == s) wakes_.wait(seen, std::memory_order_seq_cst);
  }
  // Wakes every sleeper; the first release to see the flag pays the system call, later ones
  // (before anyone sleeps again) find it clear.
  [[gnu::noinline]] void Wake() {
    if (sleepers_.exchange(0, std::memory_order_seq_cst) == 0) return;
    wakes_.fetch_add(1, std::memory_order_seq_cst);
    wakes_.notify_all();
  }
  void LockSharedSlow() {
    for (;;) {
      uint32_t s = state_.load(std::memory_order_seq_cst);
      if ((s & ~kReaders) != 0) {  // a writer holds or waits: writers first
        if (!SpinWhile(s)) Sleep(s);
      } else if (state_.compare_exchange_weak(s, s + 1, std::memory_order_acquire,
                                              std::memory_order_relaxed)) {
        return;
      }
    }
  }
  void LockSlow() {
    bool counted = false;  // in the waiting bits
    for (;;) {
      uint32_t s = state_.load(std::memory_order_seq_cst);
      if ((s & kWriter) != 0) {
        // Unregistered: state_ must not change while the writer bit is set.
        if (!SpinWhile(s)) Sleep(s);
      } else if ((s & kReaders) == 0) {
        if (state_.compare_exchange_weak(s, (counted ? s - kOneWaiting : s) | kWriter,
                                         std::memory_order_acquire, std::memory_order_relaxed))
          return;
      } else if (!counted) {
        counted = state_.compare_exchange_weak(s, s + kOneWaiting, std::memory_order_relaxed,
                                               std::memory_order_relaxed);
      } else if (!SpinWhile(s)) {
        Sleep(s);  // readers inside; the last one out wakes us
      }
    }
  }

  alignas(64) std::atomic<uint32_t> state_{0};  // the lock is a cache line of its own
  std::atomic<uint32_t> sleepers_{0};
  std::atomic<uint32_t> wakes_{0};
  std::atomic<uint32_t> handoffs_{0};
};

}  // namespace pmindex::pm

#endif  // PMINDEX_PM_RW_LOCK_H_
