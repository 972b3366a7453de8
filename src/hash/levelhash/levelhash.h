// Level hashing (Zuo, Hua, Wu: "Write-Optimized and High-Performance Hashing Index Scheme for
// Persistent Memory", OSDI 2018): a two-level hash table of 4-slot buckets in the pool, with
// log-free writes and in-place resizing. Layouts: bucket.h. doc/levelhash.md says where this
// follows the paper and where it deviates.
//
// Structure. The top level has 2^n buckets, the bottom level 2^(n-1); top buckets 2j and
// 2j+1 share bottom bucket j. A key has two top buckets (the top n bits of its two hashes)
// and the two bottom buckets under them. Keys and values are 8 bytes; every key is storable
// (a slot's token bit, not its content, says it is used). The table starts empty; the first
// insert creates levels of 2^n0 and 2^(n0-1) buckets (n0 from the pool's index parameters,
// "initial_top_bits", small by default so that the crash campaign reaches resizes).
//
// Insert: a free slot in the emptier of the two top buckets, else of the two bottom ones;
// else one movement: an item of a candidate bucket moves to its other bucket of the same
// level, or (bottom-to-top, B2T) an item of a bottom candidate moves to one of its top
// buckets, and the key takes the freed slot; else the table resizes and the insert retries.
// Update: the new item goes to a free slot of the same bucket and one token store sets its
// bit and clears the old one; in a full bucket the 8-byte value is stored in place (the
// paper logs there: its values were 15 bytes). Remove: the token bit is cleared.
//
// Crash argument, per write:
//   - commit (insert, update, a move's destination): the key and value are stored and
//     persisted, then the token byte is stored and persisted: a slot is committed only with
//     its pair durable (never one persist for both: a torn line could commit a half-written
//     pair). An update's token store clears the old slot in the same byte: old or new.
//   - move of an item from slot A to slot B: B is committed (as above) with its moved-in
//     bit, then A's token bit is cleared and persisted, then B's moved-in bit is cleared
//     without a persist. A crash leaves the item in A, in A and B, or in B: never lost. Two
//     copies (same key, same value) only exist while B's moved-in bit is durable, so
//     recovery finds every duplicate by scanning for moved-in bits, clears every other copy
//     of that key in its candidate buckets, then the bits.
//   - remove: one token store, persisted.
//   - resize (2^n -> 2^(n+1)): a new top level is allocated, zeroed and persisted, then
//     committed as table.resize_top (table flip, below); every item of the old bottom level
//     is moved (as above, in rounds of 16 buckets whose copies share their fences) into the
//     new top level (or, where both its new top buckets are full, into its old top buckets,
//     the new bottom level, or by one movement); then the table {new top, old top,
//     n+1} is committed and the old bottom level is retired. A crash before the first commit
//     leaves the new level unreachable (the allocator rebuild frees it); after it, recovery
//     finishes the moves and commits the new table; after the last, recovery frees the old
//     bottom (unreachable).
//   - table flip: the new table is written into the root's inactive table and persisted,
//     then `active` is stored and persisted (8-byte failure-atomic).
// Recovery: validates the table, clears the duplicates of interrupted moves (above), finishes
// an interrupted resize, and rebuilds the DRAM view. It allocates nothing. Bucket locks need
// no reset: their words carry the pool generation.
//
// Concurrency (the authors' concurrent level hashing: fine-grained locks, here one per
// bucket instead of one per slot, since a bucket's four commit bits share its token byte):
//   - a writer holds the table lock (pm::RwLock, DRAM) shared and locks its key's candidate
//     buckets (pm::VersionLock, in address order); a movement's destination outside them is
//     only try-locked (a failure restarts the operation), so writers never deadlock;
//   - a resize holds the table lock exclusively and makes resize_seq_ odd while it moves
//     items and switches the levels;
//   - readers take no lock: inside an epoch guard they read resize_seq_ and the levels,
//     version-read the candidate buckets (pm::VersionLock, waiting out writers), and accept
//     a found item whose bucket validates; "absent" needs every candidate bucket and
//     resize_seq_ unchanged (a move changes two candidate buckets of the moved key, both
//     under lock, so a reader cannot miss an item that moved past it). Old bottom levels are
//     retired through the epoch.
//   - for_each holds the table lock exclusively: it sees one state of the table (writers
//     wait; fn must not write to the index).
#ifndef PMINDEX_HASH_LEVELHASH_LEVELHASH_H_
#define PMINDEX_HASH_LEVELHASH_LEVELHASH_H_

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "hash/levelhash/bucket.h"
#include "pm/persist.h"
#include "pm/rw_lock.h"
#include "pmindex/index.h"

namespace pmindex::hash::levelhash {

class LevelHash final : public Index {
 public:
  static IndexTraits Traits();
  static Result<std::unique_ptr<Index>> Attach(std::unique_ptr<Pool> pool, bool fresh);
  ~LevelHash() override;

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

  // The levels as this process reads them (DRAM): top has 2^bits buckets, bottom 2^(bits-1).
  struct View {
    Bucket* top = nullptr;
    Bucket* bottom = nullptr;
    uint64_t bits = 0;  // 0: no levels yet
  };
  // Bucket locks one writer holds: its key's candidates and move destinations.
  struct Held {
    static constexpr int kMax = 8;
    Bucket* bucket[kMax];
    bool changed[kMax];
    int n = 0;
    bool Has(const Bucket* b) const;
    void Changed(const Bucket* b);
    void Add(Bucket* b) {
      bucket[n] = b;
      changed[n++] = false;
    }
  };

 private:
  explicit LevelHash(std::unique_ptr<Pool> pool);
  enum class Need { kAbsent, kPresent, kAny };

  Status CheckKey(std::string_view key) const;
  Status Write(uint64_t key, uint64_t value, Need need);
  // With the table lock shared and the candidates locked: the write, or *full when no
  // slot could be made free, or *contended when a move destination was locked by another.
  Status WriteLocked(const View& v, uint64_t key, uint64_t value, Need need, Held* held,
                     bool* full, bool* contended);
  void Update(Bucket* b, int i, uint64_t value);
  Status Remove(uint64_t key);
  void LockCandidates(const View& v, uint64_t key, Held* held);
  void Unlock(Held* held);
  // Try-locks a move destination outside the held set (added to it); false if another
  // thread holds it (*contended) or the set is full.
  bool LockExtra(Bucket* b, Held* held, bool* contended);
  bool LookupOnce(uint64_t key, uint64_t* value, bool* found);

  // Placement of a new item (levelhash_place.cc); `held` is null where no other thread runs
  // (resize under the exclusive table lock, recovery).
  // Where Place put the item.
  struct Spot {
    Bucket* bucket = nullptr;
    int slot = -1;
  };
  bool Place(const View& v, uint64_t key, uint64_t value, bool moved, Held* held,
             bool* contended, Spot* spot);
  bool PlaceFree(const View& v, uint64_t key, uint64_t value, bool moved, Held* held,
                 Spot* spot);
  bool PlaceByMove(const View& v, bool top, uint64_t key, uint64_t value, bool moved,
                   Held* held, bool* contended, Spot* spot);
  bool PlaceByB2T(const View& v, uint64_t key, uint64_t value, bool moved, Held* held,
                  bool* contended, Spot* spot);
  void PlaceAt(Bucket* b, int i, uint64_t key, uint64_t value, bool moved, Held* held,
               Spot* spot);
  bool TryMoveTo(Bucket* from, int i, Bucket* to, Held* held, bool* contended);
  void Commit(Bucket* b, int i, uint64_t key, uint64_t value, uint8_t token);
  void Move(Bucket* from, int i, Bucket* to, int j);

  // Resizing and the table (levelhash_resize.cc).
  Status Grow(uint64_t seen_bits);
  Status Create();
  Status Expand(const View& v);
  Status Rehash(const Table& t);
  void RehashRound(const View& next, Bucket* old, uint64_t first, uint64_t last,
                   std::vector<uint8_t>* reserved);
  void Publish(const Table& t);
  Result<uint64_t> NewLevel(uint64_t buckets);
  Status LoadTable(Table* t) const;
  View ViewOf(const Table& t) const;
  void SetView(const View& v);
  View CurrentView() const;
  void ClearMovedDuplicates(const Table& t);
  void ClearDuplicatesOf(const Table& t, Bucket* keep, int keep_slot);
  uint64_t InitialBits() const;

  std::unique_ptr<Pool> pool_;
  pm::PersistContext* pc_ = nullptr;
  LevelRoot* root_ = nullptr;
  uint32_t gen_ = 0;
  pm::RwLock table_lock_;
  uint64_t resize_seq_ = 0;  // odd while a resize moves items (atomic accesses)
  // views_[b] is the view with a top level of 2^b buckets, written once before bits_ = b is
  // published (release): a reader that loads bits_ reads a complete view (levels only grow
  // while the index is open; recovery, alone, resets them).
  View views_[kMaxTopBits + 1];
  std::atomic<uint64_t> bits_{0};
};

// The registration (src/hash/registrations.cc).
IndexRegistration Registration();

}  // namespace pmindex::hash::levelhash

#endif  // PMINDEX_HASH_LEVELHASH_LEVELHASH_H_
