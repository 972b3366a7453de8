// RwLock: the reader-writer lock of the single-threaded radix designs (WORT, WOART, ART).
// A pthread rwlock that prefers writers: glibc's default (and std::shared_mutex) prefers
// readers, which starves the one writer while readers keep arriving.
//
// Thread safety: that is its purpose. Satisfies Lockable and SharedLockable, so it works
// with std::unique_lock and std::shared_lock.
#ifndef PMINDEX_RADIX_COMMON_RW_LOCK_H_
#define PMINDEX_RADIX_COMMON_RW_LOCK_H_

#include <pthread.h>

namespace pmindex::radix {

class RwLock {
 public:
  RwLock() {
    pthread_rwlockattr_t attr;
    pthread_rwlockattr_init(&attr);
    pthread_rwlockattr_setkind_np(&attr, PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP);
    pthread_rwlock_init(&lock_, &attr);
    pthread_rwlockattr_destroy(&attr);
  }
  ~RwLock() { pthread_rwlock_destroy(&lock_); }
  RwLock(const RwLock&) = delete;
  RwLock& operator=(const RwLock&) = delete;

  void lock() { pthread_rwlock_wrlock(&lock_); }
  void unlock() { pthread_rwlock_unlock(&lock_); }
  void lock_shared() { pthread_rwlock_rdlock(&lock_); }
  void unlock_shared() { pthread_rwlock_unlock(&lock_); }

 private:
  pthread_rwlock_t lock_;
};

}  // namespace pmindex::radix

#endif  // PMINDEX_RADIX_COMMON_RW_LOCK_H_
