// PersistentRadixTree<Ops>: the tree code WORT and WOART share (Lee et al., FAST 2017), as
// the hybrid B+trees share HybridTree<Layout>. The tree owns lookup, insert/update/upsert,
// remove, lazy expansion, path-compression split, lazy header repair, ordered scan, verify,
// stats, the block visitor and the Index boilerplate; a design supplies only its inner
// nodes through the policy `Ops` (WortOps in wort/wort.h, WoartOps in woart/woart.h).
//
// Shape: a child word (node_search.h) is 0, a tagged leaf (PmLeaf, lazy expansion) or a
// tagged node. Every node starts with an 8-byte PrefixHeader word and an end word for the
// key that ends at the node (keys may be prefixes of other keys); keys are walked in units
// of Ops::kBits bits (KeySpan).
//
// Crash argument (every change commits with one 8-byte, or 1-byte, failure-atomic store):
//  - new key in an empty slot: the leaf is persisted, then the slot stored and persisted
//    (2 fences). New key beside an existing one in a node: Ops::AddChild (2 fences).
//  - lazy expansion (a leaf slot must hold two keys): a new smallest node holding both
//    leaves is persisted with the new leaf, then the slot swapped (2 fences).
//  - path-compression split: a new parent holding the old node and the new leaf is
//    persisted, the grandparent's word swapped (the commit), then the old node's header
//    rewritten with one 8-byte store (3 fences). A crash between the last two leaves a
//    header whose depth is less than the depth at which traversal reaches it; every
//    traversal detects that and rewrites the header from a leaf key (PrefixHeader::Repaired),
//    one 8-byte store. No log, no copy of existing nodes.
//  - remove: the word of the leaf, or of the highest ancestor that would become empty, is
//    cleared and persisted (or Ops::RemoveChild commits the smaller node); only then are the
//    unlinked blocks retired (freed after the lookups that may hold them have left). Nodes
//    never become empty durably.
//  - update: same-length values of <= 8 bytes in place with one 8-byte store, otherwise a
//    new leaf swapped in (ReplaceLeafValue), the old one retired.
// Blocks allocated by an interrupted operation are unreachable and reclaimed by the
// allocator rebuild at open, so recover() has nothing to do.
//
// Thread safety: single-threaded designs. Writers (insert/update/upsert/remove) are
// serialized by the writer side of a writer-preferring reader-writer lock (RwLock); scans,
// verify, stats and the block visitor take its reader side. Lookups take no lock: they hold
// the pool's epoch guard (pm/epoch.h) instead, and writers retire every block they unlink
// through the allocator (freed once no guard that could have reached it is open). Every
// word a lookup can meet while a writer changes it is read and written with atomics (child
// words, end words, headers, WOART slot/bitmap/index words and Node16 key words, the value
// word of a leaf): a lookup sees each node as it was at some moment during the lookup, and
// the published tree is consistent at every store, since each change commits with one store
// of a word whose target was written first. A lookup may see a committed store before it is
// durable (no read-side flush, as in every lock-free persistent index here). Readers may
// repair a stale header; they do so with a compare-and-swap of the same deterministic value
// (a lookup that reached a node over a path a concurrent split replaced sees a header deeper
// than its own depth, and neither repairs nor needs to: the position is unchanged).
//
// The policy `Ops` (all static; `w` is a tagged node word):
//   kBits, kName, kKind, kDescription, kParams        unit width and registration
//   kSkipLeafPersist, kSplitSkipParentPersist          mutant names (the second may be "")
//   kMaxTag, NodeSize(tag), kSmallTag, kNodeNames      node tags, block sizes, stats names
//   kFixedFanout                                       FindChild never returns nullptr
//   kSingleNodeTag                                     the tag of every inner node word, or
//                                                      0 if there are several
//   FindChild(pool, w, unit) -> uint64_t*              the child word of `unit`, or nullptr
//                                                      (writers, under the writer lock)
//   LoadChild(mem, w, unit) -> uint64_t                the child word of `unit` or 0, read
//                                                      with atomics (lock-free lookups; mem
//                                                      is the pool's base, Pool::base())
//   ChildCount(pool, w), AnyChild(pool, w)             live children; some child word or 0
//                                                      (AnyChild reads with atomics: lookups
//                                                      repairing a header call it)
//   ForEachChild(pool, w, first, f) -> bool            f(unit, word) -> bool in unit order
//                                                      from `first`; false once f stops
//   kMaxChildren                                       most children a node can have
//   Children(pool, w, first, out) -> size_t            the child words from unit `first`
//                                                      in unit order into out; their count
//   PrefetchChildren(mem, w)                           requests the lines ForEachChild from
//                                                      unit 0 reads (the scan's prefetch)
//   BuildAdd(pool, w, unit, word)                      into an unpublished node
//   AddChild(pool, slot, h, unit, leaf_word, leaf)     commit a persisted-to-be leaf in *slot
//   RemoveChild(pool, slot, h, unit, freed)            commit the removal of `unit` in *slot
//   CheckNode(pool, w) -> const char*                  node-specific verify(), nullptr if ok
#ifndef PMINDEX_RADIX_COMMON_PERSISTENT_RADIX_TREE_H_
#define PMINDEX_RADIX_COMMON_PERSISTENT_RADIX_TREE_H_

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "pm/prefetch.h"
#include "pm/rw_lock.h"
#include "pmindex/index.h"
#include "radix/common/key.h"
#include "radix/common/node_search.h"
#include "radix/common/pm_leaf.h"
#include "radix/common/pm_tree_util.h"
#include "radix/common/prefix_header.h"

namespace pmindex::radix {

// The first two words of every persistent radix node.
//   offset  size  field
//   0       8     header   PrefixHeader word
//   8       8     end      leaf of the key that ends at this node's discriminating position
struct RadixNodeBase {
  uint64_t header;
  uint64_t end;
};
static_assert(sizeof(RadixNodeBase) == 16);

template <typename Ops>
class PersistentRadixTree final : public Index {
 public:
  using Span = KeySpan<Ops::kBits>;

  explicit PersistentRadixTree(std::unique_ptr<Pool> pool);
  // A destructor cannot report an error: users who need to see one call close() first.
  ~PersistentRadixTree() override { close().IgnoreError(); }

  static IndexRegistration Registration();

  const IndexTraits& traits() const override { return traits_; }
  Status insert(std::string_view key, std::string_view value) override {
    return Put(key, value, PutMode::kInsert);
  }
  Status update(std::string_view key, std::string_view value) override {
    return Put(key, value, PutMode::kUpdate);
  }
  Status upsert(std::string_view key, std::string_view value) override {
    return Put(key, value, PutMode::kUpsert);
  }
  Status remove(std::string_view key) override;
  Status lookup(std::string_view key, std::string* value) override;
  size_t scan(std::string_view start, size_t max_count, ScanCallback fn) override;
  Status verify() override;
  IndexStats stats() override;
  // Nothing to finish eagerly: interrupted splits are repaired lazily by traversal, and
  // blocks of interrupted inserts are unreachable (the allocator rebuild frees them).
  Status recover() override { return Status::OK(); }
  Status visit_blocks(BlockVisitor& visitor) override;
  Pool* pool() override { return pool_.get(); }
  pm::PersistContext& pc() const { return pool_->persist_context(); }
  Status close() override;

  // Stale headers repaired by traversal since the index was attached.
  uint64_t header_repairs() const { return repairs_.load(std::memory_order_relaxed); }

 private:
  enum class PutMode { kInsert, kUpdate, kUpsert };
  struct ScanAccess;  // RadixScan's view of the nodes

  Status Put(std::string_view key, std::string_view value, PutMode mode);
  Status PutLocked(std::string_view key, std::string_view value, PutMode mode);
  Status LinkNewLeaf(uint64_t* slot, std::string_view key, std::string_view value);
  Status AddChild(uint64_t* slot, const PrefixHeader& h, uint8_t unit, std::string_view key,
                  std::string_view value);
  Status ExpandLeaf(uint64_t* slot, uint32_t depth, std::string_view key, std::string_view value);
  // A zeroed small node (its tagged word in *node) and a filled leaf for key/value (its word in
  // *leaf_word), neither persisted nor linked; nothing is held if either fails.
  Result<PmLeaf*> NewNodeAndLeaf(std::string_view key, std::string_view value, uint64_t* node,
                                 uint64_t* leaf_word);
  Status SplitPrefix(uint64_t* slot, const PrefixHeader& h, uint32_t match, std::string_view key,
                     std::string_view value);
  // Puts `word` into an unpublished node: the end word if its key ends at `pos`.
  void Place(uint64_t w, uint32_t pos, const uint8_t* key, size_t key_units, uint64_t word) {
    if (pos == key_units)
      base(w)->end = word;
    else
      Ops::BuildAdd(*pool_, w, Span::unit(key, pos), word);
  }

  RadixNodeBase* base(uint64_t w) const { return pool_->at<RadixNodeBase>(ChildOffset(w)); }
  PmLeaf* leaf(uint64_t w) const { return pool_->at<PmLeaf>(ChildOffset(w)); }
  // True if w can be followed without leaving the pool (verify and the visitor).
  bool ValidWord(uint64_t w) const {
    return ValidChildWord(*pool_, w, Ops::kMaxTag, Ops::NodeSize(ChildTagOf(w)));
  }
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
  // RepairHeader for the lookup loop, kept out of it: the header word it must use.
  [[gnu::cold, gnu::noinline]] uint64_t RepairHeaderWord(uint64_t w, uint32_t depth,
                                                         uint64_t word) {
    return RepairHeader(w, depth, word).Encode();
  }
  // The lock-free lookup walk, under the caller's epoch guard (mem is Pool::base()).
  //
  // Descend: the walk of an 8-byte key (WordKey, pm_leaf.h) while every node sits at the
  // depth counted and has no prefix: the next unit is the top bits of the key word, shifted
  // up one unit per level, and the header check one compare with the counted depth. It stops
  // at 0, at a leaf, or at the first other node (*depth = its depth), from which FindFrom
  // goes on. Each lookup's instructions decide how many lookups the CPU overlaps: a lookup
  // into a tree larger than the caches waits for two or three DRAM misses, and the next
  // lookup's misses issue during that wait only if its instructions up to them fit in the
  // reorder window behind the waiting load (doc/performance.md, "Radix lookups at 1M keys").
  // A copy of the loop body per unit (tried) ran fewer instructions and more slowly.
  static constexpr uint32_t kWordUnits = static_cast<uint32_t>(Span::units(8));
  [[gnu::always_inline]] static uint64_t Descend(const char* mem, uint64_t w, uint64_t be,
                                                 uint32_t* depth) {
    uint32_t d = 0;
    for (;;) {
      if (w == 0 || IsLeafWord(w)) return w;
      const uint64_t hw = LoadWord(reinterpret_cast<const uint64_t*>(NodeAt(mem, w)));
      if (PrefixHeader::DepthAndLenOf(hw) != d || d == kWordUnits) [[unlikely]] {
        *depth = d;
        return w;
      }
      w = Ops::LoadChild(mem, w, static_cast<uint8_t>(be >> (64 - Ops::kBits)));
      be <<= Ops::kBits;
      ++d;
    }
  }
  // Before a writer takes the lock: the lookup walk for the key (under the epoch guard, so
  // every word it follows is a live block), with the leaf it ends at requested, so that the
  // misses of the path overlap whatever the lock's locked instruction waits for (in adr, the
  // write-backs of the previous operation's persists: a locked instruction waits for them,
  // loads before it in program order do not; doc/performance.md, "Radix inserts and
  // loads"). The locked walk that follows finds the lines cached. Reads only.
  [[gnu::always_inline]] void WarmPath(std::string_view key) {
    auto guard = pool_->allocator().epoch_guard();
    const char* const mem = pool_->base();
    uint32_t depth = 0;
    const uint64_t w = Descend(mem, LoadWord(reinterpret_cast<const uint64_t*>(mem + root_offset_)),
                               WordKey<Ops::kBits>::Of(key).be, &depth);
    if (IsLeafWord(w)) pm::PrefetchLine(LeafAt(mem, w));
  }
  // The general walk from word w reached at depth, for a key held as ByteKey or WordKey:
  // prefixes, stale headers (repaired), keys ending at a node. Out of line: lookup's fast
  // path keeps fewer registers live.
  template <typename Key>
  [[gnu::noinline]] Status FindFrom(const char* mem, const Key& key, uint64_t w, uint32_t depth,
                                    std::string* value);
  template <typename Key>
  [[gnu::always_inline]] static Status LeafResult(const PmLeaf* l, const Key& key,
                                                  std::string* value) {
    if (!key.Matches(*l)) return Status::NotFound();
    if (value) l->LoadValue(value);
    return Status::OK();
  }
  // Child words on the lookup path. A design whose inner nodes all carry one tag
  // (Ops::kSingleNodeTag != 0: WORT) tells a leaf by one bit and finds a node by subtracting
  // the tag, which folds into the loads' address.
  static bool IsLeafWord(uint64_t w) {
    if constexpr (Ops::kSingleNodeTag != 0) {
      static_assert((kTagLeaf & 1) == 1 && (Ops::kSingleNodeTag & 1) == 0);
      return (w & 1) != 0;
    } else {
      return IsLeafChild(w);
    }
  }
  static const char* NodeAt(const char* mem, uint64_t w) {
    if constexpr (Ops::kSingleNodeTag != 0)
      return mem + (w - Ops::kSingleNodeTag);
    else
      return mem + ChildOffset(w);
  }
  static const char* LeafAt(const char* mem, uint64_t w) { return mem + (w - kTagLeaf); }
  // Any leaf below the node (the end leaf or one below some child); nullptr if none.
  const PmLeaf* AnyLeaf(uint64_t w) const;

  Status VerifyWord(uint64_t w, uint32_t depth, std::vector<uint8_t>& path);
  Status Walk(uint64_t w, FunctionRef<Status(uint64_t word)> fn);
  Status Corruption(const std::string& what) const {
    return Status::Corruption(std::string(Ops::kName) + ": " + what);
  }

  std::unique_ptr<Pool> pool_;
  uint64_t root_offset_;  // of RootSlot in the mapping: lookups skip the call to find it
  IndexTraits traits_;
  pm::RwLock mu_;  // writer-preferring; writers, scans and whole-tree walks (not lookups)
  std::atomic<uint64_t> repairs_{0};
};

}  // namespace pmindex::radix

#endif  // PMINDEX_RADIX_COMMON_PERSISTENT_RADIX_TREE_H_
