// P-ART: the persistent ART of RECIPE (Lee et al., SOSP 2019) on a pmindex pool.
//
// ART (Node4/16/48/256, path compression, lazy expansion: a leaf hangs where its key first
// differs) with ROWEX concurrency (Leis et al., DaMoN 2016): writers lock the nodes they
// change (pm::VersionLock words in the nodes, through RowexNodeLock), readers take no lock
// and never retry, because every change a reader can see is one atomic 8-byte store and a
// replaced node stays intact (marked obsolete, freed through the pool's epochs once no
// reader can hold it). RECIPE's conversion makes it persistent: each store a reader can
// see is flushed and fenced in the order the DRAM algorithm stores, and one atomic store
// commits each change, so a crash leaves the tree as some reader could have seen it.
//
// Shape: as WOART's (radix/common/persistent_radix_tree.h): a child word is 0, a tagged leaf
// (PmLeaf) or a tagged node; every node starts with a lock word, a PrefixHeader word and an
// end word for a key that ends at the node (keys may be prefixes of other keys). A node's
// discriminating position (header depth + prefix length) never changes; a node reached at
// another depth than its header's (a crash between a prefix split's commit and its header
// rewrite, or a reader on a path a writer just changed) is read as its header must be at
// that depth (prefix units from a leaf below it, PrefixHeader::Repaired), in DRAM.
//
// Changes and their commits (crash argument; fences are per operation in adr):
//  - new leaf into an empty slot (root, end word): leaf persisted, slot stored and persisted
//    (2 fences). Into a node with room: the node type's Add (node4.h ... node256.h), 2 fences.
//  - full node (slots used up): a copy with the new child, compacted or grown, persisted
//    with the leaf, then swapped into the parent's child word (2 fences); the old node is
//    marked obsolete and retired.
//  - lazy expansion (a leaf's slot must hold two keys): a new Node4 holding both persisted
//    with the new leaf, then swapped in (2 fences).
//  - prefix split: a new Node4 holding the old node and the new leaf persisted and swapped
//    in (the commit), then the old node's header rewritten with one store (3 fences).
//  - remove: the leaf's child word cleared (1 fence); a node left with fewer entries than
//    its type warrants is replaced by a smaller copy; a node left with one entry is replaced
//    by that entry (its header rewritten for its new depth after the commit), so every node
//    keeps two entries or more. Unlinked blocks are retired after the commit is durable.
//  - update: a same-length value of <= 8 bytes in place with one store, else a new leaf
//    swapped in (ReplaceLeafValue).
// A block allocated by an interrupted change is unreachable and freed by the allocator
// rebuild; a crash-held lock is free after reopening (generation). recover() has nothing to
// do.
//
// Locking (ROWEX): a change locks the node holding the child word it stores (the root's
// lock word for the root word) and, when it replaces a node, that node too, parent first;
// after locking it re-checks what it read on the way and restarts from the root if that
// changed or a locked node is obsolete. Writers hold the pool's epoch guard from the root.
//
// Thread safety: every operation may run concurrently with every other. Lookups are
// lock-free; scans take no lock either (each key returned was present during the scan, in
// key order; a scan is not a snapshot). verify(), stats() and visit_blocks() read without
// locks and expect no concurrent writers.
#ifndef PMINDEX_RADIX_PART_PART_H_
#define PMINDEX_RADIX_PART_PART_H_

#include <atomic>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "pmindex/index.h"
#include "radix/common/key.h"
#include "radix/common/pm_leaf.h"
#include "radix/common/pm_tree_util.h"
#include "radix/common/prefix_header.h"
#include "radix/common/rowex_lock.h"
#include "radix/part/part_dispatch.h"

namespace pmindex::radix::part {

inline constexpr IndexKind kKind = IndexKind{23};  // never reuse or renumber (doc/format.md)
inline constexpr char kSkipLeafPersist[] = "part.skip_leaf_persist";
inline constexpr char kSkipNodePersist[] = "part.skip_node_persist";

class PArt final : public Index {
 public:
  using Span = KeySpan<8>;

  explicit PArt(std::unique_ptr<Pool> pool);
  ~PArt() override { close().IgnoreError(); }

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
  // Nothing to finish: see the crash argument above.
  Status recover() override { return Status::OK(); }
  Status visit_blocks(BlockVisitor& visitor) override;
  Pool* pool() override { return pool_.get(); }
  Status close() override;

  // Writer restarts (a re-check under a lock failed) since the index was attached.
  uint64_t restarts() const { return restarts_.load(std::memory_order_relaxed); }

 private:
  enum class PutMode { kInsert, kUpdate, kUpsert };
  struct ScanAccess;  // RadixScan's view of the nodes (part_walk.cc)
  // Where a child word lives: in node `node` (a tagged word) under key unit `unit`, in its
  // end word (unit -1), or the root word (node 0).
  struct Link {
    uint64_t node = 0;
    int unit = 0;
  };
  // A step's outcome: a status, or nullopt: restart from the root.
  using Outcome = std::optional<Status>;
  // The writer's place in its descent: the link of the word it reached (at), the link of
  // the node holding it (up), and that node's header as at its depth (for copies).
  struct Place {
    Link up, at;
    PrefixHeader holder;
    uint32_t depth = 0;  // depth the word at `at` is reached at
  };

  Status Put(std::string_view key, std::string_view value, PutMode mode);
  Outcome PutOnce(std::string_view key, std::string_view value, PutMode mode);
  bool LeavesPrefix(const Place& p, uint64_t w, std::string_view key, std::string_view value,
                    PutMode mode, PrefixHeader* h, Outcome* out);
  Outcome AddLeaf(const Place& p, std::string_view key, std::string_view value);
  Outcome AddByCopy(const Place& p, uint64_t leaf_word, PmLeaf* l);
  Outcome UpdateLeaf(const Place& p, uint64_t w, std::string_view value);
  Outcome ExpandLeaf(const Place& p, uint64_t w, std::string_view key, std::string_view value);
  Outcome SplitPrefix(const Place& p, uint64_t w, const PrefixHeader& h, uint32_t match,
                      std::string_view key, std::string_view value);
  Outcome RemoveOnce(std::string_view key);
  Outcome RemoveFromNode(const Place& p, uint64_t leaf_word);
  Outcome Collapse(uint64_t* gslot, uint64_t n, const PrefixHeader& h, uint64_t leaf_word,
                   RowexNodeLock& nlock);

  // Locks the node holding link l (the root lock for the root word); false if obsolete.
  bool LockHolder(const Link& l, RowexNodeLock& lock) {
    return lock.Lock(l.node == 0 ? root_lock_ : &base(l.node)->lock, gen_);
  }
  // The word at l (atomic loads: any thread).
  [[gnu::always_inline]] uint64_t Read(const Link& l) const {
    if (l.node == 0) return LoadWord(root_);
    if (l.unit < 0) return LoadWord(&base(l.node)->end);
    return Dispatch(mem(), l.node,
                    [&](auto* n) { return n->Load(static_cast<uint8_t>(l.unit)); });
  }
  // The child word at l, for its holder's lock owner; nullptr if the unit has no child.
  uint64_t* SlotOf(const Link& l);
  // A copy of node `old` of type `tag` with header h, without unit `skip` (-1: none) and
  // with unit -> word if `add`; unpublished, not persisted. Its tagged word.
  Result<uint64_t> Copy(uint64_t old, uint64_t tag, const PrefixHeader& h, int skip, bool add,
                        uint8_t unit, uint64_t word);
  // A zeroed Node4 (its tagged word in *node) and a filled leaf (its word in *leaf_word),
  // neither persisted nor linked; nothing is held if either fails.
  Result<PmLeaf*> NewNodeAndLeaf(std::string_view key, std::string_view value, uint64_t* node,
                                 uint64_t* leaf_word);
  // Puts `word` into an unpublished node: its end word if the key ends at `pos`.
  void PlaceInto(uint64_t node, uint32_t pos, const uint8_t* key, size_t units, uint64_t word);
  // Persists a new node (and a new leaf, if any), fences, and commits it into *slot.
  void Publish(uint64_t* slot, uint64_t node, const PmLeaf* leaf);

  NodeBase* base(uint64_t w) const { return pool_->at<NodeBase>(ChildOffset(w)); }
  PmLeaf* leaf(uint64_t w) const { return pool_->at<PmLeaf>(ChildOffset(w)); }
  const char* mem() const { return pool_->base(); }
  // The node's header as it must be when reached at `depth` (DRAM only; see the file
  // comment): its header word when that sits at `depth`.
  PrefixHeader HeaderAt(uint64_t w, uint32_t depth) const;
  // Any leaf below a node; nullptr if none (a damaged node).
  const PmLeaf* AnyLeaf(uint64_t w) const;
  uint64_t Any(uint64_t w) const {
    return Dispatch(mem(), w, [](auto* n) { return n->Any(); });
  }
  unsigned Live(uint64_t w) const {
    return Dispatch(mem(), w, [](auto* n) { return n->Live(); });
  }
  bool ValidWord(uint64_t w) const {
    return ValidChildWord(*pool_, w, kTagNode256, NodeSize(ChildTagOf(w)));
  }
  template <typename Key>
  Status Find(const Key& key, std::string* value) const;
  Status VerifyWord(uint64_t w, uint32_t depth, std::vector<uint8_t>& path) const;
  Status VerifyChildren(uint64_t w, const PrefixHeader& h, std::vector<uint8_t>& path) const;
  Status Walk(uint64_t w, FunctionRef<Status(uint64_t word)> fn) const;
  Status Corruption(const std::string& what) const {
    return Status::Corruption("part: " + what);
  }

  std::unique_ptr<Pool> pool_;
  uint64_t* root_;       // root area word 0: the root child word
  uint64_t* root_lock_;  // root area word 2: the lock of the root word (word 1: empty mark)
  uint32_t gen_;         // the pool generation the locks carry
  IndexTraits traits_;
  std::atomic<uint64_t> restarts_{0};
};

}  // namespace pmindex::radix::part

#endif  // PMINDEX_RADIX_PART_PART_H_
