// Level hashing: the table (its two-slot commit in the root area), the first levels, the
// in-place resize, and recovery (duplicates of interrupted moves, an interrupted resize).
// Crash arguments: levelhash.h.
#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <vector>

#include "hash/levelhash/levelhash.h"
#include "pm/alloc.h"
#include "pm/mutant.h"
#include "pm/params.h"
#include "pm/seqlock.h"

namespace pmindex::hash::levelhash {

namespace {

uint64_t LevelBytes(uint64_t bits) { return (uint64_t{1} << bits) * sizeof(Bucket); }

}  // namespace

// "initial_top_bits=N" in the pool's index parameters (the registration's default: 2),
// clamped to [1, 24]; a value that is not a number counts as absent (Attach has refused it).
uint64_t LevelHash::InitialBits() const {
  Result<uint64_t> n = pm::ParamUint("levelhash", pool_->index_params(), "initial_top_bits", 2);
  if (!n.ok()) return 2;
  return *n < 1 ? 1 : *n > 24 ? 24 : *n;
}

// The current table, checked against the pool: Corruption for offsets outside it or sizes
// that cannot be.
Status LevelHash::LoadTable(Table* t) const {
  const uint64_t active = root_->active;
  if (active > 1)
    return Status::Corruption("levelhash: root's active table is " + std::to_string(active));
  *t = root_->table[active];
  if (t->top_bits == 0) {
    if (t->top != 0 || t->bottom != 0 || t->resize_top != 0)
      return Status::Corruption("levelhash: an empty table names levels");
    return Status::OK();
  }
  if (t->top_bits > kMaxTopBits - 1)
    return Status::Corruption("levelhash: top level of 2^" + std::to_string(t->top_bits) +
                              " buckets");
  auto inside = [&](uint64_t off, uint64_t bits) {
    return off >= 4096 && off % 64 == 0 && off < pool_->size() &&
           LevelBytes(bits) <= pool_->size() - off;
  };
  const uint64_t bits = t->top_bits;
  if (!inside(t->top, bits) || !inside(t->bottom, bits - 1) ||
      (t->resize_top != 0 && !inside(t->resize_top, bits + 1)) || t->top == t->bottom ||
      t->resize_top == t->top || t->resize_top == t->bottom) {
    return Status::Corruption("levelhash: a level lies outside the pool or twice in the table");
  }
  return Status::OK();
}

LevelHash::View LevelHash::ViewOf(const Table& t) const {
  View v;
  v.bits = t.top_bits;
  if (v.bits != 0) {
    v.top = pool_->at<Bucket>(t.top);
    v.bottom = pool_->at<Bucket>(t.bottom);
  }
  return v;
}

// The new table into the inactive slot, persisted; then `active`, persisted: the commit.
void LevelHash::Publish(const Table& t) {
  const uint64_t next = 1 - root_->active;
  root_->table[next] = t;
  pc_->persist(&root_->table[next], sizeof(Table));
  __atomic_store_n(&root_->active, next, __ATOMIC_RELEASE);
  pc_->persist(&root_->active, 8);
}

// A zeroed level, persisted whole before anything can name it.
Result<uint64_t> LevelHash::NewLevel(uint64_t bits) {
  pm::Allocator& alloc = pool_->allocator();
  Result<uint64_t> off = alloc.allocate(LevelBytes(bits), true);
  if (!off.ok() && alloc.reclaim_now()) off = alloc.allocate(LevelBytes(bits), true);
  if (!off.ok()) return off.status();
  pc_->persist(pool_->at<char>(*off), LevelBytes(bits));
  return off;
}

Status LevelHash::Grow(uint64_t seen_bits) {
  std::unique_lock lock(table_lock_);
  if (bits_.load(std::memory_order_relaxed) != seen_bits) return Status::OK();  // done by another
  return seen_bits == 0 ? Create() : Expand(CurrentView());
}

// The first levels, made by the first insert.
Status LevelHash::Create() {
  const uint64_t bits = InitialBits();
  Result<uint64_t> top = NewLevel(bits);
  if (!top.ok()) return top.status();
  Result<uint64_t> bottom = NewLevel(bits - 1);
  if (!bottom.ok()) {
    pool_->allocator().free(*top);
    return bottom.status();
  }
  const Table t{*top, *bottom, bits, 0};
  Publish(t);
  SetView(ViewOf(t));
  return Status::OK();
}

// 2^n -> 2^(n+1): a new top level, the old top becomes the bottom, the old bottom's items
// move up. The mutant commits the new table before the items moved: a crash in between
// loses every item of the old bottom level.
Status LevelHash::Expand(const View& v) {
  Table t;
  if (Status s = LoadTable(&t); !s.ok()) return s;
  if (t.top_bits >= kMaxTopBits - 1) return Status::OutOfSpace("levelhash: table at its largest");
  Result<uint64_t> fresh = NewLevel(v.bits + 1);
  if (!fresh.ok()) return fresh.status();
  t.resize_top = *fresh;
  const Table next{*fresh, t.top, t.top_bits + 1, 0};
  const bool early = pm::mutant("levelhash.publish_before_rehash");
  Publish(early ? next : t);  // the resize is durable before any item moves
  const uint64_t seq = __atomic_load_n(&resize_seq_, __ATOMIC_RELAXED);
  pm::WriterBegin(&resize_seq_, seq + 1);  // readers wait, then retry
  Status s = Rehash(t);
  if (s.ok() && !early) Publish(next);
  if (s.ok()) SetView(ViewOf(next));
  __atomic_store_n(&resize_seq_, seq + 2, __ATOMIC_RELEASE);
  if (!s.ok()) return s;
  pool_->allocator().retire(t.bottom);  // readers of the old view may still be in it
  return Status::OK();
}

// The items of old bottom buckets [first, last) that find a free slot in their new top
// buckets move together: every pair written and flushed, one fence; every token bit (with
// its moved-in bit), one fence; the sources' bits cleared (one store per bucket), one fence.
// A crash in between leaves each item in its source, or in both (a moved-in copy: recovery
// keeps one). Three fences per round instead of three per item, so a resize, and a
// recovery that finishes one, runs few fences. `reserved` (one byte per new top bucket,
// zero outside a round) holds the slots taken whose tokens are not set yet.
void LevelHash::RehashRound(const View& next, Bucket* old, uint64_t first, uint64_t last,
                            std::vector<uint8_t>* reserved) {
  struct Planned {
    Bucket* from;
    int i;
    Bucket* to;
    int j;
  };
  std::vector<Planned> plan;
  for (uint64_t x = first; x < last; ++x) {
    Bucket* b = old + x;
    for (int i = 0; i < kSlots; ++i) {
      if ((LoadToken(b) & CommitBit(i)) == 0) continue;
      const Pair t = BucketsOf(LoadWord(&b->slot[i].key), next.bits);
      uint64_t pair[2] = {t.first, t.second};
      auto used = [&](uint64_t d) { return LoadToken(next.top + d) | (*reserved)[d]; };
      if (UsedSlots(used(pair[1])) < UsedSlots(used(pair[0]))) std::swap(pair[0], pair[1]);
      for (uint64_t d : pair) {
        const int j = FreeSlot(used(d));
        if (j < 0) continue;
        Bucket* to = next.top + d;
        StoreWord(&to->slot[j].key, LoadWord(&b->slot[i].key));
        StoreWord(&to->slot[j].value, LoadWord(&b->slot[i].value));
        pc_->flush(&to->slot[j], sizeof(Slot));
        (*reserved)[d] |= CommitBit(j);
        plan.push_back({b, i, to, j});
        break;
      }
    }
  }
  if (plan.empty()) return;
  pc_->fence();  // the pairs are durable before any token names them
  for (const Planned& p : plan) {
    StoreToken(p.to, LoadToken(p.to) | CommitBit(p.j) | MovedBit(p.j));
    pc_->flush(&p.to->token, 1);
    (*reserved)[p.to - next.top] = 0;
  }
  pc_->fence();  // the copies are committed before their sources go
  for (const Planned& p : plan) {
    StoreToken(p.from, static_cast<uint8_t>(LoadToken(p.from) & ~(CommitBit(p.i) | MovedBit(p.i))));
    pc_->flush(&p.from->token, 1);
  }
  pc_->fence();
  for (const Planned& p : plan)  // not persisted: recovery clears a stale moved-in bit
    StoreToken(p.to, LoadToken(p.to) & static_cast<uint8_t>(~MovedBit(p.j)));
}

// Moves every item of t.bottom into the table {t.resize_top, t.top}: in rounds of old
// bottom buckets, the items that fit in their new top buckets together (RehashRound), then
// the others one by one (a free slot or one movement, each committed before its source is
// cleared).
Status LevelHash::Rehash(const Table& t) {
  View next;
  next.top = pool_->at<Bucket>(t.resize_top);
  next.bottom = pool_->at<Bucket>(t.top);
  next.bits = t.top_bits + 1;
  Bucket* old = pool_->at<Bucket>(t.bottom);
  const uint64_t buckets = uint64_t{1} << (t.top_bits - 1);
  std::vector<uint8_t> reserved(uint64_t{1} << next.bits, 0);
  // Old bottom buckets per round: its destinations (up to 64 lines) stay in the media
  // model's 64-XPLine write-combining buffer between their pair and token flushes.
  constexpr uint64_t kRound = 16;
  for (uint64_t first = 0; first < buckets; first += kRound) {
    const uint64_t last = std::min(buckets, first + kRound);
    RehashRound(next, old, first, last, &reserved);
    for (uint64_t x = first; x < last; ++x) {
      Bucket* b = old + x;
      for (int i = 0; i < kSlots; ++i) {
        if ((LoadToken(b) & CommitBit(i)) == 0) continue;
        bool contended = false;
        Spot spot;
        const uint64_t key = LoadWord(&b->slot[i].key);
        if (!Place(next, key, LoadWord(&b->slot[i].value), true, nullptr, &contended, &spot)) {
          return Status::Corruption("levelhash: resize found no slot for key " +
                                    std::to_string(key));
        }
        StoreToken(b, static_cast<uint8_t>(LoadToken(b) & ~(CommitBit(i) | MovedBit(i))));
        pc_->persist(&b->token, 1);
        StoreToken(spot.bucket,
                   static_cast<uint8_t>(LoadToken(spot.bucket) & ~MovedBit(spot.slot)));
      }
    }
  }
  return Status::OK();
}

// Every other committed copy of the key in `keep`'s slot, in any of its candidate buckets.
void LevelHash::ClearDuplicatesOf(const Table& t, Bucket* keep, int keep_slot) {
  const uint64_t key = keep->slot[keep_slot].key;
  struct Level {
    uint64_t off, bits;
  } levels[3] = {{t.top, t.top_bits}, {t.bottom, t.top_bits - 1}, {t.resize_top, t.top_bits + 1}};
  for (const Level& l : levels) {
    if (l.off == 0) continue;
    const Pair p = BucketsOf(key, l.bits);
    for (uint64_t x : {p.first, p.second}) {
      Bucket* b = pool_->at<Bucket>(l.off) + x;
      for (int i = 0; i < kSlots; ++i) {
        if ((b == keep && i == keep_slot) || (b->token & CommitBit(i)) == 0 ||
            b->slot[i].key != key) {
          continue;
        }
        StoreToken(b, static_cast<uint8_t>(b->token & ~(CommitBit(i) | MovedBit(i))));
        pc_->persist(&b->token, 1);
      }
    }
  }
}

// Recovery: every slot whose moved-in bit survived keeps its item and every other copy of
// it goes; then the bits are cleared. Idempotent, so a crash during it is recovered again.
void LevelHash::ClearMovedDuplicates(const Table& t) {
  struct Level {
    uint64_t off, bits;
  } levels[3] = {{t.top, t.top_bits}, {t.bottom, t.top_bits - 1}, {t.resize_top, t.top_bits + 1}};
  for (const Level& l : levels) {
    if (l.off == 0) continue;
    Bucket* level = pool_->at<Bucket>(l.off);
    for (uint64_t x = 0; x < (uint64_t{1} << l.bits); ++x) {
      Bucket* b = level + x;
      if ((b->token & ~kCommitMask) == 0) continue;
      for (int i = 0; i < kSlots; ++i)
        if ((b->token & MovedBit(i)) && (b->token & CommitBit(i))) ClearDuplicatesOf(t, b, i);
      StoreToken(b, b->token & kCommitMask);
      pc_->persist(&b->token, 1);
    }
  }
}

Status LevelHash::recover() {
  if (pool_ == nullptr) return Status::InvalidArgument("index is closed");
  gen_ = static_cast<uint32_t>(pool_->generation());
  Table t;
  if (Status s = LoadTable(&t); !s.ok()) return s;
  if (t.top_bits != 0 && !pm::mutant("levelhash.recovery_keeps_duplicate")) ClearMovedDuplicates(t);
  if (t.resize_top != 0) {  // finish the resize: the rest of the old bottom moves up
    if (Status s = Rehash(t); !s.ok()) return s;
    t = Table{t.resize_top, t.top, t.top_bits + 1, 0};
    Publish(t);
  }
  for (View& v : views_) v = View();
  __atomic_store_n(&resize_seq_, 0, __ATOMIC_RELAXED);
  SetView(ViewOf(t));
  return Status::OK();
}

}  // namespace pmindex::hash::levelhash
