// P-CLHT's resize (CLHT-LB-RES, RECIPE's conversion): one thread builds a table of twice the
// buckets, freezing and copying the old chains one by one, persists the new table with the
// overflow buckets of its own chains, and switches the root's table word with one 8-byte
// store. Crash argument: pclht.h.
#include <vector>

#include "hash/pclht/pclht.h"
#include "pm/alloc.h"
#include "pm/mix64.h"
#include "pm/mutant.h"

namespace pmindex::hash::pclht {

// CLHT resizes when an insert chains an overflow bucket and the table has as many overflow
// buckets as buckets (num_expands_threshold = num_buckets); a table just built that already
// reaches it is resized again (ht_resize_again).
void PclhtIndex::maybe_resize(uint64_t table_word) {
  uint64_t word = table_word;
  while (overflow_.load(std::memory_order_relaxed) >= (uint64_t{1} << TableLog2(word)) &&
         TableLog2(word) < kMaxLog2 && resize(word)) {
    word = LoadAcquire(root_->table);
  }
}

// Adds (k, v) to a table no reader can reach yet (CLHT's clht_put_seq): plain stores.
static bool PutPrivate(pm::Allocator& alloc, char* base, Bucket* table, uint32_t log2,
                       uint64_t group, uint64_t k, uint64_t v, std::vector<uint64_t>* made) {
  Bucket* b = table + (pm::Mix64(k) & ((uint64_t{1} << log2) - 1)) * group;
  for (;;) {
    for (int j = 0; j < kSlots; ++j) {
      if (b->key[j] == 0) {
        b->key[j] = k;
        b->value[j] = v;
        return true;
      }
    }
    if (b->next == 0) {
      Result<uint64_t> block = alloc.allocate(sizeof(Bucket), /*zero=*/true);
      if (!block.ok()) return false;
      made->push_back(block.value());
      b->next = block.value();
    }
    b = reinterpret_cast<Bucket*>(base + b->next);
  }
}

// Copies a frozen chain (no writer changes it any more) into the new table.
bool PclhtIndex::copy_chain(Bucket* old_first, Bucket* table, uint32_t log2,
                            std::vector<uint64_t>* made) {
  for (Bucket* b = old_first; b != nullptr; b = b->next == 0 ? nullptr : at(b->next)) {
    for (int j = 0; j < kSlots; ++j) {
      const uint64_t k = b->key[j];
      if (k != 0 && !PutPrivate(pool_->allocator(), base_, table, log2, variant_.group, k,
                                b->value[j], made))
        return false;
    }
  }
  return true;
}

// Flushes the new table and, recursively, the overflow buckets of each of its chains; one
// fence. (The mutant follows the old table's chain of the same bucket instead: RECIPE's
// recursive flush of a new table that follows the wrong `next`.)
void PclhtIndex::persist_table(Bucket* table, uint32_t log2, Bucket* old_table,
                               uint32_t old_log2) {
  const uint64_t n = uint64_t{1} << log2, last = variant_.group - 1;
  pc_->flush(table, table_bytes(log2));
  const bool wrong = pm::mutant("pclht.resize_flush_wrong_chain");
  for (uint64_t i = 0; i < n; ++i) {  // from each group's last bucket: the overflow
    const uint64_t old_i = i & ((uint64_t{1} << old_log2) - 1);
    const Bucket* chain = (wrong ? entry(old_table, old_i) : entry(table, i)) + last;
    for (uint64_t o = chain->next; o != 0; o = at(o)->next) pc_->flush(at(o), sizeof(Bucket));
  }
  pc_->fence();
}

// Frees a switched-out table and its overflow buckets once no reader can be inside them:
// one epoch item for them all (an item per bucket would run the epoch's collection, a fence
// in every thread, every 64 buckets).
void PclhtIndex::retire_table(uint64_t table_word) {
  Bucket* table = at(TableOffset(table_word));
  const uint64_t n = uint64_t{1} << TableLog2(table_word);
  auto* overflow = new std::vector<uint64_t>();
  for (uint64_t i = 0; i < n; ++i) {
    const Bucket* last = entry(table, i) + (variant_.group - 1);
    for (uint64_t o = last->next; o != 0; o = at(o)->next) overflow->push_back(o);
  }
  pool_->allocator().epoch().Retire(this, TableOffset(table_word), overflow);
}

void PclhtIndex::Reclaim(uint64_t offset, void* aux) {
  auto* overflow = static_cast<std::vector<uint64_t>*>(aux);
  pm::Allocator& alloc = pool_->allocator();
  for (uint64_t o : *overflow) alloc.free(o);
  alloc.free(offset);
  delete overflow;
}

// OutOfSpace mid-copy: the old table stays the index. Unfreezes its first `frozen` chains
// (Unlock clears the obsolete mark too) and frees the unreachable new blocks at once.
void PclhtIndex::abort_resize(Bucket* old_table, uint64_t frozen,
                              const std::vector<uint64_t>& made, uint64_t new_off) {
  for (uint64_t i = 0; i < frozen; ++i) VersionLock::Unlock(&entry(old_table, i)->lock, gen_);
  pm::Allocator& alloc = pool_->allocator();
  for (uint64_t o : made) alloc.free(o);
  alloc.free(new_off);
}

bool PclhtIndex::resize(uint64_t old_word) {
  std::unique_lock<std::mutex> lock(resize_mu_, std::try_to_lock);
  if (!lock.owns_lock() || LoadAcquire(root_->table) != old_word) return false;
  const uint32_t old_log2 = TableLog2(old_word), log2 = old_log2 + 1;
  const uint64_t old_n = uint64_t{1} << old_log2;
  Result<uint64_t> block = pool_->allocator().allocate(table_bytes(log2), /*zero=*/true);
  if (!block.ok()) return false;  // keep the long chains; a later insert tries again
  Bucket* table = at(block.value());
  link_groups(table, log2);
  Bucket* old_table = at(TableOffset(old_word));
  std::vector<uint64_t> made;
  for (uint64_t i = 0; i < old_n; ++i) {
    // Freeze: writers of this chain wait for the switch; readers read on (nothing changes).
    Bucket* old_first = entry(old_table, i);
    VersionLock::Lock(&old_first->lock, gen_);
    VersionLock::MarkObsolete(&old_first->lock, gen_);
    if (!copy_chain(old_first, table, log2, &made)) {
      abort_resize(old_table, i + 1, made, block.value());
      return false;
    }
  }
  // Every chain is frozen, so no insert of the old table counts an overflow bucket now.
  overflow_.store(made.size(), std::memory_order_relaxed);
  const uint64_t word = TableWord(block.value(), log2);
  const bool early = pm::mutant("pclht.switch_before_table_persist");
  if (early) {
    StoreRelease(root_->table, word);
    pc_->persist(&root_->table, 8);
  }
  persist_table(table, log2, old_table, old_log2);
  if (!early) {
    StoreRelease(root_->table, word);  // commit
    pc_->persist(&root_->table, 8);
  }
  resizes_.fetch_add(1, std::memory_order_relaxed);
  retire_table(old_word);
  return true;
}

}  // namespace pmindex::hash::pclht
