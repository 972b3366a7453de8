// WORT whole-tree walks: ordered scan, verify, stats and the block visitor.
#include <algorithm>
#include <mutex>
#include <string>

#include "pm/alloc.h"
#include "radix/common/key.h"
#include "radix/common/node_search.h"
#include "radix/common/pm_tree_util.h"
#include "radix/wort/wort.h"

namespace pmindex::radix {

namespace {
using Span = KeySpan<4>;
}

struct Wort::ScanState {
  std::string_view start;
  size_t max_count;
  size_t emitted = 0;
  ScanCallback* fn;
};

struct Wort::WalkTotals {
  uint64_t nodes = 0;
  uint64_t leaves = 0;
  uint64_t stale_headers = 0;
};

// In-order walk from `start`. `bounded`: the subtree may hold keys < start, so compare.
bool Wort::ScanWord(uint64_t w, uint32_t depth, bool bounded, ScanState& st) {
  if (w == 0) return true;
  if (IsLeafChild(w)) {
    const PmLeaf* l = leaf(w);
    if (bounded && l->key() < st.start) return true;
    ++st.emitted;
    return (*st.fn)(l->key(), l->value()) && st.emitted < st.max_count;
  }
  WortNode* n = node(w);
  const PrefixHeader h = Header(n, depth);
  const uint32_t pos = h.pos();
  const uint8_t* s = Bytes(st.start);
  const size_t su = Span::units(st.start.size());
  if (bounded && h.prefix_len != 0) {
    const uint8_t* ref = AnyLeaf(n)->key_ptr();
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
  if (!ScanWord(n->end, pos, bounded && su > pos, st)) return false;
  unsigned first = 0;
  if (bounded) {
    if (su <= pos) {
      bounded = false;
    } else {
      first = Span::unit(s, pos);
    }
  }
  for (unsigned c = first; c < WortNode::kFanout; ++c) {
    if (n->child[c] != 0 && !ScanWord(n->child[c], pos + 1, bounded && c == first, st))
      return false;
  }
  return true;
}

size_t Wort::scan(std::string_view start, size_t max_count, ScanCallback fn) {
  if (max_count == 0) return 0;
  std::shared_lock lock(mu_);
  ScanState st{start, max_count, 0, &fn};
  ScanWord(*RootSlot(*pool_), 0, true, st);
  return st.emitted;
}

// `path` holds the units every key below w must start with.
Status Wort::VerifyWord(uint64_t w, uint32_t depth, std::vector<uint8_t>& path,
                        WalkTotals& t) {
  const uint64_t off = ChildOffset(w);
  const uint64_t tag = ChildTagOf(w);
  if (!ValidChildWord(*pool_, w, kTagNode4, sizeof(WortNode)))
    return Status::Corruption("wort: bad child word or leaf " + std::to_string(w));
  if (tag == kTagLeaf) {
    const PmLeaf* l = leaf(w);
    if (Span::units(l->key_len) < path.size())
      return Status::Corruption("wort: leaf key shorter than its path at " + std::to_string(off));
    for (size_t i = 0; i < path.size(); ++i)
      if (Span::unit(l->key_ptr(), i) != path[i])
        return Status::Corruption("wort: leaf key off its path at " + std::to_string(off));
    ++t.leaves;
    return Status::OK();
  }
  const WortNode* n = node(w);
  ++t.nodes;
  for (unsigned c = 0; c <= WortNode::kFanout; ++c) {
    const uint64_t cw = c == 0 ? n->end : n->child[c - 1];
    if (cw != 0 && !ValidChildWord(*pool_, cw, kTagNode4, sizeof(WortNode)))
      return Status::Corruption("wort: bad child word " + std::to_string(cw) + " in node at " +
                                std::to_string(off));
  }
  PrefixHeader h = PrefixHeader::Decode(LoadWord(&n->header));
  const PmLeaf* any = AnyLeaf(n);
  if (any == nullptr) return Status::Corruption("wort: empty node at " + std::to_string(off));
  if (h.pos() < depth || h.pos() > Span::units(kMaxKeySize))
    return Status::Corruption("wort: header position out of range at " + std::to_string(off));
  if (h.depth != depth) {  // interrupted split: legal, repaired on the next traversal
    ++t.stale_headers;
    h = h.Repaired<4>(depth, any->key_ptr());
  }
  if (Span::units(any->key_len) < h.pos())
    return Status::Corruption("wort: leaf shorter than node prefix at " + std::to_string(off));
  const size_t base = path.size();
  for (uint32_t i = 0; i < h.prefix_len; ++i) {
    const uint8_t u = Span::unit(any->key_ptr(), depth + i);
    if (i < kStoredPrefix && u != h.prefix[i])
      return Status::Corruption("wort: stored prefix disagrees with keys at " +
                                std::to_string(off));
    path.push_back(u);
  }
  if (n->end != 0) {
    if (!IsLeafChild(n->end) || Span::units(leaf(n->end)->key_len) != h.pos())
      return Status::Corruption("wort: bad end slot at " + std::to_string(off));
    if (Status s = VerifyWord(n->end, h.pos(), path, t); !s.ok()) return s;
  }
  for (unsigned c = 0; c < WortNode::kFanout; ++c) {
    if (n->child[c] == 0) continue;
    path.push_back(static_cast<uint8_t>(c));
    if (IsLeafChild(n->child[c]) && Span::units(leaf(n->child[c])->key_len) <= h.pos())
      return Status::Corruption("wort: child leaf too short at " + std::to_string(off));
    if (Status s = VerifyWord(n->child[c], h.pos() + 1, path, t); !s.ok()) return s;
    path.pop_back();
  }
  path.resize(base);
  return Status::OK();
}

Status Wort::verify() {
  std::shared_lock lock(mu_);
  const uint64_t root = *RootSlot(*pool_);
  if (root == 0) return Status::OK();
  std::vector<uint8_t> path;
  WalkTotals t;
  return VerifyWord(root, 0, path, t);
}

Status Wort::Walk(uint64_t w, FunctionRef<Status(uint64_t word)> fn) {
  if (w == 0) return Status::OK();
  if (!ValidChildWord(*pool_, w, kTagNode4, sizeof(WortNode)))
    return Status::Corruption("wort: bad child word " + std::to_string(w));
  if (Status s = fn(w); !s.ok()) return s;
  if (IsLeafChild(w)) return Status::OK();
  const WortNode* n = node(w);
  if (Status s = Walk(n->end, fn); !s.ok()) return s;
  for (unsigned c = 0; c < WortNode::kFanout; ++c)
    if (Status s = Walk(n->child[c], fn); !s.ok()) return s;
  return Status::OK();
}

IndexStats Wort::stats() {
  std::shared_lock lock(mu_);
  IndexStats st;
  uint64_t nodes = 0, leaves = 0;
  // Stats count what the walk reaches; a breach it meets is verify()'s to report.
  Walk(*RootSlot(*pool_), [&](uint64_t w) {
    st.pm_bytes += pool_->allocator().block_size(ChildOffset(w));
    (IsLeafChild(w) ? leaves : nodes)++;
    return Status::OK();
  }).IgnoreError();
  st.keys = leaves;
  st.nodes = {{"node16", nodes}, {"leaves", leaves}, {"header_repairs", header_repairs()}};
  return st;
}

Status Wort::visit_blocks(BlockVisitor& visitor) {
  std::shared_lock lock(mu_);
  return Walk(*RootSlot(*pool_), [&](uint64_t w) { return visitor.visit(ChildOffset(w)); });
}

}  // namespace pmindex::radix
