// P-ART whole-tree walks: the ordered scan (through RadixScan), verify, stats and the block
// visitor.
#include <string>

#include "pm/alloc.h"
#include "pm/prefetch.h"
#include "radix/common/radix_scan.h"
#include "radix/common/scan_stack.h"
#include "radix/part/part.h"

namespace pmindex::radix::part {

// P-ART's nodes to RadixScan (radix_scan.h), read as a lock-free reader reads them (atomic
// loads; a header not at the depth reached read as it must be there, in DRAM).
struct PArt::ScanAccess {
  using Word = uint64_t;
  using Node = uint64_t;  // the header word as it must be at the depth reached
  static constexpr size_t kMaxChildren = 256;
  static constexpr unsigned kStoredPrefix = radix::kStoredPrefix;
  static constexpr bool kSizeInNode = false;

  const PArt* tree;
  const char* mem;

  static size_t Units(size_t bytes) { return bytes; }
  static uint8_t Unit(const uint8_t* key, size_t i) { return key[i]; }
  uint64_t Root() const { return LoadWord(tree->root_); }
  static bool IsLeaf(uint64_t w) { return IsLeafChild(w); }
  std::string_view LeafKey(uint64_t w) const { return tree->leaf(w)->key(); }
  uint64_t Enter(uint64_t w, size_t depth) const {
    const auto* nb = reinterpret_cast<const NodeBase*>(mem + ChildOffset(w));
    const uint64_t hw = LoadWord(&nb->header);
    if (PrefixHeader::DepthOf(hw) == depth) [[likely]]
      return hw;
    return tree->HeaderAt(w, static_cast<uint32_t>(depth)).Encode();
  }
  static size_t PrefixLen(uint64_t hw) {
    return PrefixHeader::PosOf(hw) - PrefixHeader::DepthOf(hw);
  }
  static uint8_t StoredPrefixUnit(uint64_t hw, size_t j) {
    return static_cast<uint8_t>(hw >> (24 + 8 * j));
  }
  const uint8_t* AnyLeafKey(uint64_t w) const { return tree->AnyLeaf(w)->key_ptr(); }
  uint64_t End(uint64_t w) const {
    return LoadWord(&reinterpret_cast<const NodeBase*>(mem + ChildOffset(w))->end);
  }
  size_t Children(uint64_t w, unsigned from, uint64_t* kids, size_t limit) const {
    size_t k = 0;
    Dispatch(mem, w, [&](auto* n) {
      n->ForEach(from, [&](uint8_t, uint64_t c) {
        kids[k++] = c;
        return k < limit;
      });
    });
    return k;
  }
  uint64_t FindChild(uint64_t w, uint8_t unit) const {
    return Dispatch(mem, w, [&](auto* n) { return n->Load(unit); });
  }
  void Prefetch(uint64_t w) const {
    if (IsLeafChild(w))
      pm::PrefetchLine(mem + ChildOffset(w));
    else
      Dispatch(mem, w, [](auto* n) { n->PrefetchChildren(); });
  }
};

size_t PArt::scan(std::string_view start, size_t max_count, ScanCallback fn) {
  if (max_count == 0) return 0;
  auto guard = pool_->allocator().epoch_guard();  // no lock: blocks reached stay allocated
  const char* const m = mem();
  std::string value;  // a small value is read with one atomic load (in-place updates)
  return ScanInChunks<ScanStack<uint64_t>>(
      start, max_count, fn,
      [&](std::string_view from, ScanStack<uint64_t>& st) {
        RadixScan<ScanAccess>(ScanAccess{this, m}, st).Run(from);
      },
      [&](uint64_t w) {
        const auto* l = reinterpret_cast<const PmLeaf*>(m + ChildOffset(w));
        l->LoadValue(&value);
        return std::pair<std::string_view, std::string_view>(l->key(), value);
      });
}

// `path` holds the units every key below w must start with.
Status PArt::VerifyWord(uint64_t w, uint32_t depth, std::vector<uint8_t>& path) const {
  const std::string where = " at offset " + std::to_string(ChildOffset(w));
  if (!ValidWord(w)) return Corruption("bad child word or leaf " + std::to_string(w));
  if (IsLeafChild(w)) {
    const PmLeaf* l = leaf(w);
    if (l->key_len < path.size()) return Corruption("leaf key shorter than its path" + where);
    for (size_t i = 0; i < path.size(); ++i)
      if (l->key_ptr()[i] != path[i]) return Corruption("leaf key off its path" + where);
    return Status::OK();
  }
  if (const char* e = Dispatch(mem(), w, [](auto* n) { return n->Check(); }))
    return Corruption(e + where);
  const NodeBase* nb = base(w);
  if (nb->end != 0 && !ValidWord(nb->end)) return Corruption("bad end word" + where);
  if (Live(w) + (nb->end != 0) < 2) return Corruption("node with fewer than two entries" + where);
  const PmLeaf* any = AnyLeaf(w);
  if (any == nullptr) return Corruption("node without a leaf" + where);
  // A header not at this depth (a split or collapse interrupted after its commit) is legal.
  const PrefixHeader h = HeaderAt(w, depth);
  if (h.depth != depth || h.pos() > kMaxKeySize)
    return Corruption("header position out of range" + where);
  if (any->key_len < h.pos()) return Corruption("leaf shorter than node prefix" + where);
  const size_t saved = path.size();
  for (uint32_t i = 0; i < h.prefix_len; ++i) {
    const uint8_t u = any->key_ptr()[depth + i];
    if (i < kStoredPrefix && u != h.prefix[i])
      return Corruption("stored prefix disagrees with keys" + where);
    path.push_back(u);
  }
  if (nb->end != 0) {
    if (!IsLeafChild(nb->end) || leaf(nb->end)->key_len != h.pos())
      return Corruption("bad end word" + where);
    if (Status s = VerifyWord(nb->end, h.pos(), path); !s.ok()) return s;
  }
  if (Status s = VerifyChildren(w, h, path); !s.ok()) return s;
  path.resize(saved);
  return Status::OK();
}

Status PArt::VerifyChildren(uint64_t w, const PrefixHeader& h, std::vector<uint8_t>& path) const {
  const std::string where = " at offset " + std::to_string(ChildOffset(w));
  Status result;
  int prev = -1;
  Dispatch(mem(), w, [&](auto* n) {
    n->ForEach(0, [&](uint8_t unit, uint64_t c) {
      if (static_cast<int>(unit) <= prev) {
        result = Corruption("duplicate or unordered key unit" + where);
      } else if (!ValidWord(c)) {
        result = Corruption("bad child word in node" + where);
      } else if (IsLeafChild(c) && leaf(c)->key_len <= h.pos()) {
        result = Corruption("child leaf too short" + where);
      } else {
        prev = unit;
        path.push_back(unit);
        result = VerifyWord(c, h.pos() + 1, path);
        path.pop_back();
      }
      return result.ok();
    });
  });
  return result;
}

Status PArt::verify() {
  const uint64_t root = LoadWord(root_);
  if (root == 0) return Status::OK();
  std::vector<uint8_t> path;
  return VerifyWord(root, 0, path);
}

Status PArt::Walk(uint64_t w, FunctionRef<Status(uint64_t word)> fn) const {
  if (w == 0) return Status::OK();
  if (!ValidWord(w)) return Corruption("bad child word " + std::to_string(w));
  if (Status s = fn(w); !s.ok()) return s;
  if (IsLeafChild(w)) return Status::OK();
  if (Status s = Walk(LoadWord(&base(w)->end), fn); !s.ok()) return s;
  Status result;
  Dispatch(mem(), w, [&](auto* n) {
    n->ForEach(0, [&](uint8_t, uint64_t c) {
      result = Walk(c, fn);
      return result.ok();
    });
  });
  return result;
}

IndexStats PArt::stats() {
  IndexStats st;
  uint64_t count[kTagMask + 1] = {};
  Walk(LoadWord(root_), [&](uint64_t w) {
    st.pm_bytes += pool_->allocator().block_size(ChildOffset(w));
    ++count[ChildTagOf(w)];
    return Status::OK();
  }).IgnoreError();  // stats count what the walk reaches; a breach is verify()'s to report
  st.keys = count[kTagLeaf];
  st.nodes = {{"node4", count[kTagNode4]},   {"node16", count[kTagNode16]},
              {"node48", count[kTagNode48]}, {"node256", count[kTagNode256]},
              {"leaves", count[kTagLeaf]},   {"writer_restarts", restarts()}};
  return st;
}

Status PArt::visit_blocks(BlockVisitor& visitor) {
  return Walk(LoadWord(root_), [&](uint64_t w) { return visitor.visit(ChildOffset(w)); });
}

}  // namespace pmindex::radix::part
