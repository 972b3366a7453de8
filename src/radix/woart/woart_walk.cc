// WOART whole-tree walks: ordered scan, verify, stats and the block visitor.
#include <mutex>
#include <string>

#include "pm/alloc.h"
#include "radix/common/key.h"
#include "radix/common/pm_tree_util.h"
#include "radix/woart/woart.h"
#include "radix/woart/woart_dispatch.h"

namespace pmindex::radix {

struct Woart::ScanState {
  std::string_view start;
  size_t max_count;
  size_t emitted = 0;
  ScanCallback* fn;
};

struct Woart::WalkTotals {
  uint64_t nodes = 0;
  uint64_t leaves = 0;
};

bool Woart::ScanWord(uint64_t w, uint32_t depth, bool bounded, ScanState& st) {
  if (w == 0) return true;
  if (IsLeafChild(w)) {
    const PmLeaf* l = leaf(w);
    if (bounded && l->key() < st.start) return true;
    ++st.emitted;
    return (*st.fn)(l->key(), l->value()) && st.emitted < st.max_count;
  }
  const PrefixHeader h = Header(w, depth);
  const uint32_t pos = h.pos();
  const uint8_t* s = Bytes(st.start);
  const size_t su = st.start.size();
  if (bounded && h.prefix_len != 0) {
    const uint8_t* ref = AnyLeaf(w)->key_ptr();
    for (uint32_t i = depth; i < pos; ++i) {
      if (i == su) {
        bounded = false;
        break;
      }
      if (ref[i] != s[i]) {
        if (ref[i] < s[i]) return true;
        bounded = false;
        break;
      }
    }
  }
  if (!ScanWord(base(w)->end, pos, bounded && su > pos, st)) return false;
  int first = -1;
  if (bounded && su > pos) first = s[pos];
  bool go = true;
  DispatchNode(*pool_, w, [&](auto* n) {
    n->ForEach([&](uint8_t b, uint64_t c) {
      if (!go || static_cast<int>(b) < first) return;
      go = ScanWord(c, pos + 1, static_cast<int>(b) == first, st);
    });
  });
  return go;
}

size_t Woart::scan(std::string_view start, size_t max_count, ScanCallback fn) {
  if (max_count == 0) return 0;
  std::shared_lock lock(mu_);
  ScanState st{start, max_count, 0, &fn};
  ScanWord(*RootSlot(*pool_), 0, true, st);
  return st.emitted;
}

Status Woart::VerifyWord(uint64_t w, uint32_t depth, std::vector<uint8_t>& path,
                         WalkTotals& t) {
  const uint64_t off = ChildOffset(w);
  const uint64_t tag = ChildTagOf(w);
  const std::string where = " at offset " + std::to_string(off);
  if (!ValidChildWord(*pool_, w, kTagNode256, NodeSizeForTag(tag)))
    return Status::Corruption("woart: bad child word or leaf " + std::to_string(w));
  if (tag == kTagLeaf) {
    const PmLeaf* l = leaf(w);
    if (l->key_len < path.size() ||
        (path.size() && std::memcmp(l->key_ptr(), path.data(), path.size()) != 0))
      return Status::Corruption("woart: leaf key off its path" + where);
    ++t.leaves;
    return Status::OK();
  }
  ++t.nodes;
  const WoartNodeBase* nb = base(w);
  if (tag == kTagNode4 &&
      WoartNode4::RawCount(LoadWord(&reinterpret_cast<const WoartNode4*>(nb)->slots)) > 4)
    return Status::Corruption("woart: Node4 count beyond 4" + where);
  bool bad_child = nb->end != 0 && !ValidChildWord(*pool_, nb->end, kTagNode256,
                                                   NodeSizeForTag(ChildTagOf(nb->end)));
  DispatchNode(*pool_, w, [&](auto* n) {
    n->ForEach([&](uint8_t, uint64_t c) {
      if (c != 0 && !ValidChildWord(*pool_, c, kTagNode256, NodeSizeForTag(ChildTagOf(c))))
        bad_child = true;
    });
  });
  if (bad_child) return Status::Corruption("woart: bad child word in node" + where);
  PrefixHeader h = PrefixHeader::Decode(LoadWord(&nb->header));
  const PmLeaf* any = AnyLeaf(w);
  if (any == nullptr) return Status::Corruption("woart: empty node" + where);
  if (h.pos() < depth || h.pos() > kMaxKeySize)
    return Status::Corruption("woart: header position out of range" + where);
  if (h.depth != depth) h = h.Repaired<8>(depth, any->key_ptr());  // interrupted split
  if (any->key_len < h.pos()) return Status::Corruption("woart: leaf shorter than prefix" + where);
  const size_t saved = path.size();
  for (uint32_t i = 0; i < h.prefix_len; ++i) {
    const uint8_t u = any->key_ptr()[depth + i];
    if (i < kStoredPrefix && u != h.prefix[i])
      return Status::Corruption("woart: stored prefix disagrees with keys" + where);
    path.push_back(u);
  }
  if (nb->end != 0) {
    if (!IsLeafChild(nb->end) || leaf(nb->end)->key_len != h.pos())
      return Status::Corruption("woart: bad end word" + where);
    if (Status s = VerifyWord(nb->end, h.pos(), path, t); !s.ok()) return s;
  }
  Status result;
  unsigned children = 0;
  int prev = -1;
  DispatchNode(*pool_, w, [&](auto* n) {
    n->ForEach([&](uint8_t b, uint64_t c) {
      ++children;
      if (!result.ok()) return;
      if (static_cast<int>(b) <= prev) {
        result = Status::Corruption("woart: duplicate or unordered key byte" + where);
        return;
      }
      prev = b;
      if (c == 0) {
        result = Status::Corruption("woart: valid slot with an empty child" + where);
        return;
      }
      if (IsLeafChild(c) && ChildTagOf(c) == kTagLeaf && ChildOffset(c) >= 4096 &&
          leaf(c)->key_len <= h.pos()) {
        result = Status::Corruption("woart: child leaf too short" + where);
        return;
      }
      path.push_back(b);
      result = VerifyWord(c, h.pos() + 1, path, t);
      path.pop_back();
    });
  });
  if (!result.ok()) return result;
  if (tag == kTagNode16 && (LoadWord(&reinterpret_cast<const WoartNode16*>(nb)->bitmap) >> 16))
    return Status::Corruption("woart: Node16 bitmap beyond 16 slots" + where);
  if (tag == kTagNode48) {
    const auto* n48 = reinterpret_cast<const WoartNode48*>(nb);
    for (unsigned b = 0; b < 256; ++b)
      if (n48->index[b] > WoartNode48::kCapacity)
        return Status::Corruption("woart: Node48 index out of range" + where);
    if (__builtin_popcountll(n48->used_slots()) != children)
      return Status::Corruption("woart: Node48 slot named twice" + where);
  }
  path.resize(saved);
  return Status::OK();
}

Status Woart::verify() {
  std::shared_lock lock(mu_);
  const uint64_t root = *RootSlot(*pool_);
  if (root == 0) return Status::OK();
  std::vector<uint8_t> path;
  WalkTotals t;
  return VerifyWord(root, 0, path, t);
}

Status Woart::Walk(uint64_t w, FunctionRef<Status(uint64_t word)> fn) {
  if (w == 0) return Status::OK();
  if (!ValidChildWord(*pool_, w, kTagNode256, NodeSizeForTag(ChildTagOf(w))))
    return Status::Corruption("woart: bad child word " + std::to_string(w));
  if (Status s = fn(w); !s.ok()) return s;
  if (IsLeafChild(w)) return Status::OK();
  if (Status s = Walk(base(w)->end, fn); !s.ok()) return s;
  Status result;
  DispatchNode(*pool_, w, [&](auto* n) {
    n->ForEach([&](uint8_t, uint64_t c) {
      if (result.ok()) result = Walk(c, fn);
    });
  });
  return result;
}

IndexStats Woart::stats() {
  std::shared_lock lock(mu_);
  IndexStats st;
  uint64_t count[6] = {};
  // Stats count what the walk reaches; a breach it meets is verify()'s to report.
  Walk(*RootSlot(*pool_), [&](uint64_t w) {
    st.pm_bytes += pool_->allocator().block_size(ChildOffset(w));
    ++count[ChildTagOf(w)];
    return Status::OK();
  }).IgnoreError();
  st.keys = count[kTagLeaf];
  st.nodes = {{"node4", count[kTagNode4]},   {"node16", count[kTagNode16]},
              {"node48", count[kTagNode48]}, {"node256", count[kTagNode256]},
              {"leaves", count[kTagLeaf]},   {"header_repairs", header_repairs()}};
  return st;
}

Status Woart::visit_blocks(BlockVisitor& visitor) {
  std::shared_lock lock(mu_);
  return Walk(*RootSlot(*pool_), [&](uint64_t w) { return visitor.visit(ChildOffset(w)); });
}

}  // namespace pmindex::radix
