// Epoch: the one epoch-based reclamation scheme of the library. Blocks (and the DRAM
// metadata that goes with them) that concurrent readers may still hold are freed only after
// every reader that could have reached them has left.
//
// Each pool's allocator owns one Epoch (Allocator::epoch()); every index of that pool guards
// and retires through it, the allocator's own retire() included.
//
// A reader (or writer) holds a Guard for the whole operation. On entry the guard announces
// the global epoch in the thread's slot. Retire() queues an item in the calling thread's slot;
// every kBatch items, or once they hold kBatchBytes of pool space, the thread stamps its
// queued items with the global epoch and advances it (one fetch_add for the batch), and
// Collect() stamps every thread's queued items the same way. Items whose stamp is below the
// smallest epoch announced by a thread inside a guard are reclaimed. Why that is safe: an
// item is queued after it was unlinked, and the advance that stamps it comes after its
// queueing (in the retiring thread, or in a collector that took the slot's lock after it); a
// guard that announced a later epoch read the global counter
// (seq_cst, after announcing) at or after that advance, so it synchronizes with it and cannot
// reach the unlinked item. The guard re-reads the counter after announcing and announces
// again if it moved, so no advance slips between its read and its announcement.
//
// Why per-thread queues: the global counter is read by every guard of every thread. Advanced
// per retirement (a split retires its old leaf), its line moved between the cores several
// times a split, and the retirements took one lock; batched, they touch it once per kBatch
// (doc/performance.md, "Concurrent inserts: what threads share").
//
// Why a shared watermark: reading the announcements needs a fence in every running thread
// (HeavyFence, below), a system call that interrupts every core the process runs on. Made at
// every batch of every thread, inside the lock of the stamped items, its cost grew with the
// threads (each one's fences interrupt all the others) and the lock serialised the retirers
// behind it. A fence's result holds for every item stamped before it, whoever stamped it
// (AdvanceWatermark), so it is kept in safe_: a batch reclaims what earlier fences cover and
// fences, outside the lock, only once kFenceItems or kFenceBytes were stamped since the last.
//
// Guards nest: an inner guard of a thread that already announced does nothing.
//
// A retirement while no other thread's slot ever announced a guard (guarded_slots_ counts
// the slots that did, each once, before its first announcement) and the retiring thread is
// outside any guard is reclaimed at once, without a queue, lock or HeavyFence: single-threaded
// use gets the block it retired back at its next allocation, still in the CPU cache and the
// media's write-combining buffer, as if freed. A retirement asked to (after_guard) made inside
// the thread's own guard while no other slot was ever counted (a hybrid B+tree's split, inside
// its write's guard) is held in the slot (kDeferred items) until that guard closes, and is
// then treated as a retirement outside any guard: reclaimed at once if still no other slot was
// counted, else queued. (Only on request: freed at once, a block comes back at the next
// allocation, which changes what other indexes' crash scenarios build.) Why that is safe: the
// retiring thread advances the global epoch (seq_cst RMW, after the unlink) and then reads the
// count (seq_cst). A thread whose count increment that
// read missed comes after the advance in the single total order, and so does its every guard's
// seq_cst read of the counter: that read synchronizes with the advance, and the thread cannot
// reach the unlinked item. The count is first read relaxed: once another slot was counted it
// stays counted, so retirements beside other guards skip the advance and queue as above.
//
// The announcement's fence is asymmetric where the kernel offers membarrier(2) with
// MEMBARRIER_CMD_PRIVATE_EXPEDITED (registered once per process at load time): the guard
// announces with a plain store and a compiler barrier, and the reclaiming side, before it
// reads the announcements, makes every running thread of the process execute a full fence
// (HeavyFence). Either that fence orders a guard's announcement before the read, or the
// guard's re-read of the counter comes after it and sees the advance: the same two outcomes
// as with a seq_cst store, whose locked instruction would otherwise wait, on every operation,
// for the write-backs of the thread's previous persists (doc/performance.md, "FPTree in
// adr"). Without membarrier (and under TSan, which does not model it) the guard keeps the
// seq_cst store.
//
// Thread safety: all functions are thread-safe. Drain(owner) requires that no thread holds a
// guard while it may touch `owner`'s items (index close). Destroying the Epoch drops items
// that were never reclaimed: owners with DRAM to free drain before.
#ifndef PMINDEX_PM_EPOCH_H_
#define PMINDEX_PM_EPOCH_H_

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <vector>

#include "pm/thread_registry.h"

namespace pmindex::pm {

// Frees what an owner retired: a pool block at `offset` and/or the DRAM object `aux`.
class Reclaimer {
 public:
  virtual ~Reclaimer() = default;
  virtual void Reclaim(uint64_t offset, void* aux) = 0;
};

namespace detail {
// True when this process registered for expedited membarrier (set once, at load time).
extern const bool g_asymmetric_announce;
// A full fence executed by every running thread of the process before this returns (the
// heavy side of an asymmetric fence: the guards' announcement, pm::RwLock's unlock).
void HeavyFence();
}  // namespace detail

class Epoch {
  struct Slot;

 public:
  Epoch() = default;
  Epoch(const Epoch&) = delete;
  Epoch& operator=(const Epoch&) = delete;

  class Guard {
   public:
    // Inline: every operation of a concurrent index opens one.
    [[gnu::always_inline]] explicit Guard(Epoch& epoch) {
      Slot& slot = epoch.slots_.local();
      std::atomic<uint64_t>& mine = slot.announced;
      if (mine.load(std::memory_order_relaxed) != 0) return;  // nested
      if (!slot.guarded) [[unlikely]] epoch.CountGuardedSlot(slot);  // its first guard
      slot_ = &slot;
      epoch_ = &epoch;
      // Announce, then re-read: if the counter moved between the read and the announcement,
      // announce again. One seq_cst store and one load when it did not.
      uint64_t e = epoch.global_.load(std::memory_order_relaxed);
      for (;;) {
#ifndef PMINDEX_TSAN
        if (detail::g_asymmetric_announce) [[likely]] {
          mine.store(e, std::memory_order_relaxed);  // HeavyFence orders it for the reader
          std::atomic_signal_fence(std::memory_order_seq_cst);
        } else
#endif
        {
          mine.store(e, std::memory_order_seq_cst);
        }
        const uint64_t now = epoch.global_.load(std::memory_order_seq_cst);
        if (now == e) break;
        e = now;
      }
    }
    [[gnu::always_inline]] ~Guard() {
      if (slot_ == nullptr) return;
      slot_->announced.store(0, std::memory_order_release);
      if (slot_->deferred_n != 0) [[unlikely]] epoch_->ReleaseDeferred(*slot_);
    }
    Guard(const Guard&) = delete;
    Guard& operator=(const Guard&) = delete;

   private:
    Slot* slot_ = nullptr;  // set by the outermost guard of a thread
    Epoch* epoch_ = nullptr;
  };

  // Queues (offset, aux) for owner->Reclaim once no guard open now remains open. Every kBatch
  // retirements of a thread, or once its queued items hold kBatchBytes (`bytes`: the space
  // the item holds, 0 if it holds no pool space), stamps them and reclaims what earlier
  // fences made safe; once the stamped items waiting reach kFenceItems or kFenceBytes, it
  // fences (HeavyFence), reads the announcements and reclaims what that made safe. So a
  // thread holds back at most about kBatchBytes unstamped, all threads together about
  // kFenceBytes stamped since the last fence (a 1 MiB value is stamped and fenced at once),
  // besides what open guards hold back.
  // after_guard: made inside the caller's own guard while no other slot was ever counted, the
  // item is held in the slot until that guard closes and then retired again, outside any
  // guard (at once, or queued if another slot was counted meanwhile); see the header.
  void Retire(Reclaimer* owner, uint64_t offset, void* aux, size_t bytes = 0,
              bool after_guard = false);
  // Stamps every thread's queued items, then reclaims every item whose grace period has
  // passed; returns how many. A thread inside a guard holds back what was retired since it
  // entered.
  size_t Collect();
  // Reclaims every item of `owner` now (caller guarantees quiescence).
  void Drain(Reclaimer* owner);
  // Drops every item of `owner` unreclaimed (its owner rebuilt its state from scratch).
  void Discard(Reclaimer* owner);
  // Items retired and not yet reclaimed.
  size_t pending() const;

  static constexpr size_t kBatch = 8;
  static constexpr size_t kBatchBytes = 16 << 10;
  // Items (of all threads) stamped since the last fence before the next one is made.
  static constexpr size_t kFenceItems = 64;
  static constexpr size_t kFenceBytes = 64 << 10;

 private:
  struct Item {
    Reclaimer* owner;
    uint64_t offset;
    void* aux;
    uint64_t stamp;  // the global epoch when stamped; reclaimable once every guard is later
  };
  // A thread's announcement, read by every reclaimer, on a line of its own; its queued,
  // unstamped items on the next, behind a lock that only a collecting thread shares.
  // Retirements held until the guard they were made in closes (their thread's only).
  struct Deferred {
    Reclaimer* owner;
    uint64_t offset;
    void* aux;
    size_t bytes;
  };
  static constexpr uint32_t kDeferred = 4;
  struct alignas(64) Slot {
    std::atomic<uint64_t> announced{0};  // 0 = outside any guard
    bool guarded = false;  // counted in guarded_slots_ (set by its thread, read by it only)
    uint32_t deferred_n = 0;  // items in deferred (its thread's only)
    Deferred deferred[kDeferred];
    alignas(64) std::mutex mu;           // taken before retire_mu_ where both are
    std::vector<Item> queued;
    size_t queued_bytes = 0;             // the `bytes` of the queued items
  };

  // At the close of the guard `slot`'s deferred items were retired in: retires them again,
  // now outside any guard (at once, or queued).
  [[gnu::noinline]] void ReleaseDeferred(Slot& slot);
  // Counts `slot` in guarded_slots_ before its first announcement (once per slot).
  [[gnu::noinline, gnu::cold]] void CountGuardedSlot(Slot& slot);
  // True when no slot but the caller's `slot` ever announced a guard, and `slot` announces
  // none now: nothing another thread may hold needs a grace period (see the header).
  bool NoOtherGuard(const Slot& slot);
  // The smallest announced epoch (0 slots ignored); fences every running thread first.
  uint64_t MinAnnounced() const;
  // Fences, scans the announcements and raises safe_ to what they allow; returns safe_.
  uint64_t AdvanceWatermark();
  // Moves `slot`'s queued items into retired_, stamped with one advance (both locks held).
  void StampQueued(Slot& slot);
  // Moves the items with stamp < min out of retired_ into `ready` (retire_mu_ held).
  void TakeReady(uint64_t min, std::vector<Item>* ready);
  // Removes and returns the items of `owner`, queued or stamped.
  std::vector<Item> TakeOwned(Reclaimer* owner);

  // Each on its own line: global_ is read by every guard and written once a batch (and at
  // every retirement while no other slot announced: no other core reads it then); the slot
  // table is read by every guard; retire_mu_ is written by the stamping thread.
  alignas(64) std::atomic<uint64_t> global_{1};
  std::atomic<uint64_t> guarded_slots_{0};  // slots that ever announced; never decreases
  alignas(64) PerThread<Slot> slots_;  // one per thread id (pm/thread_registry.h)
  alignas(64) mutable std::mutex retire_mu_;
  std::vector<Item> retired_;  // stamped
  // Stamped since the last fence was decided on (items, their `bytes`).
  uint64_t unfenced_items_ = 0;
  uint64_t unfenced_bytes_ = 0;
  // Every item stamped below it is unreachable (AdvanceWatermark); only grows. Read at each
  // batch, written at each fence.
  alignas(64) std::atomic<uint64_t> safe_{0};
};

}  // namespace pmindex::pm

#endif  // PMINDEX_PM_EPOCH_H_
