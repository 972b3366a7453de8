// Epoch-based reclamation for PFtree: leaf arrays, inner nodes and their DRAM metadata that
// optimistic readers may still hold are freed only after every reader that could have seen
// them has left.
//
// A reader (or writer) holds an Epoch::Guard for the whole operation. Retire() stamps an
// item with the global epoch and advances it; an item is reclaimed once every thread inside
// a guard announced a later epoch. A thread that enters after the item was unlinked cannot
// reach it, so missing its announcement (it was still being stored) is harmless.
//
// Thread safety: all functions are thread-safe. Drain(owner) requires that no thread holds a
// guard while it may touch `owner`'s blocks (index close).
#ifndef PMINDEX_RADIX_PFTREE_EPOCH_H_
#define PMINDEX_RADIX_PFTREE_EPOCH_H_

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <vector>

#include "pm/thread_registry.h"

namespace pmindex::pftree {

// Frees what an index retired (a pool block and/or its DRAM metadata).
class Reclaimer {
 public:
  virtual ~Reclaimer() = default;
  virtual void Reclaim(uint64_t offset, void* aux) = 0;
};

class Epoch {
  struct Slot;

 public:
  static Epoch& Get();

  class Guard {
   public:
    Guard();
    ~Guard();
    Guard(const Guard&) = delete;
    Guard& operator=(const Guard&) = delete;

   private:
    Slot* slot_;  // the calling thread's
  };

  // Queues (offset, aux) for owner->Reclaim once no current guard remains.
  void Retire(Reclaimer* owner, uint64_t offset, void* aux);
  // Reclaims every item of `owner` now (caller guarantees quiescence).
  void Drain(Reclaimer* owner);
  // Reclaims what is safe now; returns how many items.
  size_t Collect();

 private:
  struct alignas(64) Slot {
    std::atomic<uint64_t> announced{0};  // 0 = outside any guard
    int depth = 0;                       // nested guards of the owning thread
  };
  struct Item {
    Reclaimer* owner;
    uint64_t offset;
    void* aux;
    uint64_t epoch;
  };
  friend class Guard;

  Epoch() = default;
  uint64_t MinAnnounced() const;

  std::atomic<uint64_t> global_{1};
  pm::PerThread<Slot> slots_;  // one per thread id (pm/thread_registry.h): no thread limit
  std::mutex retire_mu_;
  std::vector<Item> retired_;
  uint64_t since_collect_ = 0;
};

}  // namespace pmindex::pftree

#endif  // PMINDEX_RADIX_PFTREE_EPOCH_H_
