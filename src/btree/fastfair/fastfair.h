// FAST&FAIR (Hwang, Kim, Won, Nam: "Endurable Transient Inconsistency in Byte-Addressable
// Persistent B+-Tree", FAST 2018): a B+tree whose every node, inner and leaf, lives in the
// pool, with no log and no copy-on-write. Node layout, reading rule and shift orders: node.h.
//
// Node size: 512 bytes (28 slots), or 256 bytes (12 slots, one XPLine) with the index
// parameter node_bytes=256, the write-amplification study's XPLine-aware sizing; the pool's
// header records the parameter, so every node of a pool has one size.
//
// Persistent state: the pool's root area holds {magic, kind, root} (FastFairRoot); root is the
// pool offset of the root node (0: empty tree). Nodes of one level form a singly linked list
// through `sibling`, leftmost first (low_key 0); an inner node routes a key to the child of its
// largest entry key <= the key, or to `leftmost`.
//
// Insert (FAST): an in-place shift, flushed line by line, one fence per line; the count word
// last (node.h). Delete: the left shift the same way; nodes are never merged or freed (as in
// the authors' concurrent code), so an emptied node stays in its list.
//
// Split (FAIR), of a full node N:
//   1. build the new right node S from N's upper half (its low_key = the split key, its
//      sibling = N's), persist S whole;
//   2. N.sibling = S: one 8-byte store, persisted (the commit point: S is reachable);
//   3. truncate N: count, persisted, then its sentinel, persisted;
//   4. insert the pending entry; unlock; insert (split key, S) into the parent level.
// Between 2 and 4 a key >= S.low_key is found through N.sibling: every reader and writer
// moves right while the key is >= the sibling's low key, and a reader of N ignores N's
// entries >= it. A crash before 2 leaves S unreachable (the allocator rebuild frees it);
// after 2 and before 3 recovery truncates N; a parent entry that was never inserted is not
// needed (the level's list reaches S), so none is repaired. A new root is built and
// persisted before the root word names it (8-byte store, persisted); a root grows only
// (no merges), so there is no root merge to make failure-atomic.
//
// Recovery walks every node: resets `seq`, and rewrites a node left mid-shift or
// mid-truncation into its canonical form with the same ordered stores (node.h), so a second
// crash during recovery is again readable. Locks need nothing: the version words carry the
// pool generation. Blocks allocated and never linked are freed by the allocator rebuild.
//
// Concurrency: writers lock one node at a time (pm::VersionLock in the node, pool
// generation), two during a split (N and the not yet reachable S), and move right under the
// lock. Readers take no lock: across one insert's shift they read one of its intermediate
// states (node.h) and need no retry; a reader that saw the count rise meanwhile (an insert
// finished, and another may have begun in the next frame) reads the node again, and so does
// one that overlapped a delete or a truncation, which make `seq` odd while they run. Nodes
// are never freed while the tree is open, so a reader never meets a reused block. A reader
// may see an insert whose persist is still under way (as in FAST&FAIR); the writer returns
// only once it is durable.
#ifndef PMINDEX_BTREE_FASTFAIR_FASTFAIR_H_
#define PMINDEX_BTREE_FASTFAIR_FASTFAIR_H_

#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "btree/fastfair/node.h"
#include "pm/persist.h"
#include "pmindex/index.h"

namespace pmindex::btree::fastfair {

// The tree's words in the pool's root area.
//
//   offset 0  magic  kFastFairMagic once initialized
//   offset 8  kind   40 (IndexKind of fastfair)
//   offset 16 root   pool offset of the root node, 0 = empty tree
struct FastFairRoot {
  uint64_t magic;
  uint64_t kind;
  uint64_t root;
};
static_assert(sizeof(FastFairRoot) == 24 && offsetof(FastFairRoot, root) == 16);
static_assert(sizeof(FastFairRoot) <= kRootAreaSize);
inline constexpr uint64_t kFastFairMagic = 0x3172696166747366ull;  // "fstfair1"
inline constexpr IndexKind kFastFairKind = IndexKind{40};  // never reuse (doc/format.md)

class FastFairTree final : public Index {
 public:
  static IndexTraits Traits();
  static Result<std::unique_ptr<Index>> Attach(std::unique_ptr<Pool> pool, bool fresh);
  ~FastFairTree() override { close().IgnoreError(); }

  const IndexTraits& traits() const override;
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
  Status close() override;

 private:
  enum class Op : uint8_t { kInsert, kUpdate, kUpsert };
  FastFairTree(std::unique_ptr<Pool> pool, size_t node_bytes);
  // The node size named by the pool's index parameters (node_bytes=512 or 256).
  static Result<size_t> NodeBytes(std::string_view params);
  // Entries a node holds at most (one slot is the overflow slot).
  size_t max_entries() const { return slots_ - 1; }

  Node* at(uint64_t off) const { return reinterpret_cast<Node*>(base_ + off); }
  uint64_t off(const Node* n) const {
    return static_cast<uint64_t>(reinterpret_cast<const char*>(n) - base_);
  }
  Status check_key(std::string_view key) const;

  // Reads: a node's entries under the lock-free protocol (retries across `seq`).
  void read(const Node* node, View* v) const;
  void probe(const Node* node, uint64_t k, Probe* p) const;
  // The node at `level` whose range may hold k (move-right done for the inner levels only).
  Node* descend(uint64_t k, uint32_t level) const;
  bool find(uint64_t k, uint64_t* value) const;

  // Writes.
  Status put(Op op, uint64_t k, uint64_t v);
  Status erase(uint64_t k);
  // The node at `level` covering k, locked; nullptr if the tree is empty.
  Node* lock_for(uint64_t k, uint32_t level);
  void unlock(Node* n) { VersionLock::Unlock(&n->version, gen_); }
  void fast_insert(Node* n, const View& v, size_t pos, uint64_t k, uint64_t value);
  void fast_delete(Node* n, const View& v, size_t pos);
  // Splits locked, full `n` and inserts (k, value); unlocks. OutOfSpace leaves n unchanged.
  Status split_insert(Node* n, const View& v, uint64_t k, uint64_t value);
  Node* build_sibling(Node* n, const View& v, uint64_t block, uint64_t k, uint64_t value,
                      uint64_t* split_key, size_t* keep);
  void truncate(Node* n, const View& v, size_t keep);
  Status parent_insert(uint32_t level, uint64_t k, uint64_t child);
  Status grow_root(uint32_t level);
  Status create_first_leaf();
  // Writes a fresh node (not yet reachable) and persists it.
  void init_node(Node* n, uint32_t level, uint64_t low, uint64_t sibling, uint64_t leftmost,
                 const uint64_t* keys, const uint64_t* values, size_t count, bool persist);

  // Maintenance (fastfair_maint.cc).
  Status canonicalize(Node* n);
  // Calls fn(node, offset) for every node, level by level from the root, each level's list
  // left to right, after checking that the node and its sibling lie in the pool.
  Status walk(FunctionRef<Status(Node*, uint64_t)> fn) const;
  Status check_node(uint64_t off, uint32_t level) const;
  Status verify_node(Node* n, uint64_t o, uint64_t* keys) const;

  std::unique_ptr<Pool> pool_;
  pm::PersistContext* pc_;
  char* base_;
  FastFairRoot* root_;
  uint32_t gen_;
  size_t node_bytes_;  // 512 or 256, as the pool's parameters say
  size_t slots_;       // SlotsFor(node_bytes_)
  std::mutex root_mu_;  // creation of the first leaf and of a new root
};

IndexRegistration Registration();

}  // namespace pmindex::btree::fastfair

#endif  // PMINDEX_BTREE_FASTFAIR_FASTFAIR_H_
