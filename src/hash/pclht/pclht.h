// P-CLHT (Lee, Mohan, Kadekodi, Chidambaram: "RECIPE: Converting Concurrent DRAM Indexes to
// Persistent-Memory Indexes", SOSP 2019): CLHT, the cache-line hash table of David, Guerraoui
// and Trigonakis ("Asynchronized Concurrency", ASPLOS 2015), in its lock-based resizing form
// (CLHT-LB-RES), made persistent by RECIPE's rule: every store a reader can see is flushed
// and fenced before the commit store that publishes it and before the lock is released.
// Layouts and the empty-slot rule: bucket.h.
//
// Structure: a table of 2^n buckets of one cache line each (3 slots); a bucket that is full
// chains overflow buckets through `next`. A key (other than 0) lives in the chain of bucket
// Mix64(key) & (2^n - 1); key 0 lives in the root area's own slot.
//
// Writes (crash arguments; every store below is an 8-byte failure-atomic one):
//   insert into an empty slot: value, persisted; then the key (commit), persisted. A crash
//     before the key is durable leaves key 0 there: an empty slot with a stray value.
//   insert into a full chain: a new overflow bucket holding the pair, persisted whole; then
//     the previous bucket's `next` (commit), persisted. Before the link is durable the bucket
//     is unreachable and the allocator rebuild frees it.
//   update: the value (commit), persisted. remove: key 0 (commit), persisted; a remove
//     that empties an overflow bucket then unlinks it: the previous bucket's `next` takes
//     the bucket's own (one store, persisted), and the bucket is retired through the epoch
//     (CLHT leaves empty buckets to the next resize; here a full pool gets room back from
//     removes). A crash before the unlink is durable leaves an empty bucket linked.
//   resize (CLHT-LB-RES, by one thread at a time under resize_mu_): a table of twice the
//     buckets is allocated; each old chain is frozen (its lock taken and marked obsolete, so
//     writers wait) and copied into the new table; the new table and every overflow bucket
//     of its own chains are flushed, one fence; then the root's table word (commit),
//     persisted. Before the switch is durable the old table is the index and the new one is
//     unreachable (freed by the rebuild); after it the old one is unreachable (freed by the
//     rebuild, or retired through the epoch by a resize that finishes: exactly once).
//     Trigger: an insert that chains a new overflow bucket when the table has as many
//     overflow buckets as buckets (CLHT's num_expands_threshold).
//
// Locks: pm::VersionLock words with the pool generation, so a lock (or freeze) a crash left
// set is free after reopening with no recovery write; recovery writes nothing at all.
//
// Reads: lock-free, as in CLHT: read the chain slot by slot (value, key, value again:
// bucket.h) with no lock and no retry for writers that finished. RECIPE's readers could
// return a value whose persist was still under way (lost by a crash after the reader
// returned it); here a reader that read a chain whose first bucket is locked by a writer
// waits until that writer releases it - the writer releases only after its persists - and a
// reader that read a frozen table reads again if the table was switched meanwhile.
//
// Concurrency: any number of threads. Writers lock one chain; readers take no lock and write
// nothing. Old tables and their overflow buckets are freed through the pool's epoch.
// for_each reads the current table chain by chain as lookups do: a key present and
// unchanged throughout is seen once, keys written meanwhile may or may not be, and a resize
// during the iteration is not followed (the old table's frozen copy is read to its end).
#ifndef PMINDEX_HASH_PCLHT_PCLHT_H_
#define PMINDEX_HASH_PCLHT_PCLHT_H_

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "hash/pclht/bucket.h"
#include "pm/epoch.h"
#include "pm/persist.h"
#include "pm/version_lock.h"
#include "pmindex/index.h"

namespace pmindex::hash::pclht {

using pm::VersionLock;

// The table a new index starts with unless its pool's parameters say otherwise: small, so
// that the crash campaign's short workloads resize several times.
inline constexpr uint32_t kDefaultInitialLog2 = 0;  // 1 bucket
inline constexpr uint32_t kMaxLog2 = 40;

class PclhtIndex final : public Index, private pm::Reclaimer {
 public:
  static IndexTraits Traits();
  // Index parameters: "initial_buckets=N" (N a power of two, 1..2^20) anywhere in them sets
  // the first table's size; default 1. Two of Woo et al.'s write-amplification
  // optimizations are variants (doc/pclht.md "Variants"), off by default:
  //   "flush=coalesce"  an insert's value and key, on one line, take one flush (after the
  //                     key) instead of one each. Sound only if a line reaches the media
  //                     whole and in store order (the paper's x86 argument); the crash
  //                     campaign's torn images (8-byte failure atomicity) break it.
  //   "unlock=flush"    the chain's lock word is flushed (no fence) on release, so its line
  //                     reaches the write-combining buffer with the pair just persisted.
  //   "bucket_bytes=256" XPLine-aware sizing: a table entry is a group of 4 buckets (4 lines,
  //                     one XPLine, 12 slots) pre-linked by their `next` words, the first
  //                     one's lock covering the chain; overflow buckets follow the fourth.
  static std::string Params(uint64_t initial_buckets);
  struct Variant {
    bool coalesce_flush = false;
    bool flush_unlock = false;
    uint64_t group = 1;  // buckets per table entry
  };
  static Result<Variant> ParseVariant(std::string_view params);
  static Result<std::unique_ptr<Index>> Attach(std::unique_ptr<Pool> pool, bool fresh);
  ~PclhtIndex() override { close().IgnoreError(); }

  const IndexTraits& traits() const override;
  Status insert(std::string_view key, std::string_view value) override;
  Status update(std::string_view key, std::string_view value) override;
  Status upsert(std::string_view key, std::string_view value) override;
  Status remove(std::string_view key) override;
  Status lookup(std::string_view key, std::string* value) override;
  size_t scan(std::string_view, size_t, ScanCallback) override { return 0; }  // unordered
  Status for_each(ScanCallback fn) override;
  Status verify() override;
  IndexStats stats() override;
  Status recover() override;
  Status visit_blocks(BlockVisitor& visitor) override;
  Pool* pool() override { return pool_.get(); }
  Status close() override;

  // For tests: buckets of the current table (0 before the first write), overflow buckets,
  // resizes since open.
  uint64_t buckets() const;
  uint64_t overflow_buckets() const { return overflow_.load(std::memory_order_relaxed); }
  uint64_t resizes() const { return resizes_.load(std::memory_order_relaxed); }

 private:
  enum class Op : uint8_t { kInsert, kUpdate, kUpsert };
  // Where a key is (or may go) in a locked chain.
  struct Place {
    Bucket* found = nullptr;  // bucket holding the key, slot found_slot
    int found_slot = 0;
    Bucket* found_prev = nullptr;  // the bucket before `found` in the chain (none: first)
    Bucket* empty = nullptr;  // first empty slot of the chain, slot empty_slot
    int empty_slot = 0;
    Bucket* last = nullptr;   // the chain's last bucket
  };

  PclhtIndex(std::unique_ptr<Pool> pool, uint32_t initial_log2, Variant variant);

  Bucket* at(uint64_t off) const { return reinterpret_cast<Bucket*>(base_ + off); }
  uint64_t off(const Bucket* b) const {
    return static_cast<uint64_t>(reinterpret_cast<const char*>(b) - base_);
  }
  Bucket* first_bucket(uint64_t table_word, uint64_t k) const;
  // Table entry i (its first bucket), the bytes of a table of 2^log2 entries, and whether b
  // is one of the table's own buckets (not an overflow bucket).
  Bucket* entry(Bucket* table, uint64_t i) const { return table + i * variant_.group; }
  uint64_t table_bytes(uint32_t log2) const { return (sizeof(Bucket) * variant_.group) << log2; }
  bool in_table(uint64_t table_word, const Bucket* b) const {
    return off(b) - TableOffset(table_word) < table_bytes(TableLog2(table_word));
  }
  // Links the buckets of each group of a new, unreachable table (plain stores; persisted with
  // the table). Nothing with a group of one.
  void link_groups(Bucket* table, uint32_t log2);
  Status check_key(std::string_view key) const;

  // Reads (pclht.cc).
  bool find(uint64_t k, uint64_t* value) const;
  bool read_chain(const Bucket* first, uint64_t k, uint64_t* value) const;
  void wait_for_persist(const uint64_t* lock) const;
  bool find_zero(uint64_t* value) const;

  // Writes (pclht.cc).
  Status put(Op op, uint64_t k, uint64_t v);
  Status erase(uint64_t k);
  // Locks the chain of k in the current table (creating the first table if none); the
  // table word it belongs to goes to *table_word. OutOfSpace if no first table fits.
  Result<Bucket*> lock_chain(uint64_t k, uint64_t* table_word);
  // Crash (unlock=flush): the lock word's durable value never matters (a crash-held lock is
  // free on reopen: pool generation); flushing it only writes its line back earlier.
  void unlock(Bucket* first) {
    VersionLock::Unlock(&first->lock, gen_);
    if (variant_.flush_unlock) pc_->flush(&first->lock, 8);
  }
  Place locate(Bucket* first, uint64_t k) const;
  void store_pair(Bucket* b, int slot, uint64_t k, uint64_t v);
  Status chain_overflow(Bucket* last, uint64_t k, uint64_t v);
  void unlink_if_empty(uint64_t table_word, Bucket* prev, Bucket* b);
  Status put_zero(Op op, uint64_t v);
  Status erase_zero();
  Status create_table();

  // Resize (pclht_resize.cc).
  void maybe_resize(uint64_t table_word);
  // Builds and switches in a table of twice the buckets; false if it could not (OutOfSpace:
  // the old table stays, unfrozen).
  bool resize(uint64_t old_word);
  bool copy_chain(Bucket* old_first, Bucket* table, uint32_t log2, std::vector<uint64_t>* made);
  void persist_table(Bucket* table, uint32_t log2, Bucket* old_table, uint32_t old_log2);
  void retire_table(uint64_t table_word);
  // A retired table: its block at `offset`, its overflow buckets in `aux` (a vector).
  void Reclaim(uint64_t offset, void* aux) override;
  void abort_resize(Bucket* old_table, uint64_t frozen, const std::vector<uint64_t>& made,
                    uint64_t new_off);

  // Maintenance (pclht_maint.cc). walk calls fn(first bucket index, bucket, offset) for every
  // bucket of the current table's chains, after checking each offset lies in the pool.
  Status check_table_word(uint64_t word) const;
  Status walk(uint64_t table_word, FunctionRef<Status(uint64_t, Bucket*, uint64_t)> fn) const;
  Status verify_bucket(uint64_t index, Bucket* b, uint64_t log2, std::vector<uint64_t>* keys);

  std::unique_ptr<Pool> pool_;
  pm::PersistContext* pc_;
  char* base_;
  PclhtRoot* root_;
  uint32_t gen_;
  uint32_t initial_log2_;
  Variant variant_;
  std::atomic<uint64_t> overflow_{0};  // overflow buckets of the current table
  std::atomic<uint64_t> resizes_{0};
  std::mutex resize_mu_;  // one resizer (or creator of the first table) at a time
};

IndexRegistration Registration();

}  // namespace pmindex::hash::pclht

#endif  // PMINDEX_HASH_PCLHT_PCLHT_H_
