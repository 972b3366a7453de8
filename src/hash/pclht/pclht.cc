// P-CLHT: creation, lock-free reads, and the writes (insert, update, upsert, remove). The
// crash argument of each path is in pclht.h; comments here name the step a store is.
#include "hash/pclht/pclht.h"

#include <cassert>
#include <cstdio>
#include <cstring>

#include "hash/common/traits.h"
#include "pm/alloc.h"
#include "pm/mix64.h"
#include "pm/mutant.h"
#include "pm/params.h"

namespace pmindex::hash::pclht {

IndexTraits PclhtIndex::Traits() {
  return HashTraits(
      "pclht", kPclhtKind,
      "concurrent: a lock per bucket chain; lock-free readers (they wait only for a writer "
      "persisting in their chain); resizes by one thread, freezing chains one by one",
      "P-CLHT (RECIPE): cache-line buckets of 3 slots, chained, resized 2x");
}

const IndexTraits& PclhtIndex::traits() const {
  static const IndexTraits traits = Traits();
  return traits;
}

std::string PclhtIndex::Params(uint64_t initial_buckets) {
  return "pclht bucket=64 slots=3 initial_buckets=" + std::to_string(initial_buckets);
}

namespace {
// log2 of "initial_buckets=N" in the pool's parameters (a power of two up to 2^20); the
// default if absent.
Result<uint32_t> InitialLog2(std::string_view params) {
  Result<uint64_t> n = pm::ParamUint("pclht", params, "initial_buckets",
                                     uint64_t{1} << kDefaultInitialLog2);
  if (!n.ok()) return n.status();
  if (*n == 0 || *n > (1u << 20) || (*n & (*n - 1)) != 0)
    return Status::InvalidArgument("pclht: initial_buckets must be a power of two up to 2^20");
  return static_cast<uint32_t>(__builtin_ctzll(*n));
}
}  // namespace

// The variants named in the pool's parameters (see pclht.h; doc/pclht.md "Variants").
Result<PclhtIndex::Variant> PclhtIndex::ParseVariant(std::string_view params) {
  Result<std::string_view> flush = pm::ParamChoice("pclht", params, "flush", {"each", "coalesce"},
                                                   "each");
  Result<std::string_view> unlock = pm::ParamChoice("pclht", params, "unlock", {"keep", "flush"},
                                                    "keep");
  Result<uint64_t> bucket_bytes = pm::ParamUint("pclht", params, "bucket_bytes", 64);
  if (!flush.ok()) return flush.status();
  if (!unlock.ok()) return unlock.status();
  if (!bucket_bytes.ok()) return bucket_bytes.status();
  if (*bucket_bytes != 64 && *bucket_bytes != 256)
    return Status::InvalidArgument("pclht: bucket_bytes must be 64 or 256");
  Variant v;
  v.coalesce_flush = *flush == "coalesce";
  v.flush_unlock = *unlock == "flush";
  v.group = *bucket_bytes == 256 ? 4 : 1;
  return v;
}

PclhtIndex::PclhtIndex(std::unique_ptr<Pool> pool, uint32_t initial_log2, Variant variant)
    : pool_(std::move(pool)),
      pc_(&pool_->persist_context()),
      base_(pool_->base()),
      root_(reinterpret_cast<PclhtRoot*>(pool_->root_area())),
      gen_(static_cast<uint32_t>(pool_->generation())),
      initial_log2_(initial_log2),
      variant_(variant) {}

Result<std::unique_ptr<Index>> PclhtIndex::Attach(std::unique_ptr<Pool> pool, bool fresh) {
  Result<uint32_t> log2 = InitialLog2(pool->index_params());
  if (!log2.ok()) return log2.status();
  Result<Variant> variant = ParseVariant(pool->index_params());
  if (!variant.ok()) return variant.status();
  auto* root = reinterpret_cast<PclhtRoot*>(pool->root_area());
  const uint64_t kind = static_cast<uint32_t>(kPclhtKind);
  // A pool without the magic is new only if nothing was ever carved (doc/format.md).
  const bool never_written = root->magic == 0 && pool->allocator().carved_chunks() == 0;
  if (fresh || never_written) {
    // The first table is made by the first write, after the allocator is rebuilt.
    *root = PclhtRoot{};
    root->kind = kind;
    pm::PersistContext& pc = pool->persist_context();
    pc.persist(root, sizeof(*root));
    root->magic = kPclhtMagic;  // commit: 8-byte store after the rest is durable
    pc.persist(&root->magic, 8);
  } else if (root->magic != kPclhtMagic || root->kind != kind) {
    return Status::Corruption(pool->path() + ": root area is not a pclht index");
  }
  return std::unique_ptr<Index>(new PclhtIndex(std::move(pool), *log2, *variant));
}

Status PclhtIndex::close() {
  if (pool_ == nullptr) return Status::OK();
  pool_->allocator().epoch().Drain(this);  // retired tables: their DRAM lists, their blocks
  Status s = pool_->Close();
  pool_.reset();
  return s;
}

Status PclhtIndex::check_key(std::string_view key) const {
  if (pool_ == nullptr) return Status::InvalidArgument("index is closed");
  if (key.size() != 8) return Status::InvalidArgument("keys are 8 bytes");
  return Status::OK();
}

uint64_t PclhtIndex::buckets() const {
  const uint64_t w = LoadAcquire(root_->table);
  return w == 0 ? 0 : uint64_t{1} << TableLog2(w);
}

Bucket* PclhtIndex::first_bucket(uint64_t table_word, uint64_t k) const {
  const uint64_t mask = (uint64_t{1} << TableLog2(table_word)) - 1;
  return entry(at(TableOffset(table_word)), pm::Mix64(k) & mask);
}

void PclhtIndex::link_groups(Bucket* table, uint32_t log2) {
  const uint64_t g = variant_.group;
  for (uint64_t i = 0; i < (g << log2); ++i)
    if (i % g != g - 1) table[i].next = off(&table[i + 1]);
}

// ---- reads -------------------------------------------------------------------------------

// One pass over the chain; a torn slot (an update or a refill under the read) restarts it.
bool PclhtIndex::read_chain(const Bucket* first, uint64_t k, uint64_t* value) const {
  for (;;) {
    bool torn = false;
    for (const Bucket* b = first; b != nullptr && !torn;) {
      for (int j = 0; j < kSlots; ++j) {
        const SlotRead r = ReadSlot(b->key[j], b->value[j], k, value);
        if (r == SlotRead::kHit) return true;
        if (r == SlotRead::kTorn) torn = true;
      }
      const uint64_t next = LoadAcquire(b->next);
      b = next == 0 ? nullptr : at(next);
    }
    if (!torn) return false;
  }
}

// What a reader read of a chain was written by writers that released the chain's lock, and
// so persisted it, or by the one holding it now: wait for that one to release it. A frozen
// (obsolete) chain has no writer.
void PclhtIndex::wait_for_persist(const uint64_t* lock) const {
  const uint64_t w = LoadAcquire(*lock);
  if (!VersionLock::Held(w, gen_) || VersionLock::Obsolete(w, gen_)) return;
  if (pm::mutant("pclht.reader_skips_persist_wait")) return;
  for (int spins = 0; LoadAcquire(*lock) == w; ++spins) VersionLock::Backoff(spins);
}

bool PclhtIndex::find(uint64_t k, uint64_t* value) const {
  for (;;) {
    const uint64_t tw = LoadAcquire(root_->table);
    if (tw == 0) return false;
    const Bucket* first = first_bucket(tw, k);
    const bool hit = read_chain(first, k, value);
    wait_for_persist(&first->lock);
    // A frozen chain was current only while its table was: read the new one if switched.
    if (LoadAcquire(root_->table) == tw) return hit;
  }
}

bool PclhtIndex::find_zero(uint64_t* value) const {
  for (;;) {
    const SlotRead r = ReadSlot(root_->zero_present, root_->zero_value, 1, value);
    if (r == SlotRead::kTorn) continue;
    wait_for_persist(&root_->zero_lock);
    return r == SlotRead::kHit;
  }
}

Status PclhtIndex::lookup(std::string_view key, std::string* value) {
  if (Status s = check_key(key); !s.ok()) return s;
  const uint64_t k = IntKey::Decode(key);
  uint64_t v = 0;
  bool hit;
  {
    auto guard = pool_->allocator().epoch_guard();
    hit = k == 0 ? find_zero(&v) : find(k, &v);
  }
  if (!hit) return Status::NotFound();
  if (value != nullptr) SetIntValue(value, v);
  return Status::OK();
}

// ---- writes ------------------------------------------------------------------------------

Status PclhtIndex::insert(std::string_view key, std::string_view value) {
  if (Status s = check_key(key); !s.ok()) return s;
  return put(Op::kInsert, IntKey::Decode(key), IntValue::Decode(value));
}
Status PclhtIndex::update(std::string_view key, std::string_view value) {
  if (Status s = check_key(key); !s.ok()) return s;
  return put(Op::kUpdate, IntKey::Decode(key), IntValue::Decode(value));
}
Status PclhtIndex::upsert(std::string_view key, std::string_view value) {
  if (Status s = check_key(key); !s.ok()) return s;
  return put(Op::kUpsert, IntKey::Decode(key), IntValue::Decode(value));
}
Status PclhtIndex::remove(std::string_view key) {
  if (Status s = check_key(key); !s.ok()) return s;
  return erase(IntKey::Decode(key));
}

// Crash: before the table word is durable the new table is unreachable (freed by the
// rebuild); it is persisted whole (zeroed: empty) before.
Status PclhtIndex::create_table() {
  std::lock_guard<std::mutex> lock(resize_mu_);
  if (LoadAcquire(root_->table) != 0) return Status::OK();
  const uint64_t bytes = table_bytes(initial_log2_);
  Result<uint64_t> block = pool_->allocator().allocate(bytes, /*zero=*/true);
  if (!block.ok()) return block.status();
  link_groups(at(block.value()), initial_log2_);
  pc_->persist(base_ + block.value(), bytes);
  StoreRelease(root_->table, TableWord(block.value(), initial_log2_));  // commit
  pc_->persist(&root_->table, 8);
  return Status::OK();
}

Result<Bucket*> PclhtIndex::lock_chain(uint64_t k, uint64_t* table_word) {
  for (int spins = 0;; ++spins) {
    const uint64_t tw = LoadAcquire(root_->table);
    if (tw == 0) {
      if (Status s = create_table(); !s.ok()) return s;
      continue;
    }
    Bucket* first = first_bucket(tw, k);
    if (VersionLock::LockInline(&first->lock, gen_)) {
      *table_word = tw;  // a chain not frozen belongs to the current table
      return first;
    }
    // Frozen by a resize: wait for the switch, or for the resize to give up (unfrozen).
    while (LoadAcquire(root_->table) == tw && VersionLock::IsObsolete(&first->lock, gen_))
      VersionLock::Backoff(spins++);
  }
}

PclhtIndex::Place PclhtIndex::locate(Bucket* first, uint64_t k) const {
  Place p;
  Bucket* prev = nullptr;
  for (Bucket* b = first; b != nullptr; prev = b, b = b->next == 0 ? nullptr : at(b->next)) {
    for (int j = 0; j < kSlots; ++j) {
      const uint64_t key = b->key[j];
      if (key == k) {
        p.found = b;
        p.found_slot = j;
        p.found_prev = prev;
        return p;
      }
      if (key == 0 && p.empty == nullptr) {
        p.empty = b;
        p.empty_slot = j;
      }
    }
    p.last = b;
  }
  return p;
}

// Into an empty slot of a locked chain: value persisted, then the key (commit) persisted.
// flush=coalesce (Woo et al.'s cache-flush coalescing): the value's own persist is left out.
// Crash: value and key share the bucket's one line; the key's store is a release store (a
// compiler barrier, and x86 keeps stores in order), so any write-back of the line that holds
// the key holds the value. That needs a line to reach the media whole, which ADR's WPQ
// gives and the campaign's torn images (8-byte atomicity) do not: doc/pclht.md "Variants".
void PclhtIndex::store_pair(Bucket* b, int slot, uint64_t k, uint64_t v) {
  StoreRelease(b->value[slot], v);
  if (variant_.coalesce_flush) {
    std::atomic_signal_fence(std::memory_order_seq_cst);  // the compiler keeps value, key
  } else if (!pm::mutant("pclht.skip_value_persist")) {
    pc_->persist(&b->value[slot], 8);
  }
  StoreRelease(b->key[slot], k);  // commit
  if (!pm::mutant("pclht.skip_commit_persist")) pc_->persist(&b->key[slot], 8);
}

// A new overflow bucket holding (k, v), persisted whole, then linked (commit), persisted.
Status PclhtIndex::chain_overflow(Bucket* last, uint64_t k, uint64_t v) {
  Result<uint64_t> block = pool_->allocator().allocate(sizeof(Bucket), /*zero=*/true);
  if (!block.ok()) return block.status();
  Bucket* b = at(block.value());
  b->key[0] = k;  // unreachable until linked: plain stores
  b->value[0] = v;
  if (!pm::mutant("pclht.skip_overflow_persist")) pc_->persist(b, sizeof(Bucket));
  StoreRelease(last->next, block.value());  // commit
  pc_->persist(&last->next, 8);
  overflow_.fetch_add(1, std::memory_order_relaxed);  // under the chain lock: see resize()
  return Status::OK();
}

// An overflow bucket left without keys leaves its chain (the chain is locked, its removes
// durable): one store of the previous bucket's `next`, persisted. Readers inside it go on
// through its own `next`, which stays; the epoch frees it after them. A bucket of the table's
// own groups (bucket_bytes=256) stays.
void PclhtIndex::unlink_if_empty(uint64_t table_word, Bucket* prev, Bucket* b) {
  if (in_table(table_word, b)) return;
  for (int j = 0; j < kSlots; ++j)
    if (b->key[j] != 0) return;
  StoreRelease(prev->next, b->next);  // commit
  pc_->persist(&prev->next, 8);
  overflow_.fetch_sub(1, std::memory_order_relaxed);
  pool_->allocator().retire(off(b));
}

Status PclhtIndex::put(Op op, uint64_t k, uint64_t v) {
  if (k == 0) return put_zero(op, v);
  if (op == Op::kUpdate && LoadAcquire(root_->table) == 0) return Status::NotFound();
  for (;;) {
    uint64_t tw = 0;
    bool chained = false;
    Status s;
    {
      auto guard = pool_->allocator().epoch_guard();
      Result<Bucket*> locked = lock_chain(k, &tw);
      if (!locked.ok()) {
        s = locked.status();
      } else {
        Bucket* first = locked.value();
        const Place p = locate(first, k);
        if (p.found != nullptr) {
          if (op == Op::kInsert) {
            s = Status::AlreadyExists();
          } else {
            StoreRelease(p.found->value[p.found_slot], v);  // commit of an update
            pc_->persist(&p.found->value[p.found_slot], 8);
          }
        } else if (op == Op::kUpdate) {
          s = Status::NotFound();
        } else if (p.empty != nullptr) {
          store_pair(p.empty, p.empty_slot, k, v);
        } else {
          s = chain_overflow(p.last, k, v);
          chained = s.ok();
        }
        unlock(first);
      }
    }
    if (s.IsOutOfSpace() && pool_->allocator().reclaim_now()) continue;  // retired blocks
    if (chained) maybe_resize(tw);  // outside the epoch guard: it retires the old table
    return s;
  }
}

Status PclhtIndex::erase(uint64_t k) {
  if (k == 0) return erase_zero();
  auto guard = pool_->allocator().epoch_guard();
  if (LoadAcquire(root_->table) == 0) return Status::NotFound();
  uint64_t tw = 0;
  Result<Bucket*> locked = lock_chain(k, &tw);
  if (!locked.ok()) return locked.status();
  Bucket* first = locked.value();
  const Place p = locate(first, k);
  if (p.found != nullptr) {
    StoreRelease(p.found->key[p.found_slot], uint64_t{0});  // commit
    if (!pm::mutant("pclht.skip_commit_persist")) pc_->persist(&p.found->key[p.found_slot], 8);
    if (p.found_prev != nullptr) unlink_if_empty(tw, p.found_prev, p.found);
  }
  unlock(first);
  return p.found != nullptr ? Status::OK() : Status::NotFound();
}

// Key 0's slot in the root area, under its own lock: the same stores as a bucket slot, with
// zero_present as the key word.
Status PclhtIndex::put_zero(Op op, uint64_t v) {
  VersionLock::Lock(&root_->zero_lock, gen_);
  const bool present = root_->zero_present == 1;
  Status s;
  if (present && op == Op::kInsert) {
    s = Status::AlreadyExists();
  } else if (!present && op == Op::kUpdate) {
    s = Status::NotFound();
  } else if (present) {
    StoreRelease(root_->zero_value, v);  // commit of an update
    pc_->persist(&root_->zero_value, 8);
  } else {
    StoreRelease(root_->zero_value, v);
    if (!pm::mutant("pclht.skip_value_persist")) pc_->persist(&root_->zero_value, 8);
    StoreRelease(root_->zero_present, uint64_t{1});  // commit
    if (!pm::mutant("pclht.skip_commit_persist")) pc_->persist(&root_->zero_present, 8);
  }
  VersionLock::Unlock(&root_->zero_lock, gen_);
  return s;
}

Status PclhtIndex::erase_zero() {
  VersionLock::Lock(&root_->zero_lock, gen_);
  const bool present = root_->zero_present == 1;
  if (present) {
    StoreRelease(root_->zero_present, uint64_t{0});  // commit
    if (!pm::mutant("pclht.skip_commit_persist")) pc_->persist(&root_->zero_present, 8);
  }
  VersionLock::Unlock(&root_->zero_lock, gen_);
  return present ? Status::OK() : Status::NotFound();
}

}  // namespace pmindex::hash::pclht
