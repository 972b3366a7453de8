// PersistentRadixTree whole-tree walks: ordered scan, verify, stats and the block visitor.
// Included only by the .cc file of a design, which instantiates the template for its Ops.
#ifndef PMINDEX_RADIX_COMMON_PERSISTENT_RADIX_TREE_WALK_H_
#define PMINDEX_RADIX_COMMON_PERSISTENT_RADIX_TREE_WALK_H_

#include <mutex>
#include <shared_mutex>
#include <string>

#include "pm/alloc.h"
#include "pm/prefetch.h"
#include "radix/common/persistent_radix_tree.h"

namespace pmindex::radix {

// A scan is one descent to `start` and an in-order walk from there (the recursion is the
// stack of (node, child) positions). Its cost is cache misses on blocks scattered over the
// pool, one per leaf and per node, so the walk does not wait for them one by one: entering a
// node it prefetches the children it will visit, and leaves past `start` are not read when
// reached but queued (up to kScanBatch) and emitted together, by which time their lines have
// arrived. Only the leaves that may lie below `start` (bounded) are read on the way.
inline constexpr size_t kScanBatch = 64;
inline constexpr unsigned kScanPrefetchChildren = 16;

template <typename Ops>
struct PersistentRadixTree<Ops>::ScanState {
  std::string_view start;
  size_t max_count = 0;
  size_t emitted = 0;
  ScanCallback* fn = nullptr;
  size_t queued = 0;
  uint64_t queue[kScanBatch];  // leaf words reached, not yet emitted
};

// Emits the queued leaves; false once the callback stopped or max_count is reached.
template <typename Ops>
bool PersistentRadixTree<Ops>::ScanFlush(ScanState& st) {
  const size_t n = st.queued;
  st.queued = 0;
  for (size_t i = 0; i < n; ++i) {
    const PmLeaf* l = leaf(st.queue[i]);
    ++st.emitted;
    if (!(*st.fn)(l->key(), l->value())) return false;
  }
  return st.emitted < st.max_count;
}

template <typename Ops>
void PersistentRadixTree<Ops>::ScanPrefetch(uint64_t w) const {
  const char* p = pool_->at<char>(ChildOffset(w));
  pm::PrefetchLine(p);
  if (!IsLeafChild(w)) {  // header, end and the first children
    pm::PrefetchLine(p + 64);
    pm::PrefetchLine(p + 128);
  }
}

// In-order walk from `start`. `bounded`: the subtree may hold keys < start, so compare.
template <typename Ops>
bool PersistentRadixTree<Ops>::ScanWord(uint64_t w, uint32_t depth, bool bounded,
                                        ScanState& st) {
  if (w == 0) return true;
  if (IsLeafChild(w)) {
    if (bounded && leaf(w)->key() < st.start) return true;
    st.queue[st.queued++] = w;
    if (st.queued == kScanBatch || st.emitted + st.queued >= st.max_count) return ScanFlush(st);
    return true;
  }
  uint64_t hw = LoadWord(&base(w)->header);  // only the position is needed, as in lookup
  if (PrefixHeader::DepthOf(hw) != depth) [[unlikely]]
    hw = RepairHeader(w, depth, hw).Encode();
  const uint32_t pos = PrefixHeader::PosOf(hw);
  const uint8_t* s = Bytes(st.start);
  const size_t su = Span::units(st.start.size());
  if (bounded && pos > depth) {
    const uint8_t* ref = AnyLeaf(w)->key_ptr();
    for (uint32_t i = depth; i < pos; ++i) {
      if (i == su) {  // start ends inside the prefix: every key here is longer, so greater
        bounded = false;
        break;
      }
      const uint8_t a = Span::unit(ref, i), b = Span::unit(s, i);
      if (a != b) {
        if (a < b) return true;  // the whole subtree is below start
        bounded = false;
        break;
      }
    }
  }
  const bool bounded_below = bounded && su > pos;
  const unsigned first = bounded_below ? Span::unit(s, pos) : 0;
  const uint64_t end = base(w)->end;
  if (end != 0) ScanPrefetch(end);
  unsigned ahead = 0;
  Ops::ForEachChild(*pool_, w, first, [&](uint8_t, uint64_t c) {
    ScanPrefetch(c);
    return ++ahead < kScanPrefetchChildren;
  });
  if (!ScanWord(end, pos, bounded_below, st)) return false;
  return Ops::ForEachChild(*pool_, w, first, [&](uint8_t unit, uint64_t c) {
    return ScanWord(c, pos + 1, bounded_below && unit == first, st);
  });
}

template <typename Ops>
size_t PersistentRadixTree<Ops>::scan(std::string_view start, size_t max_count,
                                      ScanCallback fn) {
  if (max_count == 0) return 0;
  std::shared_lock lock(mu_);
  ScanState st;  // the queue is left uninitialized
  st.start = start;
  st.max_count = max_count;
  st.fn = &fn;
  if (ScanWord(*RootSlot(*pool_), 0, true, st) && st.queued != 0) ScanFlush(st);
  return st.emitted;
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
