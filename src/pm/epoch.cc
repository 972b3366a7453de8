#include "pm/epoch.h"

#include <linux/membarrier.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>

namespace pmindex::pm {
namespace detail {
namespace {

long Membarrier(int cmd) { return ::syscall(SYS_membarrier, cmd, 0, 0); }

bool RegisterAsymmetric() {
#ifdef PMINDEX_TSAN
  return false;
#else
  const long cmds = Membarrier(MEMBARRIER_CMD_QUERY);
  if (cmds < 0 || (cmds & MEMBARRIER_CMD_PRIVATE_EXPEDITED) == 0) return false;
  return Membarrier(MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED) == 0;
#endif
}

}  // namespace

void HeavyFence() {
  if (Membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED) == 0) return;
  // Not registered (a forked child may not inherit the registration): register and retry,
  // else the global command, which needs none (slower, as correct).
  if (Membarrier(MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED) == 0 &&
      Membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED) == 0) {
    return;
  }
  if (Membarrier(MEMBARRIER_CMD_GLOBAL) == 0) return;
  __builtin_trap();  // guards announced without a fence and none can be had: never reclaim
}

const bool g_asymmetric_announce = RegisterAsymmetric();

}  // namespace detail

uint64_t Epoch::MinAnnounced() const {
  if (detail::g_asymmetric_announce) detail::HeavyFence();
  uint64_t min = UINT64_MAX;
  slots_.for_each([&](const Slot& s) {
    const uint64_t a = s.announced.load(std::memory_order_seq_cst);
    if (a != 0 && a < min) min = a;
  });
  return min;
}

// Items stamped below the counter read here, before the fence, were unlinked before it; a
// guard that may still reach one announced at most its stamp, and either the fence shows
// that announcement to the scan or the guard's re-read comes after the fence, sees the
// counter past the stamp and announces again (header). So every stamp below the result is
// safe, whoever stamped it and whenever it is taken: the watermark only grows.
uint64_t Epoch::AdvanceWatermark() {
  const uint64_t counter = global_.load(std::memory_order_seq_cst);
  const uint64_t bound = std::min(counter, MinAnnounced());
  uint64_t seen = safe_.load(std::memory_order_relaxed);
  while (seen < bound &&
         !safe_.compare_exchange_weak(seen, bound, std::memory_order_acq_rel,
                                      std::memory_order_relaxed)) {
  }
  return std::max(seen, bound);
}

void Epoch::TakeReady(uint64_t min, std::vector<Item>* ready) {
  size_t kept = 0;
  for (Item& it : retired_) {
    if (it.stamp < min) {
      ready->push_back(it);
    } else {
      retired_[kept++] = it;
    }
  }
  retired_.resize(kept);
}

void Epoch::StampQueued(Slot& slot) {
  if (slot.queued.empty()) return;
  const uint64_t stamp = global_.fetch_add(1, std::memory_order_seq_cst);
  for (Item& it : slot.queued) {
    it.stamp = stamp;
    retired_.push_back(it);
  }
  unfenced_items_ += slot.queued.size();
  unfenced_bytes_ += slot.queued_bytes;
  slot.queued.clear();  // keeps its capacity: the next batch allocates nothing
  slot.queued_bytes = 0;
}

void Epoch::CountGuardedSlot(Slot& slot) {
  guarded_slots_.fetch_add(1, std::memory_order_seq_cst);  // before the slot's announcement
  slot.guarded = true;
}

bool Epoch::NoOtherGuard(const Slot& slot) {
  if (slot.announced.load(std::memory_order_relaxed) != 0) return false;  // own guard open
  const uint64_t mine = slot.guarded ? 1 : 0;
  // Counted slots stay counted: a relaxed read that sees another is final.
  if (guarded_slots_.load(std::memory_order_relaxed) != mine) return false;
  global_.fetch_add(1, std::memory_order_seq_cst);  // the advance a later guard's read sees
  return guarded_slots_.load(std::memory_order_seq_cst) == mine;
}

void Epoch::Retire(Reclaimer* owner, uint64_t offset, void* aux, size_t bytes,
                   bool after_guard) {
  Slot& slot = slots_.local();
  if (NoOtherGuard(slot)) {  // no reader anywhere: reclaimed at once (header)
    owner->Reclaim(offset, aux);
    return;
  }
  // Inside its own guard, and no other slot counted yet: held until the guard closes
  // (header). The relaxed count is a hint; ReleaseDeferred decides.
  if (after_guard && slot.announced.load(std::memory_order_relaxed) != 0 &&
      slot.deferred_n < kDeferred &&
      guarded_slots_.load(std::memory_order_relaxed) == 1) {
    slot.deferred[slot.deferred_n++] = {owner, offset, aux, bytes};
    return;
  }
  std::vector<Item> ready;
  bool fence;
  {
    std::lock_guard<std::mutex> slot_lock(slot.mu);  // uncontended but for a collector
    slot.queued.push_back({owner, offset, aux, 0});
    slot.queued_bytes += bytes;
    if (slot.queued.size() < kBatch && slot.queued_bytes < kBatchBytes) return;
    std::lock_guard<std::mutex> lock(retire_mu_);
    StampQueued(slot);
    fence = unfenced_items_ >= kFenceItems || unfenced_bytes_ >= kFenceBytes;
    if (fence) {
      unfenced_items_ = unfenced_bytes_ = 0;
    } else {
      TakeReady(safe_.load(std::memory_order_acquire), &ready);  // what earlier fences cover
    }
  }
  if (fence) {  // outside the locks: the system call must not hold up other retirers
    const uint64_t safe = AdvanceWatermark();
    std::lock_guard<std::mutex> lock(retire_mu_);
    TakeReady(safe, &ready);
  }
  // Outside the locks: a reclaimer may retire or take its own locks.
  for (const Item& it : ready) it.owner->Reclaim(it.offset, it.aux);
}

void Epoch::ReleaseDeferred(Slot& slot) {
  Deferred items[kDeferred];
  const uint32_t n = slot.deferred_n;
  std::copy(slot.deferred, slot.deferred + n, items);
  slot.deferred_n = 0;
  for (uint32_t i = 0; i < n; ++i) Retire(items[i].owner, items[i].offset, items[i].aux,
                                          items[i].bytes);
}

size_t Epoch::Collect() {
  slots_.for_each([&](Slot& slot) {
    std::lock_guard<std::mutex> slot_lock(slot.mu);
    std::lock_guard<std::mutex> lock(retire_mu_);
    StampQueued(slot);
    unfenced_items_ = unfenced_bytes_ = 0;
  });
  const uint64_t safe = AdvanceWatermark();  // after the stamps: they are all below it
  std::vector<Item> ready;
  {
    std::lock_guard<std::mutex> lock(retire_mu_);
    TakeReady(safe, &ready);
  }
  for (const Item& it : ready) it.owner->Reclaim(it.offset, it.aux);
  return ready.size();
}

std::vector<Epoch::Item> Epoch::TakeOwned(Reclaimer* owner) {
  std::vector<Item> mine;
  auto take = [&](std::vector<Item>& items) {
    size_t kept = 0;
    for (Item& it : items) {
      if (it.owner == owner) {
        mine.push_back(it);
      } else {
        items[kept++] = it;
      }
    }
    items.resize(kept);
  };
  slots_.for_each([&](Slot& slot) {
    std::lock_guard<std::mutex> slot_lock(slot.mu);
    take(slot.queued);
    if (slot.queued.empty()) slot.queued_bytes = 0;
  });
  // The caller's own deferred items (its guard still open); other threads hold none while
  // the owner is quiescent (Drain's contract: no guard open that may touch its items).
  Slot& own = slots_.local();
  uint32_t kept = 0;
  for (uint32_t i = 0; i < own.deferred_n; ++i) {
    const Deferred& d = own.deferred[i];
    if (d.owner == owner) {
      mine.push_back({d.owner, d.offset, d.aux, 0});
    } else {
      own.deferred[kept++] = d;
    }
  }
  own.deferred_n = kept;
  std::lock_guard<std::mutex> lock(retire_mu_);
  take(retired_);
  return mine;
}

void Epoch::Drain(Reclaimer* owner) {
  for (const Item& it : TakeOwned(owner)) it.owner->Reclaim(it.offset, it.aux);
}

void Epoch::Discard(Reclaimer* owner) { TakeOwned(owner); }

size_t Epoch::pending() const {
  // The caller's own deferred items, held until its guard closes.
  size_t n = const_cast<PerThread<Slot>&>(slots_).local().deferred_n;
  slots_.for_each([&](Slot& slot) {
    std::lock_guard<std::mutex> slot_lock(slot.mu);
    n += slot.queued.size();
  });
  std::lock_guard<std::mutex> lock(retire_mu_);
  return n + retired_.size();
}

}  // namespace pmindex::pm
