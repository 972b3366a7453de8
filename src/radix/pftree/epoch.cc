#include "radix/pftree/epoch.h"

#include <cstdlib>
#include <cstdio>

namespace pmindex::pftree {

// The calling thread's slot in Epoch::Get(), returned when the thread exits.
struct ThreadSlotHolder {
  int id = -1;
  int depth = 0;
  ~ThreadSlotHolder() {
    if (id >= 0) Epoch::Get().ReleaseSlot(id);
  }
};

namespace {
thread_local ThreadSlotHolder t_holder;
}  // namespace

Epoch& Epoch::Get() {
  static Epoch* epoch = new Epoch();  // never destroyed: thread exits may still use it
  return *epoch;
}

int Epoch::AcquireSlot() {
  std::lock_guard<std::mutex> lock(slot_mu_);
  if (!free_ids_.empty()) {
    int id = free_ids_.back();
    free_ids_.pop_back();
    return id;
  }
  if (next_id_ >= kMaxThreads) {
    std::fprintf(stderr, "pftree: more than %d threads at once\n", kMaxThreads);
    std::abort();
  }
  return next_id_++;
}

void Epoch::ReleaseSlot(int id) {
  std::lock_guard<std::mutex> lock(slot_mu_);
  free_ids_.push_back(id);
}

Epoch::Guard::Guard() {
  ThreadSlotHolder& h = t_holder;
  if (h.depth++ > 0) return;
  Epoch& e = Get();
  if (h.id < 0) h.id = e.AcquireSlot();
  e.slots_[h.id].announced.store(e.global_.load(std::memory_order_relaxed),
                                 std::memory_order_seq_cst);
}

Epoch::Guard::~Guard() {
  ThreadSlotHolder& h = t_holder;
  if (--h.depth > 0) return;
  Get().slots_[h.id].announced.store(0, std::memory_order_release);
}

uint64_t Epoch::MinAnnounced() const {
  uint64_t min = UINT64_MAX;
  int n;
  {
    // next_id_ only grows; reading it racily is fine under the slot mutex-free fast path,
    // but keep it simple and exact.
    std::lock_guard<std::mutex> lock(const_cast<std::mutex&>(slot_mu_));
    n = next_id_;
  }
  for (int i = 0; i < n; ++i) {
    uint64_t a = slots_[i].announced.load(std::memory_order_seq_cst);
    if (a != 0 && a < min) min = a;
  }
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
