// Level hashing: the full iteration, verify, stats, the block visitor and the registration.
#include <mutex>
#include <shared_mutex>

#include "hash/levelhash/levelhash.h"
#include "pm/alloc.h"
#include "pm/version_lock.h"

namespace pmindex::hash::levelhash {

Status LevelHash::for_each(ScanCallback fn) {
  if (pool_ == nullptr) return Status::InvalidArgument("index is closed");
  std::unique_lock lock(table_lock_);  // writers wait: one state of the table
  const View v = CurrentView();
  if (v.bits == 0) return Status::OK();
  for (int level = 0; level < 2; ++level) {
    Bucket* base = level == 0 ? v.top : v.bottom;
    const uint64_t n = uint64_t{1} << (level == 0 ? v.bits : v.bits - 1);
    for (uint64_t x = 0; x < n; ++x) {
      const uint8_t t = LoadToken(base + x);
      for (int i = 0; i < kSlots; ++i) {
        if ((t & CommitBit(i)) == 0) continue;
        const IntKey key(LoadWord(&base[x].slot[i].key));
        const IntValue value(LoadWord(&base[x].slot[i].value));
        if (!fn(key.view(), value)) return Status::OK();
      }
    }
  }
  return Status::OK();
}

namespace {

// How many committed slots of the key's candidate buckets (both levels) hold it.
int Copies(const LevelHash::View& v, uint64_t key) {
  const Pair t = BucketsOf(key, v.bits);
  const Bucket* c[4] = {v.top + t.first, v.top + t.second, v.bottom + (t.first >> 1),
                        v.bottom + (t.second >> 1)};
  int copies = 0;
  for (int k = 0; k < 4; ++k) {
    if ((k == 1 && c[1] == c[0]) || (k == 3 && c[3] == c[2])) continue;
    for (int i = 0; i < kSlots; ++i)
      copies += (LoadToken(c[k]) & CommitBit(i)) && LoadWord(&c[k]->slot[i].key) == key;
  }
  return copies;
}

}  // namespace

// The table is the DRAM view, no resize is in progress, and every committed item lies in
// one of its own buckets, once; no moved-in bit or lock is left set.
Status LevelHash::verify() {
  if (pool_ == nullptr) return Status::InvalidArgument("index is closed");
  std::unique_lock lock(table_lock_);
  Table t;
  if (Status s = LoadTable(&t); !s.ok()) return s;
  if (t.resize_top != 0) return Status::Corruption("levelhash: a resize is in progress");
  const View v = CurrentView();
  if (v.bits != t.top_bits || (v.bits != 0 && (pool_->offset_of(v.top) != t.top ||
                                                pool_->offset_of(v.bottom) != t.bottom))) {
    return Status::Corruption("levelhash: the DRAM view differs from the table");
  }
  for (int level = 0; level < 2 && v.bits != 0; ++level) {
    Bucket* base = level == 0 ? v.top : v.bottom;
    const uint64_t bits = level == 0 ? v.bits : v.bits - 1;
    for (uint64_t x = 0; x < (uint64_t{1} << bits); ++x) {
      const Bucket* b = base + x;
      auto where = [&] {
        return (level == 0 ? "top bucket " : "bottom bucket ") + std::to_string(x);
      };
      if (b->token & ~kCommitMask)
        return Status::Corruption("levelhash: " + where() + ": moved-in bit set");
      if (pm::VersionLock::Held(__atomic_load_n(&b->lock, __ATOMIC_RELAXED), gen_))
        return Status::Corruption("levelhash: " + where() + " locked");
      for (int i = 0; i < kSlots; ++i) {
        if ((b->token & CommitBit(i)) == 0) continue;
        const uint64_t key = b->slot[i].key;
        const Pair p = BucketsOf(key, bits);
        if (p.first != x && p.second != x)
          return Status::Corruption("levelhash: key " + std::to_string(key) + " in " + where() +
                                    ", not its own");
        if (Copies(v, key) != 1)
          return Status::Corruption("levelhash: key " + std::to_string(key) + " stored twice");
      }
    }
  }
  return Status::OK();
}

IndexStats LevelHash::stats() {
  IndexStats st;
  if (pool_ == nullptr) return st;
  std::shared_lock lock(table_lock_);
  const View v = CurrentView();
  if (v.bits == 0) return st;
  const uint64_t top = uint64_t{1} << v.bits, bottom = top / 2;
  for (uint64_t x = 0; x < top; ++x) st.keys += UsedSlots(LoadToken(v.top + x));
  for (uint64_t x = 0; x < bottom; ++x) st.keys += UsedSlots(LoadToken(v.bottom + x));
  pm::Allocator& alloc = pool_->allocator();
  st.pm_bytes = alloc.block_size(pool_->offset_of(v.top)) +
                alloc.block_size(pool_->offset_of(v.bottom));
  const uint64_t slots = (top + bottom) * kSlots;
  st.nodes = {{"top_buckets", top},
              {"bottom_buckets", bottom},
              {"slots", slots},
              {"load_factor_permille", st.keys * 1000 / slots}};
  return st;
}

Status LevelHash::visit_blocks(BlockVisitor& visitor) {
  if (pool_ == nullptr) return Status::OK();
  Table t;
  if (Status s = LoadTable(&t); !s.ok()) return s;
  for (uint64_t off : {t.top, t.bottom, t.resize_top}) {
    if (off == 0) continue;
    if (Status s = visitor.visit(off); !s.ok()) return s;
  }
  return Status::OK();
}

IndexRegistration Registration() {
  IndexRegistration r;
  r.traits = LevelHash::Traits();
  r.attach = [](std::unique_ptr<Pool> pool, bool fresh) {
    return LevelHash::Attach(std::move(pool), fresh);
  };
  r.params = "levelhash initial_top_bits=2 slots=4 bucket_bytes=80";
  r.mutants = {
      {"levelhash.token_with_pair",
       "a slot's token is stored with its key and value and the three persisted together: a "
       "torn line commits a half-written pair"},
      {"levelhash.clear_source_first",
       "a movement clears the item's old slot before its new slot is committed: a crash in "
       "between loses the item", "levelhash-moves"},
      {"levelhash.publish_before_rehash",
       "a resize commits the new table (levels and size) before the old bottom level's items "
       "moved into the new top level: a crash in between loses them", "levelhash-moves"},
      {"levelhash.recovery_keeps_duplicate",
       "recovery leaves the moved-in marks and the second copy of an item a crashed movement "
       "left: the key is stored twice (a remove then brings it back)", "levelhash-moves"},
  };
  r.crash_scenarios = {"levelhash-moves"};
  return r;
}

}  // namespace pmindex::hash::levelhash
