// WOART: Write Optimal Adaptive Radix Tree (Lee et al., FAST 2017) on a pmindex pool.
//
// ART (Node4/16/48/256, path compression, lazy expansion) with node types redesigned so that
// every update commits with one 8-byte (or 1-byte) failure-atomic store:
//  - Node4: a slot word (count, sorted keys, physical slot of each) rewritten atomically;
//  - Node16: a bitmap of valid slots, set after key and child are persisted;
//  - Node48: the child word is persisted into a free slot before its index byte is set;
//  - Node256: the 8-byte child word.
// Growing or shrinking builds and persists the new node, then swaps the parent's child word
// (the node type travels in the word's tag, so type and content change together). Path
// compression as in WORT: the 8-byte header holds depth, prefix length and 5 prefix bytes;
// a split commits by swapping the grandparent's word, then rewrites the old header; a crash
// in between is repaired lazily by traversal (PrefixHeader::Repaired). Each node has an end
// word for the key that ends at it, so keys may be prefixes of other keys.
//
// Crash argument: as WORT (wort.h). The header word and the child words are never committed
// by two dependent stores: a new or changed header only becomes reachable through the one
// store that publishes its node, or is rewritten in a way traversal repairs.
//
// Thread safety: a writer-preferring reader-writer lock (single-threaded design); readers
// may repair a stale header with a compare-and-swap of a deterministic value.
#ifndef PMINDEX_RADIX_WOART_WOART_H_
#define PMINDEX_RADIX_WOART_WOART_H_

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

namespace pmindex::radix {

// The first two words of every WOART node.
struct WoartNodeBase {
  uint64_t header;
  uint64_t end;
};

class Woart final : public Index {
 public:
  explicit Woart(std::unique_ptr<Pool> pool);
  ~Woart() override;

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
  Status recover() override { return Status::OK(); }  // repair is lazy
  Status visit_blocks(BlockVisitor& visitor) override;
  Pool* pool() override { return pool_.get(); }
  pm::PersistContext& pc() const { return pool_->persist_context(); }
  Status close() override;

  uint64_t header_repairs() const { return repairs_.load(std::memory_order_relaxed); }

 private:
  enum class PutMode { kInsert, kUpdate, kUpsert };
  struct ScanState;
  struct WalkTotals;

  Status Put(std::string_view key, std::string_view value, PutMode mode);
  Status LinkNewLeaf(uint64_t* slot, std::string_view key, std::string_view value);
  Status ExpandLeaf(uint64_t* slot, uint32_t depth, std::string_view key, std::string_view value);
  Status SplitPrefix(uint64_t* slot, const PrefixHeader& h, uint32_t match, std::string_view key,
                     std::string_view value);
  Status AddToNode(uint64_t* slot, const PrefixHeader& h, uint8_t b, std::string_view key,
                   std::string_view value);
  // Builds (unpublished) a node of type `tag` with header h, the end word and every child of
  // `old` except key `skip` (-1: none), plus b -> word if add. Returns its tagged word.
  Result<uint64_t> Rebuild(uint64_t old, uint64_t tag, const PrefixHeader& h, int skip, bool add,
                           uint8_t b, uint64_t word);

  WoartNodeBase* base(uint64_t w) const { return pool_->at<WoartNodeBase>(ChildOffset(w)); }
  PmLeaf* leaf(uint64_t w) const { return pool_->at<PmLeaf>(ChildOffset(w)); }
  uint64_t* FindChild(uint64_t w, uint8_t b) const;
  unsigned ChildCount(uint64_t w) const;
  // The node's header as it must be when reached at `depth`, repairing it durably if a
  // path-compression split was interrupted (RepairHeader, the rare path).
  PrefixHeader Header(uint64_t w, uint32_t depth) {
    const uint64_t word = LoadWord(&base(w)->header);
    const PrefixHeader h = PrefixHeader::Decode(word);
    if (h.depth == depth) [[likely]]
      return h;
    return RepairHeader(w, depth, word);
  }
  PrefixHeader RepairHeader(uint64_t w, uint32_t depth, uint64_t word);
  const PmLeaf* AnyLeaf(uint64_t w) const;

  bool ScanWord(uint64_t w, uint32_t depth, bool bounded, ScanState& st);
  Status VerifyWord(uint64_t w, uint32_t depth, std::vector<uint8_t>& path, WalkTotals& t);
  Status Walk(uint64_t w, FunctionRef<Status(uint64_t word)> fn);

  std::unique_ptr<Pool> pool_;
  IndexTraits traits_;
  RwLock mu_;  // writer-preferring
  std::atomic<uint64_t> repairs_{0};
};

}  // namespace pmindex::radix

#endif  // PMINDEX_RADIX_WOART_WOART_H_
