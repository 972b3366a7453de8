// P-CLHT maintenance: recovery (nothing to repair), the block visitor, verify, stats, the
// full iteration, and the registration.
#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include "hash/pclht/pclht.h"
#include "pm/alloc.h"
#include "pm/mix64.h"

namespace pmindex::hash::pclht {

Status PclhtIndex::check_table_word(uint64_t word) const {
  const uint64_t o = TableOffset(word);
  const uint32_t log2 = TableLog2(word);
  if (log2 > kMaxLog2 || o < 4096 || o + table_bytes(log2) > pool_->size()) {
    return Status::Corruption("table word " + std::to_string(word) + " outside the pool");
  }
  if (pool_->allocator().block_size(o) < table_bytes(log2)) {
    return Status::Corruption("table at offset " + std::to_string(o) + " is not a block of " +
                              std::to_string(table_bytes(log2)) + " bytes");
  }
  return Status::OK();
}

Status PclhtIndex::walk(uint64_t table_word,
                        FunctionRef<Status(uint64_t, Bucket*, uint64_t)> fn) const {
  if (table_word == 0) return Status::OK();
  if (Status s = check_table_word(table_word); !s.ok()) return s;
  const uint64_t n = uint64_t{1} << TableLog2(table_word);
  const uint64_t max_buckets = pool_->size() / sizeof(Bucket);
  uint64_t visited = 0;
  Bucket* table = at(TableOffset(table_word));
  for (uint64_t i = 0; i < n; ++i) {
    for (uint64_t o = off(entry(table, i)); o != 0; o = LoadAcquire(at(o)->next)) {
      if (o % sizeof(Bucket) != 0 || o < 4096 || o + sizeof(Bucket) > pool_->size()) {
        return Status::Corruption("overflow bucket offset " + std::to_string(o) +
                                  " outside the pool (chain " + std::to_string(i) + ")");
      }
      if (++visited > max_buckets) return Status::Corruption("a bucket chain has a cycle");
      if (Status s = fn(i, at(o), o); !s.ok()) return s;
    }
  }
  return Status::OK();
}

// Nothing to finish or undo: every change commits with one store, locks carry the pool
// generation. Counts the overflow buckets (the resize trigger's DRAM counter).
Status PclhtIndex::recover() {
  if (pool_ == nullptr) return Status::InvalidArgument("index is closed");
  gen_ = static_cast<uint32_t>(pool_->generation());
  if (root_->zero_present > 1) return Status::Corruption("key 0's present word is not 0 or 1");
  const uint64_t tw = root_->table;
  uint64_t overflow = 0;
  Status s = walk(tw, [&](uint64_t, Bucket* b, uint64_t) {
    if (!in_table(tw, b)) ++overflow;
    return Status::OK();
  });
  overflow_.store(overflow, std::memory_order_relaxed);
  return s;
}

// The current table and the overflow buckets of its chains: nothing else is reachable (a
// table a crash left unswitched, or switched out and not yet freed, is reclaimed).
Status PclhtIndex::visit_blocks(BlockVisitor& visitor) {
  if (pool_ == nullptr) return Status::OK();
  const uint64_t tw = root_->table;
  if (tw == 0) return Status::OK();
  if (Status s = check_table_word(tw); !s.ok()) return s;
  if (Status s = visitor.visit(TableOffset(tw)); !s.ok()) return s;
  return walk(tw, [&](uint64_t, Bucket* b, uint64_t o) {
    return in_table(tw, b) ? Status::OK() : visitor.visit(o);
  });
}

Status PclhtIndex::verify_bucket(uint64_t index, Bucket* b, uint64_t log2,
                                 std::vector<uint64_t>* keys) {
  const std::string where = "bucket at offset " + std::to_string(off(b));
  if (VersionLock::Held(b->lock, gen_)) return Status::Corruption(where + ": locked");
  for (int j = 0; j < kSlots; ++j) {
    const uint64_t k = b->key[j];
    if (k == 0) continue;
    if ((pm::Mix64(k) & ((uint64_t{1} << log2) - 1)) != index) {
      return Status::Corruption(where + ": key " + std::to_string(k) + " in chain " +
                                std::to_string(index) + ", not its own");
    }
    keys->push_back(k);
  }
  return Status::OK();
}

// Also: no key twice, key 0's slot well-formed and unlocked, the overflow count as counted.
Status PclhtIndex::verify() {
  if (pool_ == nullptr) return Status::InvalidArgument("index is closed");
  if (root_->zero_present > 1) return Status::Corruption("key 0's present word is not 0 or 1");
  if (VersionLock::Held(root_->zero_lock, gen_)) return Status::Corruption("key 0's slot locked");
  const uint64_t tw = root_->table;
  std::vector<uint64_t> keys;
  uint64_t overflow = 0;
  Status s = walk(tw, [&](uint64_t i, Bucket* b, uint64_t) {
    if (!in_table(tw, b)) ++overflow;
    return verify_bucket(i, b, TableLog2(tw), &keys);
  });
  if (!s.ok()) return s;
  std::sort(keys.begin(), keys.end());
  const auto dup = std::adjacent_find(keys.begin(), keys.end());
  if (dup != keys.end()) return Status::Corruption("key " + std::to_string(*dup) + " twice");
  if (overflow != overflow_.load(std::memory_order_relaxed)) {
    return Status::Corruption("overflow buckets: " + std::to_string(overflow) + " chained, " +
                              std::to_string(overflow_.load()) + " counted");
  }
  return Status::OK();
}

IndexStats PclhtIndex::stats() {
  IndexStats st;
  if (pool_ == nullptr) return st;
  auto guard = pool_->allocator().epoch_guard();
  const uint64_t tw = LoadAcquire(root_->table);
  uint64_t overflow = 0;
  st.keys = LoadAcquire(root_->zero_present) == 1 ? 1 : 0;
  walk(tw, [&](uint64_t, Bucket* b, uint64_t) {
    if (!in_table(tw, b)) ++overflow;
    for (int j = 0; j < kSlots; ++j) st.keys += LoadAcquire(b->key[j]) != 0;
    return Status::OK();
  }).IgnoreError();
  const uint64_t n = tw == 0 ? 0 : uint64_t{1} << TableLog2(tw);
  st.pm_bytes = (tw == 0 ? 0 : pool_->allocator().block_size(TableOffset(tw))) +
                overflow * sizeof(Bucket);
  st.nodes = {{"buckets", n}, {"overflow_buckets", overflow}, {"resizes", resizes()}};
  return st;
}

// Each chain read as a lookup reads it (a torn slot rereads the chain; then the persist
// wait), its pairs handed out after the read.
Status PclhtIndex::for_each(ScanCallback fn) {
  if (pool_ == nullptr) return Status::InvalidArgument("index is closed");
  auto guard = pool_->allocator().epoch_guard();
  uint64_t v = 0;
  if (find_zero(&v) && !fn(IntKey(0), IntValue(v))) return Status::OK();
  const uint64_t tw = LoadAcquire(root_->table);
  if (tw == 0) return Status::OK();
  const uint64_t n = uint64_t{1} << TableLog2(tw);
  std::vector<std::pair<uint64_t, uint64_t>> pairs;
  for (uint64_t i = 0; i < n; ++i) {
    const Bucket* first = entry(at(TableOffset(tw)), i);
    for (bool torn = true; torn;) {
      torn = false;
      pairs.clear();
      for (const Bucket* b = first; b != nullptr && !torn;) {
        for (int j = 0; j < kSlots && !torn; ++j) {
          const uint64_t v1 = LoadAcquire(b->value[j]);
          const uint64_t k = LoadAcquire(b->key[j]);
          torn = k != 0 && LoadAcquire(b->value[j]) != v1;
          if (k != 0 && !torn) pairs.emplace_back(k, v1);
        }
        const uint64_t next = LoadAcquire(b->next);
        b = next == 0 ? nullptr : at(next);
      }
    }
    wait_for_persist(&first->lock);
    for (const auto& [k, value] : pairs) {
      if (!fn(IntKey(k), IntValue(value))) return Status::OK();
    }
  }
  return Status::OK();
}

IndexRegistration Registration() {
  IndexRegistration r;
  r.traits = PclhtIndex::Traits();
  r.attach = [](std::unique_ptr<Pool> pool, bool fresh) {
    return PclhtIndex::Attach(std::move(pool), fresh);
  };
  r.params = PclhtIndex::Params(uint64_t{1} << kDefaultInitialLog2);
  r.mutants = {
      {"pclht.skip_value_persist",
       "an insert stores the key (its commit) without persisting the value first: a torn "
       "line holds the key with the slot's old value"},
      {"pclht.skip_commit_persist",
       "the key store of an insert or remove (its commit) is not persisted before the lock is "
       "released and the operation returns"},
      {"pclht.skip_overflow_persist",
       "a new overflow bucket is linked (and the link persisted) without persisting the "
       "bucket: the key it holds is lost"},
      {"pclht.resize_flush_wrong_chain",
       "the resize's recursive flush of the new table follows the old table's next pointers: "
       "the new table's overflow buckets are not durable when the table is switched in"},
      {"pclht.switch_before_table_persist",
       "the resize switches the table word (persisted) before the new table is persisted"},
      {"pclht.reader_skips_persist_wait",
       "a lookup returns what it read while the chain's writer has not yet persisted it "
       "(RECIPE's readers): a crash then loses a value a reader returned",
       "", "PclhtTest.ReaderWaitsForTheWritersPersist"},
  };
  r.crash_scenarios = {"pclht-resize"};
  return r;
}

}  // namespace pmindex::hash::pclht
