// RowexNodeLock: a writer's hold on one node lock of a ROWEX tree (Read-Optimized Write
// EXclusion, Leis et al., DaMoN 2016; the concurrency of P-ART, RECIPE SOSP 2019), over the
// library's one lock word, pm::VersionLock.
//
// In ROWEX, writers lock the nodes they change and readers take no lock and never retry:
// every change a reader can see is one atomic store, and a node replaced by a copy is marked
// obsolete (it stays locked for good), so that a writer that was waiting for its lock, or
// locks it later through a stale path, fails and restarts from the root. The lock words live
// in the pool and carry the pool generation: a lock or obsolete mark left by a crash is free
// after reopening, with no recovery write, and the word is never flushed.
//
// Writers lock top-down (a node's parent before the node) and re-check, once they hold the
// lock, that what they read without it still holds (the parent's child word still names the
// node, the slot is still empty, ...), restarting otherwise.
//
// Thread safety: one hold per object; the object belongs to one thread.
#ifndef PMINDEX_RADIX_COMMON_ROWEX_LOCK_H_
#define PMINDEX_RADIX_COMMON_ROWEX_LOCK_H_

#include <cassert>
#include <cstdint>

#include "pm/version_lock.h"

namespace pmindex::radix {

class RowexNodeLock {
 public:
  RowexNodeLock() = default;
  RowexNodeLock(const RowexNodeLock&) = delete;
  RowexNodeLock& operator=(const RowexNodeLock&) = delete;
  ~RowexNodeLock() { Unlock(); }

  // Spins until the lock word is held; false (and nothing held) if the node is obsolete.
  [[nodiscard]] bool Lock(uint64_t* word, uint32_t generation) {
    assert(word_ == nullptr && "RowexNodeLock holds a lock already");
    if (!pm::VersionLock::LockInline(word, generation, &held_)) return false;
    word_ = word;
    return true;
  }
  bool held() const { return word_ != nullptr; }
  // The node was unlinked (its replacement is durable): it stays locked and obsolete, so
  // writers that reach it later restart.
  void MarkObsolete(uint32_t generation) {
    assert(word_ != nullptr && "MarkObsolete without the lock");
    pm::VersionLock::MarkObsolete(word_, generation);
    word_ = nullptr;
  }
  void Unlock() {
    if (word_ == nullptr) return;
    pm::VersionLock::Release(word_, held_);
    word_ = nullptr;
  }

 private:
  uint64_t* word_ = nullptr;
  uint64_t held_ = 0;
};

}  // namespace pmindex::radix

#endif  // PMINDEX_RADIX_COMMON_ROWEX_LOCK_H_
