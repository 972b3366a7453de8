// WOART: Write Optimal Adaptive Radix Tree (Lee et al., FAST 2017) on a pmindex pool.
//
// ART (Node4/16/48/256, path compression, lazy expansion) with node types redesigned so that
// every update commits with one 8-byte (or 1-byte) failure-atomic store:
//  - Node4: a slot word (count, sorted keys, physical slot of each) rewritten atomically;
//  - Node16: a bitmap of valid slots, set after key and child are persisted;
//  - Node48: the child word is persisted into a free slot before its index byte is set;
//  - Node256: the 8-byte child word.
// Leaves, lazy expansion, path compression, lazy header repair, scan, verify, the block
// visitor and the locking are the shared PersistentRadixTree (radix/common/
// persistent_radix_tree.h, which also gives the crash argument); this file is what is
// WOART's own: the four node types, adding a child in place or growing, removing one in
// place or shrinking. Growing or shrinking builds and persists the new node, then swaps the
// parent's child word (the node type travels in the word's tag, so type and content change
// together). The header word and the child words are never committed by two dependent
// stores: a new or changed header only becomes reachable through the one store that
// publishes its node, or is rewritten in a way traversal repairs.
//
// Thread safety: as PersistentRadixTree (lookups lock-free under the epoch guard; writers,
// scans and walks under a writer-preferring reader-writer lock). Every word of a live node a
// lookup reads (child words, the Node4 slot word, the Node16 bitmap and key words, the
// Node48 index bytes) is changed with one atomic store and read with atomic loads (Load).
#ifndef PMINDEX_RADIX_WOART_WOART_H_
#define PMINDEX_RADIX_WOART_WOART_H_

#include <cstdint>
#include <utility>
#include <vector>

#include "pmindex/pool.h"
#include "radix/common/node_search.h"
#include "radix/common/persistent_radix_tree.h"
#include "radix/woart/woart_dispatch.h"

namespace pmindex::radix {

// WOART's node operations for PersistentRadixTree (the policy is described there).
struct WoartOps {
  static constexpr int kBits = 8;
  static constexpr char kName[] = "woart";
  static constexpr IndexKind kKind = IndexKind{21};  // never reuse or renumber (doc/format.md)
  // Test-only crash bugs (pm/mutant.h) at WOART's mutation points.
  static std::vector<MutantInfo> Mutants() {
    return {{"woart.skip_leaf_persist",
             "a new leaf is not flushed before the child word that links it"},
            {"woart.header_and_child_two_stores",
             "a Node4 commits its slot word before the child it names is persisted",
             "header-child-two-stores"}};
  }
  static constexpr char kDescription[] =
      "WOART: ART with nodes redesigned for 8-byte failure-atomic updates";
  static constexpr char kParams[] = "woart span=8 prefix=5";
  static constexpr char kSkipLeafPersist[] = "woart.skip_leaf_persist";
  static constexpr char kSplitSkipParentPersist[] = "";  // no such mutant
  static constexpr uint64_t kMaxTag = kTagNode256;
  static constexpr uint64_t kSmallTag = kTagNode4;
  static constexpr std::pair<const char*, uint64_t> kNodeNames[] = {
      {"node4", kTagNode4}, {"node16", kTagNode16}, {"node48", kTagNode48},
      {"node256", kTagNode256}};
  static constexpr bool kFixedFanout = false;
  static constexpr uint64_t kSingleNodeTag = 0;  // four node types
  static constexpr size_t NodeSize(uint64_t tag) { return NodeSizeForTag(tag); }

  static uint64_t* FindChild(const Pool& pool, uint64_t w, uint8_t unit) {
    return DispatchNode(pool, w, [unit](auto* n) { return n->Find(unit); });
  }
  static uint64_t LoadChild(const char* mem, uint64_t w, uint8_t unit) {
    return DispatchNode(mem, w, [unit](auto* n) { return n->Load(unit); });
  }
  static unsigned ChildCount(const Pool& pool, uint64_t w) {
    return DispatchNode(pool, w, [](auto* n) { return n->count(); });
  }
  static uint64_t AnyChild(const Pool& pool, uint64_t w) {
    return DispatchNode(pool, w, [](auto* n) { return n->Any(); });
  }
  template <typename F>
  static bool ForEachChild(const Pool& pool, uint64_t w, unsigned first, F&& f) {
    return DispatchNode(pool, w, [&](auto* n) { return n->ForEach(first, f); });
  }
  static constexpr unsigned kMaxChildren = WoartNode256::kCapacity;
  // The first `limit` (>= 1) children from unit `first`, in key order.
  static size_t Children(const Pool& pool, uint64_t w, unsigned first, uint64_t* out,
                         size_t limit) {
    size_t k = 0;
    ForEachChild(pool, w, first, [&](uint8_t, uint64_t c) {
      out[k++] = c;
      return k < limit;
    });
    return k;
  }
  static void PrefetchChildren(const char* mem, uint64_t w) {
    DispatchNode(mem, w, [](auto* n) { n->PrefetchChildren(); });
  }
  static void BuildAdd(const Pool& pool, uint64_t w, uint8_t unit, uint64_t word) {
    DispatchNode(pool, w, [&](auto* n) { n->BuildAdd(unit, word); });
  }
  // Adds unit -> leaf_word (leaf filled, not yet flushed) to the node *slot points at: in
  // place (2 fences), or into a persisted bigger node swapped in with one store (2 fences).
  static Status AddChild(Pool& pool, uint64_t* slot, const PrefixHeader& h, uint8_t unit,
                         uint64_t leaf_word, PmLeaf* leaf);
  // Removes unit from the node *slot points at: in place (1 fence), or a persisted smaller
  // node without it swapped in (2 fences); the replaced node is appended to `freed`.
  static void RemoveChild(Pool& pool, uint64_t* slot, const PrefixHeader& h, uint8_t unit,
                          std::vector<uint64_t>& freed);
  // Node4 count, Node16 bitmap and Node48 index within their bounds.
  static const char* CheckNode(const Pool& pool, uint64_t w);
};

using Woart = PersistentRadixTree<WoartOps>;

}  // namespace pmindex::radix

#endif  // PMINDEX_RADIX_WOART_WOART_H_
