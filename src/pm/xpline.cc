#include "pm/xpline.h"

namespace pmindex::pm {

int XPLineModel::find(uint64_t tag) const {
  for (size_t h = home(tag);; h = (h + 1) & (kIndexSlots - 1)) {
    const uint8_t e = index_[h];
    if (e == 0) return -1;
    if (tags_[e - 1] == tag) return e - 1;
  }
}

void XPLineModel::index_insert(uint64_t tag, uint8_t entry) {
  size_t h = home(tag);
  while (index_[h] != 0) h = (h + 1) & (kIndexSlots - 1);
  index_[h] = static_cast<uint8_t>(entry + 1);
}

// Linear-probing delete with backward shift: no tombstones, probe chains stay short.
void XPLineModel::index_erase(uint64_t tag) {
  size_t h = home(tag);
  while (tags_[index_[h] - 1] != tag) h = (h + 1) & (kIndexSlots - 1);
  size_t hole = h;
  for (size_t j = (hole + 1) & (kIndexSlots - 1); index_[j] != 0; j = (j + 1) & (kIndexSlots - 1)) {
    const size_t k = home(tags_[index_[j] - 1]);
    // Move j into the hole unless its home lies cyclically in (hole, j].
    const bool stays = hole <= j ? (hole < k && k <= j) : (hole < k || k <= j);
    if (!stays) {
      index_[hole] = index_[j];
      hole = j;
    }
  }
  index_[hole] = 0;
}

void XPLineModel::move_to_head(uint8_t i) {
  if (i == head_) return;
  const uint8_t tail = prev_[head_];
  if (i != tail) {
    // Unlink i, then put it between the tail and the head.
    next_[prev_[i]] = next_[i];
    prev_[next_[i]] = prev_[i];
    next_[tail] = i;
    prev_[i] = tail;
    next_[i] = head_;
    prev_[head_] = i;
  }
  // (The tail is already just before the head in the ring: making it the head is a rotation.)
  head_ = i;
}

void XPLineModel::insert_slow(uint64_t tag, uint8_t bit) {
  const int hit = find(tag);
  if (hit >= 0) {
    dirty_[hit] |= bit;
    move_to_head(static_cast<uint8_t>(hit));
    return;
  }
  const uint8_t victim = prev_[head_];  // least recently used (or an empty entry)
  if (tags_[victim] != 0) evict(victim);
  tags_[victim] = tag;
  index_insert(tag, victim);
  dirty_[victim] = bit;
  move_to_head(victim);
}

void XPLineModel::evict(uint8_t i) {
  __atomic_store_n(&media_writes_, media_writes_ + 1, __ATOMIC_RELAXED);
  if (__builtin_popcount(dirty_[i]) < 4) {
    __atomic_store_n(&media_rmw_, media_rmw_ + 1, __ATOMIC_RELAXED);
  }
  index_erase(tags_[i]);
  tags_[i] = 0;
  dirty_[i] = 0;
}

void XPLineModel::drain() {
  // From the least recently used end; emptied entries stay where they are, which keeps the
  // empty ones behind (towards the tail of) nothing that is still buffered.
  uint8_t i = prev_[head_];
  for (size_t n = 0; n < kEntries; ++n) {
    if (tags_[i] != 0) evict(i);
    i = prev_[i];
  }
}

void XPLineModel::reset() {
  for (size_t i = 0; i < kIndexSlots; ++i) index_[i] = 0;
  for (size_t i = 0; i < kEntries; ++i) {
    tags_[i] = 0;
    dirty_[i] = 0;
    prev_[i] = static_cast<uint8_t>(i == 0 ? kEntries - 1 : i - 1);
    next_[i] = static_cast<uint8_t>(i == kEntries - 1 ? 0 : i + 1);
  }
  head_ = 0;
  __atomic_store_n(&media_writes_, 0, __ATOMIC_RELAXED);
  __atomic_store_n(&media_rmw_, 0, __ATOMIC_RELAXED);
  __atomic_store_n(&wpq_inserts_, 0, __ATOMIC_RELAXED);
}

}  // namespace pmindex::pm
