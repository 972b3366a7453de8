#include "pm/epoch.h"

namespace pmindex::pm {

uint64_t Epoch::MinAnnounced() const {
  uint64_t min = UINT64_MAX;
  slots_.for_each([&](const Slot& s) {
    const uint64_t a = s.announced.load(std::memory_order_seq_cst);
    if (a != 0 && a < min) min = a;
  });
  return min;
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

void Epoch::Retire(Reclaimer* owner, uint64_t offset, void* aux) {
  std::vector<Item> ready;
  {
    std::lock_guard<std::mutex> lock(retire_mu_);
    const uint64_t stamp = global_.fetch_add(1, std::memory_order_seq_cst);
    retired_.push_back({owner, offset, aux, stamp});
    if (retired_.size() % kBatch == 0) TakeReady(MinAnnounced(), &ready);
  }
  // Outside the lock: a reclaimer may retire or take its own locks.
  for (const Item& it : ready) it.owner->Reclaim(it.offset, it.aux);
}

size_t Epoch::Collect() {
  std::vector<Item> ready;
  {
    std::lock_guard<std::mutex> lock(retire_mu_);
    TakeReady(MinAnnounced(), &ready);
  }
  for (const Item& it : ready) it.owner->Reclaim(it.offset, it.aux);
  return ready.size();
}

std::vector<Epoch::Item> Epoch::TakeOwned(Reclaimer* owner) {
  std::lock_guard<std::mutex> lock(retire_mu_);
  std::vector<Item> mine;
  size_t kept = 0;
  for (Item& it : retired_) {
    if (it.owner == owner) {
      mine.push_back(it);
    } else {
      retired_[kept++] = it;
    }
  }
  retired_.resize(kept);
  return mine;
}

void Epoch::Drain(Reclaimer* owner) {
  for (const Item& it : TakeOwned(owner)) it.owner->Reclaim(it.offset, it.aux);
}

void Epoch::Discard(Reclaimer* owner) { TakeOwned(owner); }

size_t Epoch::pending() const {
  std::lock_guard<std::mutex> lock(retire_mu_);
  return retired_.size();
}

}  // namespace pmindex::pm
