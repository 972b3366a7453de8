// Volatile ART: ordered scan (optimistic, art.h), verify and stats.
#include <algorithm>
#include <cstddef>
#include <vector>
#include <string>

#include "pm/version_lock.h"
#include "radix/art/art.h"
#include "radix/common/key.h"
#include "radix/common/scan_stack.h"

namespace pmindex::radix {

using art::IsLeaf;
using art::Leaf;
using art::Node;
using art::Ref;

// One chunk of a scan: up to `need` pairs with key >= from, copied out of the tree in key
// order. The walk holds no lock: a node's version is read when it is entered and checked
// again after each child's version is read (lock coupling, as a lookup) and after each leaf
// is copied, so every pair collected was in the tree, and no key between two collected ones
// was skipped, while the versions held. A failed check returns false; the caller resumes
// after the last key collected (the pairs collected so far stay).
class Art::ScanWalk {
 public:
  explicit ScanWalk(size_t need) : need_(need) {}

  // Walks from `from` (a copy is kept) until need() pairs are collected or the tree ends.
  bool Run(const Art& tree, std::string_view from) {
    from_.assign(from);
    Holder h{const_cast<uint64_t*>(&tree.root_lock_), 0};
    if (!ReadBegin(&h)) return false;
    const Ref r = pm::LoadAcquire(tree.root_);
    if (r == 0) return Validate(h);
    return Visit(h, r, 0, true);
  }
  size_t count() const { return items_.size(); }
  size_t need() const { return need_; }
  std::string_view key(size_t i) const { return {buf_.data() + items_[i].at, items_[i].key_len}; }
  std::string_view value(size_t i) const {
    return {buf_.data() + items_[i].at + items_[i].key_len, items_[i].value_len};
  }

 private:
  struct Item {
    size_t at;
    uint32_t key_len, value_len;
  };

  // Word r was read from a slot of holder h at `depth`; with `bounded`, its keys may lie
  // below from_.
  bool Visit(const Holder& h, Ref r, size_t depth, bool bounded) {
    if (IsLeaf(r)) return VisitLeaf(h, art::AsLeaf(r), bounded);
    const auto* n = reinterpret_cast<const Node*>(r);
    Holder nh{const_cast<uint64_t*>(&n->version), 0};
    if (!ReadBegin(&nh) || !Validate(h)) return false;
    const size_t pos = depth + pm::Load(n->prefix_len);
    int first = 0;       // the first child byte to walk
    int bounded_at = -1;  // the child byte whose keys may lie below from_
    if (bounded) {
      int order;
      if (!ComparePrefix(n, depth, pos, &order) || !Validate(nh)) return false;
      if (order < 0) return true;  // the whole subtree is below from_
      if (order == 0 && from_.size() > pos) {  // the end leaf's key is a prefix of from_: below
        first = bounded_at = static_cast<uint8_t>(from_[pos]);
      }
    }
    if (bounded_at < 0) {
      const Ref end = pm::LoadAcquire(n->end);
      if (end != 0 && !Visit(nh, end, pos, false)) return false;
    }
    while (need_ != 0 && first < 256) {
      Ref c = 0;
      int b = 0;
      art::ForEachChild(n, first, [&](uint8_t byte, Ref child) {
        b = byte;
        c = child;
        return false;
      });
      if (c == 0) return Validate(nh);
      if (!Visit(nh, c, pos + 1, b == bounded_at)) return false;
      first = b + 1;
    }
    return true;
  }

  bool VisitLeaf(const Holder& h, const Leaf* l, bool bounded) {
    const std::string_view key = l->key();
    if (bounded && key < std::string_view(from_)) return Validate(h);
    const size_t at = buf_.size();
    buf_.append(key);
    l->AppendValueTo(&buf_);
    if (!Validate(h)) {
      buf_.resize(at);
      return false;
    }
    items_.push_back({at, static_cast<uint32_t>(key.size()), l->value_len});
    --need_;
    return true;
  }

  // The order of n's prefix (bytes [depth, pos)) against from_'s bytes there; false if a
  // racy read found no leaf to read the bytes past the stored prefix from.
  bool ComparePrefix(const Node* n, size_t depth, size_t pos, int* order) const {
    const Leaf* any = nullptr;
    *order = 0;
    for (size_t i = depth; i < pos; ++i) {
      if (i == from_.size()) {
        *order = 1;  // from_ ends inside the prefix: every key here is longer
        return true;
      }
      uint8_t a;
      if (i - depth < art::kArtPrefix) {
        a = pm::Load(n->prefix[i - depth]);
      } else {
        if (any == nullptr) any = AnyLeaf(reinterpret_cast<Ref>(n));
        if (any == nullptr || any->key_len <= i) return false;
        a = any->key_ptr()[i];
      }
      const uint8_t b = static_cast<uint8_t>(from_[i]);
      if (a != b) {
        *order = a < b ? -1 : 1;
        return true;
      }
    }
    return true;
  }

  size_t need_;
  std::string from_;
  std::string buf_;  // the pairs' keys and values, back to back
  std::vector<Item> items_;
};

struct Art::Totals {
  uint64_t nodes[4] = {};
  uint64_t leaves = 0;
  uint64_t bytes = 0;
};

size_t Art::scan(std::string_view start, size_t max_count, ScanCallback fn) {
  size_t total = 0;
  std::string from(start);
  while (total < max_count) {
    ScanWalk walk(std::min(max_count - total, kScanChunk));
    const size_t want = walk.need();
    {
      // The pairs are copies: fn runs outside the guard.
      pm::Epoch::Guard guard(epoch_);
      while (!walk.Run(*this, from)) {
        restarts_.fetch_add(1, std::memory_order_relaxed);
        if (walk.count() != 0) {
          from.assign(walk.key(walk.count() - 1));
          from.push_back('\0');
        }
      }
    }
    for (size_t i = 0; i < walk.count(); ++i) {
      ++total;
      if (!fn(walk.key(i), walk.value(i))) return total;
    }
    if (walk.count() < want) break;
    from.assign(walk.key(walk.count() - 1));
    from.push_back('\0');
  }
  return total;
}

Status Art::VerifyRef(Ref r, size_t depth, std::vector<uint8_t>& path, Totals& t) const {
  if (IsLeaf(r)) {
    const Leaf* l = art::AsLeaf(r);
    if (l->key_len < path.size() ||
        (path.size() && std::memcmp(l->key_ptr(), path.data(), path.size()) != 0))
      return Status::Corruption("art: leaf key off its path");
    ++t.leaves;
    t.bytes += Leaf::Bytes(l);
    return Status::OK();
  }
  auto* n = reinterpret_cast<const Node*>(r);
  ++t.nodes[static_cast<int>(n->type)];
  t.bytes += art::NodeBytes(n->type);
  const Leaf* any = AnyLeaf(r);
  if (any == nullptr) return Status::Corruption("art: empty node");
  const size_t pos = depth + n->prefix_len;
  if (any->key_len < pos) return Status::Corruption("art: leaf shorter than prefix");
  const size_t saved = path.size();
  for (size_t i = 0; i < n->prefix_len; ++i) {
    if (i < art::kArtPrefix && n->prefix[i] != any->key_ptr()[depth + i])
      return Status::Corruption("art: stored prefix disagrees with keys");
    path.push_back(any->key_ptr()[depth + i]);
  }
  unsigned children = 0;
  int prev = -1;
  Status result;
  if (n->end != 0) {
    if (!IsLeaf(n->end) || art::AsLeaf(n->end)->key_len != pos)
      return Status::Corruption("art: bad end slot");
    if (Status s = VerifyRef(n->end, pos, path, t); !s.ok()) return s;
  }
  art::ForEachChild(n, -1, [&](uint8_t b, Ref c) {
    ++children;
    if (static_cast<int>(b) <= prev) {
      result = Status::Corruption("art: keys out of order");
      return false;
    }
    prev = b;
    if (IsLeaf(c) && art::AsLeaf(c)->key_len <= pos) {
      result = Status::Corruption("art: child leaf too short");
      return false;
    }
    path.push_back(b);
    result = VerifyRef(c, pos + 1, path, t);
    path.pop_back();
    return result.ok();
  });
  if (!result.ok()) return result;
  if (children != n->count) return Status::Corruption("art: count disagrees with children");
  if (children + (n->end != 0) < 2) return Status::Corruption("art: node with a single entry");
  path.resize(saved);
  return Status::OK();
}

Status Art::verify() {
  if (root_ == 0) return Status::OK();
  std::vector<uint8_t> path;
  Totals t;
  return VerifyRef(root_, 0, path, t);
}

IndexStats Art::stats() {
  IndexStats st;
  Totals t;
  std::vector<uint8_t> path;
  // Stats count what the walk reaches; a breach it meets is verify()'s to report.
  if (root_ != 0) VerifyRef(root_, 0, path, t).IgnoreError();
  st.dram_bytes = t.bytes;
  st.keys = t.leaves;
  st.nodes = {{"node4", t.nodes[0]},  {"node16", t.nodes[1]}, {"node48", t.nodes[2]},
              {"node256", t.nodes[3]}, {"leaves", t.leaves}};
  return st;
}

}  // namespace pmindex::radix
