// PFtree (Zhang et al., "PFtree: optimizing persistent adaptive radix tree for PM systems on
// eADR platform"): persistent ART inner nodes (inner_node.h) over leaf arrays that hold
// key-value pairs inline (leaf_array.h), with per-leaf auxiliary metadata only in DRAM.
//
// Keys: byte strings of 1..511 bytes (8-byte integers big-endian); values: 0..63 bytes.
// Larger (or an empty key) gets InvalidArgument.
//
// Shape: the root is a Node256 at depth 0 that never changes identity (its offset is the
// pool root). A leaf array under slot b of node N holds keys continuing with b, or, when a
// Node48/Node256 shares it among a run of bytes [lo, hi] (inner_node.h), keys continuing
// with any byte of the run. When its data area is full it is rebuilt from its live entries:
// into one new leaf array (compaction or growth up to 8 KiB and 256 entries) if they fit, otherwise split
// at the next distinguishing key byte into runs of bytes that each fill about half a
// largest leaf array (a byte too large for one leaf array gets a subtree). The new part is
// built and persisted off to the side and published by one 8-byte store: into the parent
// slot, or, when a shared leaf's run changes, into the grandparent slot with a copy of the
// parent.
//
// Thread safety: fully concurrent. Writers lock the leaf array they change (its persistent
// lock word carries the pool generation, so a crashed holder does not block a reopened
// pool), plus the parent when they replace a child (taken with try-lock, restart on
// failure, so locks are only ever waited for top-down). Readers never lock: they validate
// the leaf's version and, when they find nothing, that the inner node they stopped at is not
// obsolete (optimistic lock coupling). Replaced blocks are freed through the pool's epoch
// (pm/epoch.h).
//
// Durable linearizability: every change commits with one persisted store (an entry header, a
// valid bit, or an 8-byte child reference) made while holding the lock of what it changes;
// see leaf_array.h and inner_node.h for the per-structure crash arguments. Replaced nodes
// are marked obsolete before the reference swap, so no reader can return a result from a
// node after its replacement became visible.
#ifndef PMINDEX_RADIX_PFTREE_PFTREE_H_
#define PMINDEX_RADIX_PFTREE_PFTREE_H_

#include <algorithm>
#include <cassert>
#include <cstdint>
#include <cstring>
#include <atomic>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "pm/alloc.h"
#include "pm/persist.h"
#include "pmindex/index.h"
#include "pm/epoch.h"
#include "radix/pftree/inner_node.h"
#include "radix/pftree/leaf_array.h"

namespace pmindex::pftree {

class PFTree final : public Index, private pm::Reclaimer {
 public:
  // Attaches to `pool`; fresh (or a pool whose initialization was interrupted) gets a new
  // root, persisted before it is published.
  static Result<std::unique_ptr<Index>> Attach(std::unique_ptr<Pool> pool, bool fresh);
  static const IndexTraits& Traits();
  // How the registry makes a PFtree (listed in src/radix/registrations.cc).
  static IndexRegistration Registration();
  static std::vector<MutantInfo> Mutants();

  ~PFTree() override;

  const IndexTraits& traits() const override { return Traits(); }
  Status insert(std::string_view key, std::string_view value) override;
  Status update(std::string_view key, std::string_view value) override;
  Status upsert(std::string_view key, std::string_view value) override;
  Status remove(std::string_view key) override;
  Status lookup(std::string_view key, std::string* value) override;
  size_t scan(std::string_view start, size_t max_count, ScanCallback fn) override;
  Status verify() override;
  IndexStats stats() override;
  Status recover() override;
  Status visit_blocks(BlockVisitor& visitor) override;
  Pool* pool() override { return pool_.get(); }
  pm::PersistContext& pc() const { return pool_->persist_context(); }
  pm::Epoch& epoch() const { return alloc_->epoch(); }
  Status close() override;

 private:
  enum class Op { kInsert, kUpdate, kUpsert, kRemove };
  // Outcome of one attempt: done (with a status) or restart from the root.
  struct Attempt {
    bool restart;
    Status status;
  };

  explicit PFTree(std::unique_ptr<Pool> pool);

  template <typename T>
  T* at(uint64_t ref) const {
    return reinterpret_cast<T*>(base_ + RefOffset(ref));
  }
  // The leaf array the descent for `key` from `node` reaches, or nullptr: *stop is then the
  // node whose prefix or slot has no place for the key (absent unless it is obsolete).
  [[gnu::always_inline]] LeafHeader* DescendToLeaf(InnerHeader* node, std::string_view key,
                                                   InnerHeader** stop) const;
  // update() of an 8-byte value that sits on an 8-byte boundary (how this build writes every
  // 8-byte value of an even-length key): the lookup's descent, the leaf's lock, one persisted
  // 8-byte store (the commit, as in WriteToLeaf). Nothing is replaced, so nothing restarts.
  // False, with nothing changed, for any other update (absent key, other sizes, a leaf
  // replaced meanwhile): Write handles it.
  bool UpdateInPlaceFast(std::string_view key, std::string_view value);
  Status Write(std::string_view key, std::string_view value, Op op);
  Status WriteOnce(std::string_view key, std::string_view value, Op op);
  // Where a write found its leaf array: the node holding the reference (`parent`, at `slot`
  // for `byte`, or its term) and the node above it.
  struct LeafPath {
    InnerHeader* grandparent;
    uint8_t parent_byte;  // byte of parent in grandparent
    InnerHeader* parent;
    bool term;
    uint8_t byte;
    uint64_t* slot;
  };
  Attempt WriteToLeaf(const LeafPath& lp, LeafHeader* leaf, std::string_view key,
                      std::string_view value, uint16_t fp, Op op);
  // The phases of WriteToLeaf, with the leaf locked. Removes entry idx (the parent is
  // locked here if the leaf array is unlinked).
  Attempt RemoveFromLeaf(const LeafPath& lp, LeafHeader* leaf, LeafAux* aux, uint32_t idx);
  // The leaf's live entries but idx, and `added`, in key order.
  static std::vector<LeafItem> LiveItemsWith(LeafHeader* leaf, const LeafAux* aux, uint32_t n,
                                             int idx, const LeafItem& added);
  // With the parent locked too: items into a new leaf array or subtree, swapped in for the
  // full leaf.
  Attempt RebuildLeaf(const LeafPath& lp, LeafHeader* leaf, const LeafAux* aux,
                      std::vector<LeafItem>& items);
  // The bytes of lp.parent that reach the leaf (one unless it is shared).
  static void RunOfLeaf(const LeafPath& lp, uint8_t* lo, uint8_t* hi);
  // With leaf and parent locked: publishes a copy of the parent whose run [lo, hi] (the
  // leaf's) is replaced by `repl` (per byte; empty removes it), by one store into the
  // grandparent; retires parent and leaf. Frees *allocated and unlocks on failure.
  Attempt ReplaceRun(const LeafPath& lp, LeafHeader* leaf, uint8_t lo, uint8_t hi,
                     std::vector<std::pair<uint8_t, uint64_t>> repl,
                     std::vector<uint64_t>* allocated);
  Attempt AddLeaf(InnerHeader* grandparent, uint8_t gp_byte, InnerHeader* node, size_t pos,
                  std::string_view key, std::string_view value);
  Attempt SplitPrefix(InnerHeader* parent, uint8_t parent_byte, InnerHeader* node, size_t pos,
                      size_t match, std::string_view key, std::string_view value);
  // Builds, off to the side, a subtree at `depth` holding items (sorted, distinct keys): one
  // leaf array if they fit, else an inner node over split groups. Returns its reference;
  // blocks it allocated are appended to *allocated (freed by the caller on failure). Blocks
  // are flushed, not fenced: the caller fences once before publishing the reference.
  Result<uint64_t> BuildSubtree(std::vector<LeafItem>& items, size_t b, size_t e,
                                uint16_t depth, std::vector<uint64_t>* allocated);
  static bool FitsOneLeaf(const std::vector<LeafItem>& items, size_t b, size_t e);
  static bool FitsOneLeaf(size_t entries, size_t bytes);  // the same from the totals
  // One leaf array at `depth` holding items[b, e), flushed (same contract as BuildSubtree).
  Result<uint64_t> BuildLeaf(const std::vector<LeafItem>& items, size_t b, size_t e,
                             uint16_t depth, std::vector<uint64_t>* allocated);
  // The children that route bytes [lo, hi] at key position q for items[b, e) (sorted, all
  // with key[q] in [lo, hi]), appended per byte to *children: runs of consecutive key bytes
  // sharing one leaf array, sized to fill leaf arrays (BuildRuns), or one leaf for the whole
  // run (BuildRunLeaf). Same contract as BuildSubtree.
  Status BuildRuns(std::vector<LeafItem>& items, size_t b, size_t e, uint16_t q, uint8_t lo,
                   uint8_t hi, std::vector<uint64_t>* allocated,
                   std::vector<std::pair<uint8_t, uint64_t>>* children);
  Status BuildRunLeaf(const std::vector<LeafItem>& items, size_t b, size_t e, uint16_t q,
                      uint8_t lo, uint8_t hi, std::vector<uint64_t>* allocated,
                      std::vector<std::pair<uint8_t, uint64_t>>* children);
  InnerHeader* root() const { return root_.load(std::memory_order_acquire); }
  // The root, created (persisted, then published with set_root) if there is none.
  Result<InnerHeader*> EnsureRoot();
  // A one-entry leaf array, flushed but not fenced (the caller fences before publishing it).
  Result<uint64_t> NewLeaf(std::string_view key, std::string_view value, uint16_t depth);
  void FreeBlocks(const std::vector<uint64_t>& blocks);
  void Retire(uint64_t ref);
  void Reclaim(uint64_t offset, void* aux) override;

  // Scan: up to `limit` live pairs after `cursor` (>= if inclusive) in key order, from
  // consecutive leaf arrays in one descent (fewer if a concurrent change cut the batch
  // short). False if there is none.
  // A scan batch: the pairs' bytes back to back in one buffer, and a (position, sizes) array
  // beside it. Both start inline (a scan of 100 pairs of 8-byte keys and values fits, so a
  // scan allocates nothing) and only grow; add is inline and bounds-checks once. While every
  // pair is an 8-byte key and value (integer keys), pair i is the 16 bytes at 16 i and the
  // array is not written: the array is filled in only when another pair joins.
  class ScanBatch {
    struct Pair {
      uint32_t offset;  // of the key in bytes_; the value follows it
      uint16_t key_size;
      uint16_t value_size;
    };

   public:
    ScanBatch() = default;
    ScanBatch(const ScanBatch&) = delete;
    ScanBatch& operator=(const ScanBatch&) = delete;
    size_t size() const { return n_; }
    bool empty() const { return n_ == 0; }
    void clear() {
      used_ = 0;
      n_ = 0;
      words_ = true;
    }
    // Room for n pairs in all (their bytes are checked per pair).
    void ReservePairs(size_t n) {
      if (n > pair_cap_) [[unlikely]]
        GrowPairs(n);
    }
    // Where up to n integer pairs (8-byte key, then 8-byte value) may be stored if the batch
    // holds only such pairs (else nullptr); AddWords(k) then adds the first k stored.
    char* WordSpace(size_t n) {
      if (!words_) return nullptr;
      if (used_ + 16 * n > cap_) [[unlikely]]
        grow(used_ + 16 * n);
      return bytes_ + used_;
    }
    void AddWords(size_t k) {
      n_ += k;
      used_ += 16 * k;
    }
    // Adds pairs to a batch with its counters and pointers in registers: stores of pair bytes
    // (char) may alias any member of the batch, so adding through the batch itself reloads
    // them per pair. The batch is updated when the appender is destroyed. Pairs must have been
    // reserved (ReservePairs) before the appender is made.
    class Appender {
     public:
      explicit Appender(ScanBatch* b)
          : b_(b), bytes_(b->bytes_), pairs_(b->pairs_), used_(b->used_), n_(b->n_),
            cap_(b->cap_), words_(b->words_) {}
      Appender(const Appender&) = delete;
      Appender& operator=(const Appender&) = delete;
      ~Appender() { Commit(); }
      size_t size() const { return n_; }
      [[gnu::always_inline]] void add(std::string_view key, std::string_view value) {
        if (words_) [[unlikely]]
          EndWords();
        const size_t need = used_ + key.size() + value.size();
        if (need > cap_) [[unlikely]]
          Grow(need);
        assert(n_ < b_->pair_cap_);  // ReservePairs before
        char* p = bytes_ + used_;
        Copy(p, key);
        Copy(p + key.size(), value);
        pairs_[n_++] = {static_cast<uint32_t>(used_), static_cast<uint16_t>(key.size()),
                        static_cast<uint16_t>(value.size())};
        used_ = need;
      }

     private:
      void Commit() {
        b_->used_ = used_;
        b_->n_ = n_;
        b_->words_ = words_;
      }
      // Inline, as the batch's grow is not: the appender's address must not escape, or its
      // members could not stay in registers.
      [[gnu::always_inline]] void Grow(size_t need) {
        Commit();
        b_->grow(need);
        bytes_ = b_->bytes_;
        cap_ = b_->cap_;
      }
      // The pairs so far were all words (pair i at 16 i): written out for a pair of other sizes.
      [[gnu::always_inline]] void EndWords() {
        b_->WriteWordPairs(n_);
        words_ = false;
      }
      ScanBatch* b_;
      char* bytes_;
      Pair* pairs_;
      size_t used_, n_, cap_;
      bool words_;
    };
    // Calls fn(key, value) for pairs [from, size()) while it returns true; the index of the
    // pair it stopped at, or size().
    template <typename Fn>
    size_t ForEach(size_t from, Fn&& fn) const {
      const char* bytes = bytes_;
      const size_t n = n_;
      if (words_) {
        for (size_t i = from; i < n; ++i) {
          const char* k = bytes + 16 * i;
          if (!fn(std::string_view(k, 8), std::string_view(k + 8, 8))) return i;
        }
        return n;
      }
      const Pair* pairs = pairs_;
      for (size_t i = from; i < n; ++i) {
        const Pair p = pairs[i];
        const char* k = bytes + p.offset;
        if (!fn(std::string_view(k, p.key_size), std::string_view(k + p.key_size, p.value_size)))
          return i;
      }
      return n;
    }
    void truncate(size_t n) {  // keeps the first n pairs
      if (n >= n_) return;
      used_ = words_ ? 16 * n : pairs_[n].offset;
      n_ = n;
    }
    std::string_view key(size_t i) const {
      if (words_) return {bytes_ + 16 * i, 8};
      return {bytes_ + pairs_[i].offset, pairs_[i].key_size};
    }

   private:
    static constexpr size_t kInlineBytes = 2048;
    static constexpr size_t kInlinePairs = 128;
    // 8-byte keys and values (integer keys, the common values) inline, not a memcpy call.
    static void Copy(char* to, std::string_view from) {
      if (from.size() == 8) {
        uint64_t w;
        std::memcpy(&w, from.data(), 8);
        std::memcpy(to, &w, 8);
      } else {
        std::memcpy(to, from.data(), from.size());
      }
    }
    [[gnu::noinline]] void grow(size_t need) {
      const size_t cap = std::max(need, 2 * cap_);
      std::unique_ptr<char[]> bigger(new char[cap]);
      std::memcpy(bigger.get(), bytes_, used_);
      heap_bytes_ = std::move(bigger);
      bytes_ = heap_bytes_.get();
      cap_ = cap;
    }
    [[gnu::noinline]] void WriteWordPairs(size_t n) {
      for (size_t i = 0; i < n; ++i) pairs_[i] = {static_cast<uint32_t>(16 * i), 8, 8};
    }
    [[gnu::noinline]] void GrowPairs(size_t n) {
      const size_t cap = std::max(n, 2 * pair_cap_);
      std::unique_ptr<Pair[]> bigger(new Pair[cap]);
      if (!words_) std::copy(pairs_, pairs_ + n_, bigger.get());
      heap_pairs_ = std::move(bigger);
      pairs_ = heap_pairs_.get();
      pair_cap_ = cap;
    }
    char inline_bytes_[kInlineBytes];
    Pair inline_pairs_[kInlinePairs];
    char* bytes_ = inline_bytes_;
    Pair* pairs_ = inline_pairs_;
    size_t used_ = 0;
    size_t cap_ = kInlineBytes;
    size_t n_ = 0;
    size_t pair_cap_ = kInlinePairs;
    bool words_ = true;  // pairs [0, n_) are all 8-byte keys and values, pair i at 16 i
    std::unique_ptr<char[]> heap_bytes_;
    std::unique_ptr<Pair[]> heap_pairs_;
  };
  static void CopyPairs(LeafHeader* leaf, const uint16_t* order, uint32_t first, uint32_t want,
                        uint32_t n, ScanBatch* out);
  // The general copy: pairs of any sizes from order[i, end) on.
  static void CopyAnyPairs(LeafHeader* leaf, const uint16_t* order, uint32_t i, uint32_t end,
                           uint32_t n, ScanBatch* out);
  bool NextBatch(std::string_view cursor, bool inclusive, size_t limit, ScanBatch* out);
  int CollectFrom(uint64_t ref, size_t pos, std::string_view cursor, bool inclusive, size_t limit,
                  bool bounded, ScanBatch* out);

  // lo..hi >= 0: ref is a shared leaf for key bytes [lo, hi] after `path`.
  Status VerifyNode(uint64_t ref, std::string& path, uint64_t* keys, int lo = -1, int hi = -1);
  // VerifyNode's two kinds of node, at a reference inside the pool.
  Status VerifyLeaf(uint64_t ref, const std::string& path, uint64_t* keys, int lo, int hi);
  Status VerifyInner(uint64_t ref, std::string& path, uint64_t* keys);
  Status RecoverNode(uint64_t ref, size_t depth);
  Status VisitNode(uint64_t ref, BlockVisitor& visitor);
  void StatsNode(uint64_t ref, IndexStats* stats, uint64_t counts[6]);
  void FreeAuxNode(uint64_t ref, size_t depth = 0);

  std::unique_ptr<Pool> pool_;
  char* base_ = nullptr;
  pm::Allocator* alloc_ = nullptr;
  // The root Node256, or null while the pool has none (a new pool whose initialization was
  // interrupted: the root is then created by the first write, once the allocator is rebuilt).
  std::atomic<InnerHeader*> root_{nullptr};
  std::mutex root_mu_;
  uint32_t gen_ = 0;
  bool recovered_ = false;  // DRAM metadata valid for every reachable leaf
  // The DRAM metadata recover() built while it has not succeeded. A recovery that stops at
  // Corruption leaves a tree that must not be walked again (its offsets are what failed), so
  // teardown frees exactly these instead; once recovery succeeds the tree owns them.
  std::vector<LeafAux*> recovery_aux_;
  void FreeRecoveryAux();
  // A free largest (Largest().block) block set aside while the pool has room (0: none), released to the
  // allocator when a write meets OutOfSpace, so a full pool can still rebuild a leaf array
  // whose removed entries make room. Never linked: a crash leaves it to the allocator rebuild.
  std::atomic<uint64_t> reserve_{0};
};

}  // namespace pmindex::pftree

#endif  // PMINDEX_RADIX_PFTREE_PFTREE_H_
