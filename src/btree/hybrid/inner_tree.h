// The volatile inner nodes of the hybrid B+tree: a B+tree in DRAM over the persistent leaves,
// with optimistic lock coupling (Leis et al., "The ART of practical synchronization").
//
// Node i of a level-1 node (its children are leaves) covers [keys[i-1], keys[i]); the lower
// bound of child 0 comes from the ancestors. A child's lower bound always equals its leaf's
// persistent low_key (leaves never change their low key; see hybrid_tree.h), so recovery
// rebuilds these nodes from the leaf chain alone.
//
// Placement (the tree's variant inner=pm, variant.h): by default nodes live in DRAM. After
// place_in_pool they are blocks of the pool's allocator instead (a node's 2048 bytes are one
// block of that size class), so a traversal reads them from PM, and every edit persists the
// lines it changed (flush + fence), as an all-PM B+tree's inner update does: a new node is
// persisted before a parent or the root names it, a shifted range of keys and children
// before the edit returns. The leaf chain stays the only source of truth: no persistent word
// names these nodes, so after a crash or a close they are unreachable; recovery builds new
// ones from the leaf chain (build, before the allocator rebuild, which then keeps exactly the
// blocks visit_pool_nodes reports and frees the previous run's). A node the allocator cannot
// give (a full pool) falls back to DRAM, so an inner split never fails.
//
// Thread safety: find_leaf is lock-free for readers (they never write shared memory: a
// version word per node, validated after reading). Writers lock the one node they change
// (lock_parent) and split full nodes eagerly on the way down, so a parent always has room.
// Nodes are never freed while the tree lives (inner nodes do not merge), so a reader may
// always dereference a node pointer it read; it learns from the version whether what it read
// was consistent. Invariants:
//   1. keys in a node are strictly increasing; count <= kMaxKeys; keys[count..kMaxKeys] hold
//      kNoKey (the search's sentinels: the binary search then needs no bound, ChildIndex).
//   2. every key under child i of a node lies in that child's bounds.
//   3. the root pointer changes only while the old root is locked (root split).
#ifndef PMINDEX_BTREE_INNER_TREE_H_
#define PMINDEX_BTREE_INNER_TREE_H_

#include <atomic>
#include <cassert>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <mutex>
#include <utility>
#include <vector>

#include "btree/hybrid/leaf_common.h"
#include "pm/alloc.h"
#include "pm/persist.h"
#include "pmindex/block_visitor.h"
#include "pmindex/status.h"

namespace pmindex::btree {

class InnerTree {
 public:
  static constexpr uint32_t kMaxKeys = 126;  // a node fills 2 KiB
  // The value of every key slot from count on (also a valid key: ChildIndex clamps).
  static constexpr uint64_t kNoKey = UINT64_MAX;

  //   off    0  version            pm::VersionLock word (leaf_common.h)
  //   off    8  count              keys; count + 1 children
  //   off   12  level              1: children are leaves
  //   off   16  keys[127]          keys[0..count) in order, the rest kNoKey (invariant 1)
  //   off 1032  children[127]
  struct alignas(64) Node {
    uint64_t version = 0;
    std::atomic<uint32_t> count{0};
    uint32_t level = 1;
    std::atomic<uint64_t> keys[kMaxKeys + 1];
    std::atomic<void*> children[kMaxKeys + 1];
  };
  static_assert(sizeof(Node) == 2048 && offsetof(Node, keys) == 16);

  InnerTree() = default;
  ~InnerTree() { clear(); }
  InnerTree(const InnerTree&) = delete;
  InnerTree& operator=(const InnerTree&) = delete;

  bool empty() const { return root_.load(std::memory_order_acquire) == nullptr; }

  // The leaf covering `key` (nullptr for an empty tree) with the level-1 node it came from and
  // that node's version: the caller reads the leaf's version, then calls validate(parent, pv)
  // (so a split that finished before its leaf read is noticed).
  // Inline (header): the writers' path keeps one frame (hybrid_tree.h, write).
  [[gnu::always_inline]] void* find_leaf(uint64_t key, Node** parent,
                                         uint64_t* parent_version) const;
  static bool validate(const Node* n, uint64_t v) {
    return VersionLock::ReadValidate(&n->version, v);
  }

  // Locks the level-1 node that holds `leaf` (whose low key is `low_key`; the caller holds the
  // leaf's lock, so the entry cannot move away) and returns it with the child index. With
  // need_room the node has room for one more child (full nodes on the way are split).
  Node* lock_parent(uint64_t low_key, const void* leaf, bool need_room, uint32_t* index);
  static void unlock(Node* n) { VersionLock::Unlock(&n->version, kGen); }
  // Edits of a locked level-1 node (persisted when the node lies in the pool).
  void replace_child(Node* n, uint32_t index, void* leaf);
  void insert_child_after(Node* n, uint32_t index, uint64_t low_key, void* leaf);
  void remove_child(Node* n, uint32_t index);  // index > 0

  // inner=pm: nodes created from now on are blocks of `alloc` in the pool mapped at `base`
  // (`size` bytes), persisted through `pc`. Before any node exists.
  void place_in_pool(pm::Allocator* alloc, pm::PersistContext* pc, char* base, uint64_t size);
  // Reports the pool blocks of the nodes (the allocator rebuild keeps them). Quiescent only.
  Status visit_pool_nodes(BlockVisitor& visitor) const;
  uint64_t pool_node_count() const;

  // The first leaf of a new tree (caller serializes; tree must be empty).
  void init_single(void* leaf);
  // Bulk load from the leaves in key order with their low keys (recovery). Quiescent only.
  void build(const std::vector<std::pair<uint64_t, void*>>& leaves);
  // Forgets every node: DRAM nodes are deleted, pool nodes left to the next allocator
  // rebuild (a close), or freed with free_pool_nodes (a rebuild of a live tree).
  void clear(bool free_pool_nodes = false);

  // Checks invariants 1 and 2 and that the leaves, left to right, are `leaves` with low keys
  // as given. Quiescent only.
  Status verify(const std::vector<std::pair<uint64_t, void*>>& leaves) const;

  uint64_t node_count() const;
  uint64_t dram_bytes() const { return (node_count() - pool_node_count()) * sizeof(Node); }
  uint32_t height() const;

 private:
  Node* new_node(uint32_t level);
  // Splits locked `n` (parent locked too, with room, or n is the root).
  void split(Node* parent, Node* n);
  void insert_at(Node* n, uint32_t pos, uint64_t key, void* right_child);
  bool in_pool(const Node* n) const {
    return base_ != nullptr && reinterpret_cast<const char*>(n) >= base_ &&
           reinterpret_cast<const char*>(n) < base_ + pool_size_;
  }
  // A pool node: flushes its first line (count) and keys[from, to) with children[from, to]
  // (to <= kMaxKeys), then fences. A DRAM node: nothing.
  void persist_range(const Node* n, uint32_t from, uint32_t to);

  std::atomic<Node*> root_{nullptr};
  pm::Allocator* alloc_ = nullptr;  // inner=pm: the pool's allocator, else nullptr
  pm::PersistContext* pc_ = nullptr;
  char* base_ = nullptr;
  uint64_t pool_size_ = 0;
  mutable std::mutex nodes_mu_;  // guards nodes_ (node creation is rare)
  std::vector<Node*> nodes_;
};

namespace inner_detail {

// The number of keys <= key among slots 0 .. 2 * kFirst - 2 (kFirst a power of two).
template <uint32_t kFirst>
[[gnu::always_inline]] inline uint32_t SearchSteps(const InnerTree::Node* n, uint64_t key) {
  uint32_t base = 0;
#pragma GCC unroll 7
  for (uint32_t step = kFirst; step != 0; step /= 2) {
    base = n->keys[base + step - 1].load(std::memory_order_relaxed) <= key ? base + step : base;
  }
  return base;
}

// Index of the child covering `key`: the number of keys <= key.
inline uint32_t ChildIndex(const InnerTree::Node* n, uint64_t key) {
  constexpr auto kRelaxed = std::memory_order_relaxed;
  uint32_t count = n->count.load(kRelaxed);
  if (count > InnerTree::kMaxKeys) count = InnerTree::kMaxKeys;  // torn read; validated later
  // Fetch every key line at once: the binary search then waits for one miss, not seven.
  // All of them, whatever the count: 16 prefetch instructions, where a loop bounded by the
  // count cost three instructions per line (about 125 per descent).
  const char* node = reinterpret_cast<const char*>(n);
  constexpr size_t kKeysEnd = offsetof(InnerTree::Node, keys) + sizeof(n->keys);
#pragma GCC unroll 17
  for (size_t off = 64; off < kKeysEnd; off += 64) PrefetchLine(node + off);  // lines 1..16
  // Fixed steps, no bound and no loop: the slots from count on hold kNoKey, so
  // "keys[i] <= key" stays monotone in i and the count of slots <= key is the answer, except
  // for key == kNoKey, which the clamp corrects. Steps from s down to 1 reach 2s - 1 slots:
  // seven for a full node, fewer for a small one (a root of a few keys), whose search is a
  // chain of dependent loads like the others. (A search bounded by count cost about eight
  // instructions per step; a torn read only gives a wrong index in range.)
  const uint32_t base = count >= 32  ? SearchSteps<64>(n, key)
                        : count >= 8 ? SearchSteps<16>(n, key)
                                     : SearchSteps<4>(n, key);
  return base < count ? base : count;
}

// A stable (unlocked) version. Inner nodes are never marked obsolete.
inline uint64_t StableVersion(const InnerTree::Node* n) {
  uint64_t v = 0;
  const bool live = VersionLock::ReadBegin(&n->version, kGen, &v);
  assert(live);
  (void)live;
  return v;
}

}  // namespace inner_detail

inline void* InnerTree::find_leaf(uint64_t key, Node** parent, uint64_t* parent_version) const {
  using inner_detail::ChildIndex;
  using inner_detail::StableVersion;
restart:
  Node* node = root_.load(std::memory_order_acquire);
  if (node == nullptr) return nullptr;
  uint64_t v = StableVersion(node);
  if (node != root_.load(std::memory_order_acquire)) goto restart;  // root split meanwhile
  for (;;) {
    void* child = node->children[ChildIndex(node, key)].load(std::memory_order_acquire);
    if (!validate(node, v)) goto restart;
    if (node->level == 1) {
      *parent = node;
      *parent_version = v;
      return child;
    }
    Node* next = static_cast<Node*>(child);
    const uint64_t nv = StableVersion(next);
    if (!validate(node, v)) goto restart;  // next may have split before we read nv
    node = next;
    v = nv;
  }
}

}  // namespace pmindex::btree

#endif  // PMINDEX_BTREE_INNER_TREE_H_
