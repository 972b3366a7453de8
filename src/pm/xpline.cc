#include "pm/xpline.h"

namespace pmindex::pm {

void XPLineModel::insert_slow(uint64_t tag, uint8_t bit) {
  size_t victim = 0;
  uint64_t oldest = UINT64_MAX;
  for (size_t i = 0; i < kEntries; ++i) {
    if (tags_[i] == tag) {
      dirty_[i] |= bit;
      age_[i] = ++tick_;
      mru_ = i;
      return;
    }
    if (age_[i] < oldest) {  // empty entries have age 0 and are taken first
      oldest = age_[i];
      victim = i;
    }
  }
  if (tags_[victim] != 0) evict(victim);
  tags_[victim] = tag;
  dirty_[victim] = bit;
  age_[victim] = ++tick_;
  mru_ = victim;
}

void XPLineModel::evict(size_t i) {
  __atomic_store_n(&media_writes_, media_writes_ + 1, __ATOMIC_RELAXED);
  if (__builtin_popcount(dirty_[i]) < 4)
    __atomic_store_n(&media_rmw_, media_rmw_ + 1, __ATOMIC_RELAXED);
  tags_[i] = 0;
  dirty_[i] = 0;
  age_[i] = 0;
}

void XPLineModel::drain() {
  // Oldest first, as the controller would.
  for (;;) {
    size_t victim = kEntries;
    uint64_t oldest = UINT64_MAX;
    for (size_t i = 0; i < kEntries; ++i) {
      if (tags_[i] != 0 && age_[i] < oldest) {
        oldest = age_[i];
        victim = i;
      }
    }
    if (victim == kEntries) return;
    evict(victim);
  }
}

void XPLineModel::reset() {
  for (size_t i = 0; i < kEntries; ++i) tags_[i] = age_[i] = dirty_[i] = 0;
  mru_ = 0;
  tick_ = 0;
  __atomic_store_n(&media_writes_, 0, __ATOMIC_RELAXED);
  __atomic_store_n(&media_rmw_, 0, __ATOMIC_RELAXED);
}

}  // namespace pmindex::pm
