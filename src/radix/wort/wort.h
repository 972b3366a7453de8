// WORT: Write Optimal Radix Tree (Lee et al., FAST 2017) on a pmindex pool.
//
// A radix tree with a 4-bit span: every inner node (WortNode, wort_node.h) has 16 child
// words plus an end word for the key that ends at the node. Leaves, lazy expansion, path
// compression into the 8-byte header, lazy header repair, scan, verify, the block visitor
// and the locking are the shared PersistentRadixTree (radix/common/persistent_radix_tree.h,
// which also gives the crash argument); this file is what is WORT's own: one node type with
// a slot per nibble, so finding a child is an index, adding one is filling an empty slot
// (the tree's LinkNewLeaf, 2 fences) and removing one is clearing it (1 fence). WORT never
// grows or shrinks a node.
//
// Thread safety: as PersistentRadixTree (lookups lock-free under the epoch guard; writers,
// scans and walks under a writer-preferring reader-writer lock). Every child word of a live
// node is changed with one atomic store.
#ifndef PMINDEX_RADIX_WORT_WORT_H_
#define PMINDEX_RADIX_WORT_WORT_H_

#include <cstdint>
#include <utility>
#include <vector>

#include "pm/prefetch.h"
#include "pmindex/pool.h"
#include "radix/common/node_search.h"
#include "radix/common/persistent_radix_tree.h"
#include "radix/common/pm_tree_util.h"
#include "radix/wort/wort_node.h"

namespace pmindex::radix {

// WORT's node operations for PersistentRadixTree (the policy is described there).
struct WortOps {
  static constexpr int kBits = 4;
  static constexpr char kName[] = "wort";
  static constexpr IndexKind kKind = IndexKind{20};  // never reuse or renumber (doc/format.md)
  // Test-only crash bugs (pm/mutant.h) at WORT's mutation points.
  static std::vector<MutantInfo> Mutants() {
    return {{"wort.skip_leaf_persist",
             "a new leaf is not flushed before the child word that links it"},
            {"wort.split_skip_parent_persist",
             "the new parent of a split is linked before it is persisted"}};
  }
  static constexpr char kDescription[] =
      "WORT: write-optimal radix tree, 4-bit span, lazy header repair";
  static constexpr char kParams[] = "wort span=4 prefix=5";
  static constexpr char kSkipLeafPersist[] = "wort.skip_leaf_persist";
  static constexpr char kSplitSkipParentPersist[] = "wort.split_skip_parent_persist";
  static constexpr uint64_t kMaxTag = kTagNode4;  // the tag of WortNode
  static constexpr uint64_t kSmallTag = kTagNode4;
  static constexpr std::pair<const char*, uint64_t> kNodeNames[] = {{"node16", kTagNode4}};
  static constexpr bool kFixedFanout = true;
  static constexpr uint64_t kSingleNodeTag = kTagNode4;
  static constexpr size_t NodeSize(uint64_t) { return sizeof(WortNode); }

  static WortNode* node(const Pool& pool, uint64_t w) { return pool.at<WortNode>(ChildOffset(w)); }
  static uint64_t* FindChild(const Pool& pool, uint64_t w, uint8_t unit) {
    return &node(pool, w)->child[unit];
  }
  // w is a node word, so its tag is kTagNode4: subtracting it folds into the load's address.
  static uint64_t LoadChild(const char* mem, uint64_t w, uint8_t unit) {
    return LoadWord(&reinterpret_cast<const WortNode*>(mem + (w - kTagNode4))->child[unit]);
  }
  static unsigned ChildCount(const Pool& pool, uint64_t w) {
    const WortNode* n = node(pool, w);
    unsigned used = 0;
    for (unsigned c = 0; c < WortNode::kFanout; ++c) used += n->child[c] != 0;
    return used;
  }
  static uint64_t AnyChild(const Pool& pool, uint64_t w) {
    const WortNode* n = node(pool, w);
    for (unsigned c = 0; c < WortNode::kFanout; ++c)
      if (const uint64_t word = LoadWord(&n->child[c]); word != 0) return word;
    return 0;
  }
  template <typename F>
  static bool ForEachChild(const Pool& pool, uint64_t w, unsigned first, F&& f) {
    const WortNode* n = node(pool, w);
    for (unsigned c = first; c < WortNode::kFanout; ++c)
      if (n->child[c] != 0 && !f(static_cast<uint8_t>(c), n->child[c])) return false;
    return true;
  }
  static constexpr unsigned kMaxChildren = WortNode::kFanout;
  // The children from unit `first`, in key order: all of them, whatever `limit` (callers
  // take the first `limit`). Without a branch per slot (which slots are empty is as good as
  // random): the nonempty slots as a mask, 2 slots per compare, then one step per child.
  static size_t Children(const Pool& pool, uint64_t w, unsigned first, uint64_t* out,
                         size_t /*limit*/) {
    const WortNode* n = node(pool, w);
    size_t k = 0;
    uint32_t set = NonZeroWords16x2(n->child) & 0x55555555u &
                   static_cast<uint32_t>(~uint64_t{0} << (2 * first));  // first <= 16
    for (; set != 0; set &= set - 1) out[k++] = n->child[__builtin_ctz(set) / 2];
    return k;
  }
  // The scan reads every child word: the node's three lines.
  static void PrefetchChildren(const char* mem, uint64_t w) {
    pm::PrefetchLines(mem + ChildOffset(w), 0, sizeof(WortNode));
  }
  static void BuildAdd(const Pool& pool, uint64_t w, uint8_t unit, uint64_t word) {
    node(pool, w)->child[unit] = word;
  }
  // Never called: every unit has its slot, so a new key lands in an empty slot.
  static Status AddChild(Pool&, uint64_t*, const PrefixHeader&, uint8_t, uint64_t, PmLeaf*) {
    return Status::NotSupported("wort: nodes do not grow");
  }
  // Clears the unit's slot. 1 fence.
  static void RemoveChild(Pool& pool, uint64_t* slot, const PrefixHeader&, uint8_t unit,
                          std::vector<uint64_t>&) {
    CommitWord(pool.persist_context(), &node(pool, *slot)->child[unit], 0);
  }
  static const char* CheckNode(const Pool&, uint64_t) { return nullptr; }
};

using Wort = PersistentRadixTree<WortOps>;

}  // namespace pmindex::radix

#endif  // PMINDEX_RADIX_WORT_WORT_H_
