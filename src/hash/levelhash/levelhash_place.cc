// Level hashing: where a new item goes (a free slot, or one movement) and the two persistent
// writes every path is made of, Commit and Move. Crash arguments: levelhash.h.
#include <algorithm>

#include "hash/levelhash/levelhash.h"
#include "pm/mutant.h"
#include "pm/version_lock.h"

namespace pmindex::hash::levelhash {

using pm::VersionLock;

bool LevelHash::Held::Has(const Bucket* b) const {
  for (int i = 0; i < n; ++i)
    if (bucket[i] == b) return true;
  return false;
}

void LevelHash::Held::Changed(const Bucket* b) {
  for (int i = 0; i < n; ++i)
    if (bucket[i] == b) changed[i] = true;
}

bool LevelHash::LockExtra(Bucket* b, Held* held, bool* contended) {
  if (held == nullptr || held->Has(b)) return true;
  if (held->n == Held::kMax || !VersionLock::TryLock(&b->lock, gen_)) {
    *contended = true;
    return false;
  }
  held->Add(b);
  return true;
}

// The pair first, persisted; then the token byte that commits it, persisted. The mutant
// stores the token before one persist of the whole bucket: a torn image may then hold the
// new commit bit beside the old key or value.
void LevelHash::Commit(Bucket* b, int i, uint64_t key, uint64_t value, uint8_t token) {
  StoreWord(&b->slot[i].key, key);
  StoreWord(&b->slot[i].value, value);
  if (pm::mutant("levelhash.token_with_pair")) {
    StoreToken(b, token);
    pc_->persist(b, sizeof(Bucket));
    return;
  }
  pc_->persist(&b->slot[i], sizeof(Slot));  // durable before any token names it
  StoreToken(b, token);                      // the commit
  pc_->persist(&b->token, 1);
}

// Copy committed (with its moved-in bit) before the source is cleared: a crash leaves the
// item once or twice, never zero times; recovery clears the second copy (moved-in bits).
// The mutant clears the source first: a crash in between loses the item.
void LevelHash::Move(Bucket* from, int i, Bucket* to, int j) {
  const uint64_t key = LoadWord(&from->slot[i].key);
  const uint64_t value = LoadWord(&from->slot[i].value);
  const uint8_t source_mask = static_cast<uint8_t>(~(CommitBit(i) | MovedBit(i)));
  if (pm::mutant("levelhash.clear_source_first")) {
    StoreToken(from, LoadToken(from) & source_mask);
    pc_->persist(&from->token, 1);
  }
  Commit(to, j, key, value, LoadToken(to) | CommitBit(j) | MovedBit(j));
  StoreToken(from, LoadToken(from) & source_mask);
  pc_->persist(&from->token, 1);
  // Not persisted: a stale moved-in bit only makes recovery look for a copy that is gone.
  StoreToken(to, LoadToken(to) & static_cast<uint8_t>(~MovedBit(j)));
}

void LevelHash::PlaceAt(Bucket* b, int i, uint64_t key, uint64_t value, bool moved, Held* held,
                        Spot* spot) {
  Commit(b, i, key, value,
         static_cast<uint8_t>(LoadToken(b) | CommitBit(i) | (moved ? MovedBit(i) : 0)));
  if (held != nullptr) held->Changed(b);
  spot->bucket = b;
  spot->slot = i;
}

bool LevelHash::Place(const View& v, uint64_t key, uint64_t value, bool moved, Held* held,
                      bool* contended, Spot* spot) {
  return PlaceFree(v, key, value, moved, held, spot) ||
         PlaceByMove(v, true, key, value, moved, held, contended, spot) ||
         PlaceByMove(v, false, key, value, moved, held, contended, spot) ||
         PlaceByB2T(v, key, value, moved, held, contended, spot);
}

// The emptier of the two top buckets, then of the two bottom ones (the paper's order).
bool LevelHash::PlaceFree(const View& v, uint64_t key, uint64_t value, bool moved, Held* held,
                          Spot* spot) {
  const Pair t = BucketsOf(key, v.bits);
  Bucket* level[2][2] = {{v.top + t.first, v.top + t.second},
                         {v.bottom + (t.first >> 1), v.bottom + (t.second >> 1)}};
  for (auto& pair : level) {
    if (UsedSlots(LoadToken(pair[1])) < UsedSlots(LoadToken(pair[0]))) std::swap(pair[0], pair[1]);
    for (Bucket* b : pair) {
      const int i = FreeSlot(LoadToken(b));
      if (i >= 0) {
        PlaceAt(b, i, key, value, moved, held, spot);
        return true;
      }
    }
  }
  return false;
}

bool LevelHash::TryMoveTo(Bucket* from, int i, Bucket* to, Held* held, bool* contended) {
  const bool extra = held != nullptr && !held->Has(to);
  if (!LockExtra(to, held, contended)) return false;
  const int j = FreeSlot(LoadToken(to));
  if (j < 0) {
    if (extra) {  // not used: give it back unchanged
      VersionLock::Unlock(&to->lock, gen_, false);
      --held->n;
    }
    return false;
  }
  Move(from, i, to, j);
  if (held != nullptr) {
    held->Changed(to);
    held->Changed(from);
  }
  return true;
}

// One movement inside a level: an item of one of the key's buckets goes to its other bucket
// of that level, and the key takes its slot.
bool LevelHash::PlaceByMove(const View& v, bool top, uint64_t key, uint64_t value, bool moved,
                            Held* held, bool* contended, Spot* spot) {
  const uint64_t bits = top ? v.bits : v.bits - 1;
  Bucket* base = top ? v.top : v.bottom;
  const Pair k = BucketsOf(key, bits);
  const uint64_t xs[2] = {k.first, k.second};
  for (int c = 0; c < (k.first == k.second ? 1 : 2); ++c) {
    const uint64_t x = xs[c];
    Bucket* b = base + x;
    for (int i = 0; i < kSlots; ++i) {
      if ((LoadToken(b) & CommitBit(i)) == 0) continue;
      const Pair m = BucketsOf(LoadWord(&b->slot[i].key), bits);
      const uint64_t alt = m.first == x ? m.second : m.first;
      if (alt == x) continue;
      if (TryMoveTo(b, i, base + alt, held, contended)) {
        PlaceAt(b, i, key, value, moved, held, spot);
        return true;
      }
    }
  }
  return false;
}

// Bottom-to-top movement: an item of one of the key's bottom buckets goes to one of its top
// buckets, and the key takes its slot.
bool LevelHash::PlaceByB2T(const View& v, uint64_t key, uint64_t value, bool moved, Held* held,
                           bool* contended, Spot* spot) {
  const Pair k = BucketsOf(key, v.bits - 1);
  const uint64_t xs[2] = {k.first, k.second};
  for (int c = 0; c < (k.first == k.second ? 1 : 2); ++c) {
    Bucket* b = v.bottom + xs[c];
    for (int i = 0; i < kSlots; ++i) {
      if ((LoadToken(b) & CommitBit(i)) == 0) continue;
      const Pair m = BucketsOf(LoadWord(&b->slot[i].key), v.bits);
      if (TryMoveTo(b, i, v.top + m.first, held, contended) ||
          (m.second != m.first && TryMoveTo(b, i, v.top + m.second, held, contended))) {
        PlaceAt(b, i, key, value, moved, held, spot);
        return true;
      }
    }
  }
  return false;
}

}  // namespace pmindex::hash::levelhash
