// PersistentRadixTree whole-tree walks: ordered scan (through RadixScan), verify, stats and
// the block visitor.
// Included only by the .cc file of a design, which instantiates the template for its Ops.
#ifndef PMINDEX_RADIX_COMMON_PERSISTENT_RADIX_TREE_WALK_H_
#define PMINDEX_RADIX_COMMON_PERSISTENT_RADIX_TREE_WALK_H_

#include <algorithm>
#include <cstdlib>
#include <mutex>
#include <shared_mutex>
#include <string>

#include "pm/alloc.h"
#include "pm/prefetch.h"
#include "radix/common/persistent_radix_tree.h"
#include "radix/common/radix_scan.h"
#include "radix/common/scan_stack.h"

namespace pmindex::radix {

// PersistentRadixTree's nodes to RadixScan (radix_scan.h): words of the pool, a stale header
// repaired on the way as by every traversal, and all the lines the walk reads of a node
// requested with its word (its tag gives its size).
template <typename Ops>
struct PersistentRadixTree<Ops>::ScanAccess {
  using Word = uint64_t;
  using Node = uint64_t;  // the header word, as it must be at the depth reached
  static constexpr size_t kMaxChildren = Ops::kMaxChildren;
  static constexpr unsigned kStoredPrefix = radix::kStoredPrefix;
  static constexpr bool kSizeInNode = false;

  PersistentRadixTree* tree;
  const char* mem;  // the pool's base

  static size_t Units(size_t bytes) { return Span::units(bytes); }
  static uint8_t Unit(const uint8_t* key, size_t i) { return Span::unit(key, i); }
  uint64_t Root() const { return LoadWord(RootSlot(*tree->pool_)); }
  static bool IsLeaf(uint64_t w) { return IsLeafChild(w); }
  std::string_view LeafKey(uint64_t w) const { return tree->leaf(w)->key(); }
  uint64_t Enter(uint64_t w, size_t depth) const {
    const uint64_t hw = LoadWord(&tree->base(w)->header);
    if (PrefixHeader::DepthOf(hw) != depth) [[unlikely]]
      return tree->RepairHeader(w, static_cast<uint32_t>(depth), hw).Encode();
    return hw;
  }
  static size_t PrefixLen(uint64_t hw) {
    return PrefixHeader::PosOf(hw) - PrefixHeader::DepthOf(hw);
  }
  static uint8_t StoredPrefixUnit(uint64_t hw, size_t j) {
    return static_cast<uint8_t>(hw >> (24 + 8 * j));
  }
  const uint8_t* AnyLeafKey(uint64_t w) const { return tree->AnyLeaf(w)->key_ptr(); }
  uint64_t End(uint64_t w) const { return tree->base(w)->end; }
  // WORT's returns all the children from `from`, whatever `limit`.
  size_t Children(uint64_t w, unsigned from, uint64_t* kids, size_t limit) const {
    return Ops::Children(*tree->pool_, w, from, kids, limit);
  }
  uint64_t FindChild(uint64_t w, uint8_t unit) const {
    const uint64_t* slot = Ops::FindChild(*tree->pool_, w, unit);
    return slot != nullptr ? *slot : 0;
  }
  // A leaf's first line, or the lines of a node the walk reads to visit all its children.
  void Prefetch(uint64_t w) const {
    if (IsLeafChild(w))
      pm::PrefetchLine(mem + ChildOffset(w));
    else
      Ops::PrefetchChildren(mem, w);
  }
};

template <typename Ops>
size_t PersistentRadixTree<Ops>::scan(std::string_view start, size_t max_count,
                                      ScanCallback fn) {
  if (max_count == 0) return 0;
  std::shared_lock lock(mu_);
  const char* const mem = pool_->base();  // held here: the callback may alias anything
  return ScanInChunks<ScanStack<uint64_t>>(
      start, max_count, fn,
      [&](std::string_view from, ScanStack<uint64_t>& st) {
        RadixScan<ScanAccess>(ScanAccess{this, mem}, st).Run(from);
      },
      [mem](uint64_t w) {
        const auto* l = reinterpret_cast<const PmLeaf*>(LeafAt(mem, w));
        return std::pair<std::string_view, std::string_view>(l->key(), l->value());
      });
}

// `path` holds the units every key below w must start with.
template <typename Ops>
Status PersistentRadixTree<Ops>::VerifyWord(uint64_t w, uint32_t depth,
                                            std::vector<uint8_t>& path) {
  const std::string where = " at offset " + std::to_string(ChildOffset(w));
  if (!ValidWord(w)) return Corruption("bad child word or leaf " + std::to_string(w));
  if (IsLeafChild(w)) {
    const PmLeaf* l = leaf(w);
    if (Span::units(l->key_len) < path.size())
      return Corruption("leaf key shorter than its path" + where);
    for (size_t i = 0; i < path.size(); ++i)
      if (Span::unit(l->key_ptr(), i) != path[i])
        return Corruption("leaf key off its path" + where);
    return Status::OK();
  }
  if (const char* e = Ops::CheckNode(*pool_, w)) return Corruption(e + where);
  const RadixNodeBase* nb = base(w);
  bool bad_child = nb->end != 0 && !ValidWord(nb->end);
  Ops::ForEachChild(*pool_, w, 0, [&](uint8_t, uint64_t c) {
    if (c != 0 && !ValidWord(c)) bad_child = true;
    return true;
  });
  if (bad_child) return Corruption("bad child word in node" + where);
  PrefixHeader h = PrefixHeader::Decode(LoadWord(&nb->header));
  const PmLeaf* any = AnyLeaf(w);
  if (any == nullptr) return Corruption("empty node" + where);
  if (h.pos() < depth || h.pos() > Span::units(kMaxKeySize))
    return Corruption("header position out of range" + where);
  // An interrupted split leaves a stale header: legal, repaired on the next traversal.
  if (h.depth != depth) h = h.template Repaired<Ops::kBits>(depth, any->key_ptr());
  if (Span::units(any->key_len) < h.pos())
    return Corruption("leaf shorter than node prefix" + where);
  const size_t saved = path.size();
  for (uint32_t i = 0; i < h.prefix_len; ++i) {
    const uint8_t u = Span::unit(any->key_ptr(), depth + i);
    if (i < kStoredPrefix && u != h.prefix[i])
      return Corruption("stored prefix disagrees with keys" + where);
    path.push_back(u);
  }
  if (nb->end != 0) {
    if (!IsLeafChild(nb->end) || Span::units(leaf(nb->end)->key_len) != h.pos())
      return Corruption("bad end word" + where);
    if (Status s = VerifyWord(nb->end, h.pos(), path); !s.ok()) return s;
  }
  Status result;
  int prev = -1;
  Ops::ForEachChild(*pool_, w, 0, [&](uint8_t unit, uint64_t c) {
    if (static_cast<int>(unit) <= prev) {
      result = Corruption("duplicate or unordered key unit" + where);
    } else if (c == 0) {
      result = Corruption("valid slot with an empty child" + where);
    } else if (IsLeafChild(c) && Span::units(leaf(c)->key_len) <= h.pos()) {
      result = Corruption("child leaf too short" + where);
    } else {
      prev = unit;
      path.push_back(unit);
      result = VerifyWord(c, h.pos() + 1, path);
      path.pop_back();
    }
    return result.ok();
  });
  if (!result.ok()) return result;
  path.resize(saved);
  return Status::OK();
}

template <typename Ops>
Status PersistentRadixTree<Ops>::verify() {
  std::shared_lock lock(mu_);
  const uint64_t root = *RootSlot(*pool_);
  if (root == 0) return Status::OK();
  std::vector<uint8_t> path;
  return VerifyWord(root, 0, path);
}

template <typename Ops>
Status PersistentRadixTree<Ops>::Walk(uint64_t w, FunctionRef<Status(uint64_t word)> fn) {
  if (w == 0) return Status::OK();
  if (!ValidWord(w)) return Corruption("bad child word " + std::to_string(w));
  if (Status s = fn(w); !s.ok()) return s;
  if (IsLeafChild(w)) return Status::OK();
  if (Status s = Walk(base(w)->end, fn); !s.ok()) return s;
  Status result;
  Ops::ForEachChild(*pool_, w, 0, [&](uint8_t, uint64_t c) {
    result = Walk(c, fn);
    return result.ok();
  });
  return result;
}

template <typename Ops>
IndexStats PersistentRadixTree<Ops>::stats() {
  std::shared_lock lock(mu_);
  IndexStats st;
  uint64_t count[kTagMask + 1] = {};
  Walk(*RootSlot(*pool_), [&](uint64_t w) {
    st.pm_bytes += pool_->allocator().block_size(ChildOffset(w));
    ++count[ChildTagOf(w)];
    return Status::OK();
  }).IgnoreError();  // stats count what the walk reaches; a breach is verify()'s to report
  st.keys = count[kTagLeaf];
  for (const auto& [name, tag] : Ops::kNodeNames) st.nodes.push_back({name, count[tag]});
  st.nodes.push_back({"leaves", count[kTagLeaf]});
  st.nodes.push_back({"header_repairs", header_repairs()});
  return st;
}

template <typename Ops>
Status PersistentRadixTree<Ops>::visit_blocks(BlockVisitor& visitor) {
  std::shared_lock lock(mu_);
  return Walk(*RootSlot(*pool_), [&](uint64_t w) { return visitor.visit(ChildOffset(w)); });
}

}  // namespace pmindex::radix

#endif  // PMINDEX_RADIX_COMMON_PERSISTENT_RADIX_TREE_WALK_H_
