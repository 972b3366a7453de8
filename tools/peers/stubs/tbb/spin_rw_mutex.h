// Stands in for TBB's speculative_spin_rw_mutex when building ICPP-RNTree. TBB's mutex
// elides the lock with Intel TSX where the CPU has it and takes a spin lock otherwise; this
// machine has no TSX, so a plain reader-writer spin lock is what TBB would run anyway,
// without the library. Only the calls ICPP-RNTree makes are provided: scoped_lock's
// acquire(mutex, write = true) and release().
#ifndef PMINDEX_TOOLS_PEERS_STUBS_TBB_SPIN_RW_MUTEX_H_
#define PMINDEX_TOOLS_PEERS_STUBS_TBB_SPIN_RW_MUTEX_H_

#include <atomic>
#include <cstdint>

namespace tbb {

class speculative_spin_rw_mutex {
 public:
  class scoped_lock {
   public:
    scoped_lock() = default;
    scoped_lock(const scoped_lock&) = delete;
    scoped_lock& operator=(const scoped_lock&) = delete;
    ~scoped_lock() {
      if (mutex_ != nullptr) release();
    }
    void acquire(speculative_spin_rw_mutex& m, bool write = true) {
      mutex_ = &m;
      writer_ = write;
      write ? m.lock() : m.lock_shared();
    }
    void release() {
      writer_ ? mutex_->unlock() : mutex_->unlock_shared();
      mutex_ = nullptr;
    }

   private:
    speculative_spin_rw_mutex* mutex_ = nullptr;
    bool writer_ = false;
  };

  // Bit 0: a writer holds the lock; the rest counts readers in steps of 2.
  void lock() {
    uint64_t expected = 0;
    while (!state_.compare_exchange_weak(expected, 1, std::memory_order_acquire)) {
      expected = 0;
      __builtin_ia32_pause();
    }
  }
  void unlock() { state_.fetch_sub(1, std::memory_order_release); }
  void lock_shared() {
    for (;;) {
      if ((state_.fetch_add(2, std::memory_order_acquire) & 1) == 0) return;
      state_.fetch_sub(2, std::memory_order_relaxed);
      while (state_.load(std::memory_order_relaxed) & 1) __builtin_ia32_pause();
    }
  }
  void unlock_shared() { state_.fetch_sub(2, std::memory_order_release); }

 private:
  std::atomic<uint64_t> state_{0};
};

}  // namespace tbb

#endif  // PMINDEX_TOOLS_PEERS_STUBS_TBB_SPIN_RW_MUTEX_H_
