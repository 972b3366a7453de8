// RwLock: the reader-writer lock of the single-threaded designs (WORT, WOART, ART, and the
// B+trees with NV-Tree, wB+-Tree and wB+-Tree-SO leaves).
// Writer-preferring: once a writer waits, new readers wait behind it (glibc's default
// rwlock and std::shared_mutex prefer readers, which starved the one writer while readers
// kept arriving).
//
// One 32-bit word, inline: a reader enters and leaves with one compare-and-swap and one
// fetch_sub (a glibc pthread rwlock takes the same two atomic operations inside
// ~120 instructions of calls and state checks per lookup). Waiting blocks in the kernel
// (std::atomic::wait, a futex), never spins.
//
//   bits 0..15   readers holding the lock
//   bits 16..30  writers waiting
//   bit  31      a writer holds the lock
//
// Thread safety: that is its purpose. Satisfies Lockable and SharedLockable, so it works
// with std::unique_lock and std::shared_lock. At most 65,535 concurrent readers and 32,767
// waiting writers.
#ifndef PMINDEX_PM_RW_LOCK_H_
#define PMINDEX_PM_RW_LOCK_H_

#include <atomic>
#include <cstdint>

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
    const uint32_t prev = state_.fetch_sub(1, std::memory_order_release);
    // The last reader out wakes waiting writers.
    if ((prev & kReaders) == 1 && (prev & kWaiting) != 0) [[unlikely]]
      state_.notify_all();
  }

  void lock() {
    uint32_t s = state_.load(std::memory_order_relaxed);
    if (s == 0 && state_.compare_exchange_strong(s, kWriter, std::memory_order_acquire,
                                                 std::memory_order_relaxed)) [[likely]]
      return;
    LockSlow();
  }
  void unlock() {
    state_.fetch_and(~kWriter, std::memory_order_release);
    // Readers and writers may wait on any value with the writer bit set.
    state_.notify_all();
  }

 private:
  static constexpr uint32_t kReaders = 0xFFFF;
  static constexpr uint32_t kOneWaiting = 1u << 16;
  static constexpr uint32_t kWaiting = 0x7FFFu << 16;
  static constexpr uint32_t kWriter = 1u << 31;

  void LockSharedSlow() {
    uint32_t s = state_.load(std::memory_order_relaxed);
    for (;;) {
      if ((s & ~kReaders) != 0) {  // a writer holds or waits: writers first
        state_.wait(s, std::memory_order_relaxed);
        s = state_.load(std::memory_order_relaxed);
      } else if (state_.compare_exchange_weak(s, s + 1, std::memory_order_acquire,
                                              std::memory_order_relaxed)) {
        return;
      }
    }
  }
  void LockSlow() {
    uint32_t s = state_.fetch_add(kOneWaiting, std::memory_order_relaxed) + kOneWaiting;
    for (;;) {
      if ((s & (kReaders | kWriter)) != 0) {
        state_.wait(s, std::memory_order_relaxed);
        s = state_.load(std::memory_order_relaxed);
      } else if (state_.compare_exchange_weak(s, (s - kOneWaiting) | kWriter,
                                              std::memory_order_acquire,
                                              std::memory_order_relaxed)) {
        return;
      }
    }
  }

  std::atomic<uint32_t> state_{0};
};

}  // namespace pmindex::pm

#endif  // PMINDEX_PM_RW_LOCK_H_
