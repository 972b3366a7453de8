// WORT: Write Optimal Radix Tree (Lee et al., FAST 2017) on a pmindex pool.
//
// A radix tree with a 4-bit span: every inner node (WortNode) has 16 child words plus an end
// word for the key that ends at the node (keys may be prefixes of other keys). Leaves are
// separate pool blocks (PmLeaf) reached through tagged child words (lazy expansion); common
// key runs are path-compressed into the node's 8-byte header (depth, prefix length, first 5
// prefix nibbles; the rest is read from a leaf below).
//
// Crash argument (every change commits with one 8-byte failure-atomic store):
//  - insert into a node: the leaf is persisted, then the child word stored and persisted
//    (2 fences). Lazy expansion (a leaf slot becomes a node holding both leaves) persists the
//    new node and leaf first, then swaps the slot (2 fences).
//  - path-compression split: a new parent holding the old node and the new leaf is persisted,
//    the grandparent's child word swapped (the commit), then the old node's header rewritten
//    with one 8-byte store. A crash between the last two leaves a header whose depth is less
//    than the depth at which traversal reaches it; every traversal (lookup, scan, insert,
//    remove) detects that and rewrites the header from a leaf key (PrefixHeader::Repaired),
//    one 8-byte store. No log, no copy of existing nodes.
//  - remove: the child word of the leaf, or of the highest ancestor that would become empty,
//    is cleared and persisted; only then are the unlinked blocks freed.
//  - update: same-length values of <= 8 bytes in place with one 8-byte store, otherwise a new
//    leaf swapped in.
// Nodes never become empty durably; blocks allocated by an interrupted operation are
// unreachable and reclaimed by the allocator rebuild at open.
//
// Thread safety: single-threaded in the paper; here a writer-preferring reader-writer lock (RwLock)
// admits many readers (lookup, scan, verify, stats) or one writer. Readers may repair a stale
// header; they do so with a compare-and-swap of the same deterministic value.
#ifndef PMINDEX_RADIX_WORT_WORT_H_
#define PMINDEX_RADIX_WORT_WORT_H_

#include <atomic>
#include <memory>
#include <shared_mutex>
#include <string>
#include <vector>

#include "pmindex/index.h"
#include "radix/common/rw_lock.h"
#include "radix/common/node_search.h"
#include "radix/common/pm_leaf.h"
#include "radix/common/prefix_header.h"
#include "radix/wort/wort_node.h"

namespace pmindex::radix {

class Wort final : public Index {
 public:
  explicit Wort(std::unique_ptr<Pool> pool);
  ~Wort() override;

  static IndexRegistration Registration();

  const IndexTraits& traits() const override { return traits_; }
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
  Status close() override;

  // Stale headers repaired by traversal since the index was attached.
  uint64_t header_repairs() const { return repairs_.load(std::memory_order_relaxed); }

 private:
  enum class PutMode { kInsert, kUpdate, kUpsert };
  struct ScanState;
  struct WalkTotals;

  Status Put(std::string_view key, std::string_view value, PutMode mode);
  Status LinkNewLeaf(uint64_t* slot, std::string_view key, std::string_view value);
  Status ExpandLeaf(uint64_t* slot, uint32_t depth, std::string_view key, std::string_view value);
  Status SplitPrefix(uint64_t* slot, WortNode* n, const PrefixHeader& h, uint32_t match,
                     std::string_view key, std::string_view value);

  WortNode* node(uint64_t w) const { return pool_->at<WortNode>(ChildOffset(w)); }
  PmLeaf* leaf(uint64_t w) const { return pool_->at<PmLeaf>(ChildOffset(w)); }
  // The node's header as it must be when reached at `depth`, repairing it durably if a
  // path-compression split was interrupted.
  PrefixHeader Header(WortNode* n, uint32_t depth) {
    const uint64_t word = LoadWord(&n->header);
    const PrefixHeader h = PrefixHeader::Decode(word);
    if (h.depth == depth) [[likely]]
      return h;
    return RepairHeader(n, depth, word);
  }
  PrefixHeader RepairHeader(WortNode* n, uint32_t depth, uint64_t word);
  // Any leaf below the node (the end leaf or the leftmost one); nullptr if there is none.
  const PmLeaf* AnyLeaf(const WortNode* n) const;

  bool ScanWord(uint64_t w, uint32_t depth, bool bounded, ScanState& st);
  Status VerifyWord(uint64_t w, uint32_t depth, std::vector<uint8_t>& path, WalkTotals& t);
  Status Walk(uint64_t w, FunctionRef<Status(uint64_t word)> fn);

  std::unique_ptr<Pool> pool_;
  IndexTraits traits_;
  RwLock mu_;  // writer-preferring
  std::atomic<uint64_t> repairs_{0};
};

}  // namespace pmindex::radix

#endif  // PMINDEX_RADIX_WORT_WORT_H_
