#include "radix/pftree/epoch.h"

#include <cstdlib>
#include <cstdio>

namespace pmindex::pftree {

Epoch& Epoch::Get() {
  static Epoch* epoch = new Epoch();  // never destroyed: thread exits may still use it
  return *epoch;
}

Epoch::Guard::Guard() : slot_(&Get().slots_.local()) {
  if (slot_->depth++ > 0) return;
  slot_->announced.store(Get().global_.load(std::memory_order_relaxed),
                         std::memory_order_seq_cst);
}

Epoch::Guard::~Guard() {
  if (--slot_->depth > 0) return;
  slot_->announced.store(0, std::memory_order_release);
}

uint64_t Epoch::MinAnnounced() const {
  uint64_t min = UINT64_MAX;
  slots_.for_each([&](const Slot& s) {
    const uint64_t a = s.announced.load(std::memory_order_seq_cst);
    if (a != 0 && a < min) min = a;
  });
  return min;
}

void Epoch::Retire(Reclaimer* owner, uint64_t offset, void* aux) {
  std::lock_guard<std::mutex> lock(retire_mu_);
  uint64_t stamp = global_.fetch_add(1, std::memory_order_seq_cst);
  retired_.push_back({owner, offset, aux, stamp});
  if (++since_collect_ < 32) return;
  since_collect_ = 0;
  uint64_t min = MinAnnounced();
  size_t kept = 0;
  for (Item& it : retired_) {
    if (it.epoch < min) {
      it.owner->Reclaim(it.offset, it.aux);
    } else {
      retired_[kept++] = it;
    }
  }
  retired_.resize(kept);
}

size_t Epoch::Collect() {
  std::lock_guard<std::mutex> lock(retire_mu_);
  uint64_t min = MinAnnounced();
  size_t kept = 0;
  for (Item& it : retired_) {
    if (it.epoch < min) {
      it.owner->Reclaim(it.offset, it.aux);
    } else {
      retired_[kept++] = it;
    }
  }
  const size_t reclaimed = retired_.size() - kept;
  retired_.resize(kept);
  return reclaimed;
}

void Epoch::Drain(Reclaimer* owner) {
  std::lock_guard<std::mutex> lock(retire_mu_);
  size_t kept = 0;
  for (Item& it : retired_) {
    if (it.owner == owner) {
      it.owner->Reclaim(it.offset, it.aux);
    } else {
      retired_[kept++] = it;
    }
  }
  retired_.resize(kept);
}

}  // namespace pmindex::pftree
