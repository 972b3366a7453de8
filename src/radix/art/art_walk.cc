// Volatile ART: ordered scan, verify and stats.
#include <algorithm>
#include <cstddef>
#include <mutex>
#include <string>

#include "pm/prefetch.h"
#include "radix/art/art.h"
#include "radix/common/key.h"
#include "radix/common/radix_scan.h"
#include "radix/common/scan_stack.h"

namespace pmindex::radix {

using art::IsLeaf;
using art::Leaf;
using art::Node;
using art::Ref;

// The volatile ART's nodes to RadixScan (radix_scan.h). A node's type is in the node, not in
// its reference, so a node is prefetched as three lines whatever its type (Node4 and Node16
// fit; a Node48 or Node256 reads more, in order), the rest once its first line is read.
struct Art::ScanAccess {
  using Word = Ref;
  using Node = const art::Node*;
  static constexpr size_t kMaxChildren = 256;
  static constexpr unsigned kStoredPrefix = art::kArtPrefix;
  static constexpr bool kSizeInNode = true;

  Ref root;

  static size_t Units(size_t bytes) { return bytes; }
  static uint8_t Unit(const uint8_t* key, size_t i) { return key[i]; }
  static Node AsNode(Ref r) { return reinterpret_cast<Node>(r); }
  Ref Root() const { return root; }
  static bool IsLeaf(Ref r) { return art::IsLeaf(r); }
  static std::string_view LeafKey(Ref r) { return art::AsLeaf(r)->key(); }
  static Node Enter(Ref r, size_t /*depth*/) {
    PrefetchRest(r);
    return AsNode(r);
  }
  static size_t PrefixLen(Node n) { return n->prefix_len; }
  static uint8_t StoredPrefixUnit(Node n, size_t j) { return n->prefix[j]; }
  static const uint8_t* AnyLeafKey(Ref r) { return Art::AnyLeaf(r)->key_ptr(); }
  static Ref End(Ref r) { return AsNode(r)->end; }
  // The first `limit` (>= 1) children from byte `from` in key order into kids; their count.
  // A scan never reaches more than it has leaves left to output (every child holds a key),
  // so the rest of a wide node is not read.
  static size_t Children(Ref r, unsigned from, Ref* kids, size_t limit) {
    size_t k = 0;
    art::ForEachChild(AsNode(r), static_cast<int>(from), [&](uint8_t, Ref c) {
      kids[k++] = c;
      return k < limit;
    });
    return k;
  }
  static Ref FindChild(Ref r, uint8_t b) {
    const Ref* slot = art::FindChild(reinterpret_cast<art::Node*>(r), b);
    return slot != nullptr ? *slot : 0;
  }
  // A leaf's first line and the line of its 19th byte: a leaf of an 8-byte key and an 8-byte
  // value (19 bytes) in a malloc block (16-byte aligned) crosses a line boundary one time in
  // four, and its value is then read from a second line. A node's first three lines.
  static void Prefetch(Ref r) {
    const char* p = reinterpret_cast<const char*>(r & ~Ref{1});
    pm::PrefetchLine(p);
    if (IsLeaf(r)) {
      pm::PrefetchLine(p + offsetof(Leaf, data) + 15);
    } else {
      pm::PrefetchLine(p + 64);
      pm::PrefetchLine(p + 128);
    }
  }
  // The rest of the lines a walk over the children reads, requested together, so the index
  // and the child slots are waited for once.
  static void PrefetchRest(Ref r) {
    const Node n = AsNode(r);
    if (n->type == art::NodeType::k48)
      pm::PrefetchLines(n, 192, sizeof(art::Node48));
    else if (n->type == art::NodeType::k256)
      pm::PrefetchLines(n, 192, 512);
  }
  static bool ChildrenInFirstLines(Ref r) {
    const Node n = AsNode(r);
    return n->type == art::NodeType::k4 || n->type == art::NodeType::k16;
  }
  static void PrefetchWhole(Ref r) {
    pm::PrefetchLines(AsNode(r), 192, art::NodeBytes(AsNode(r)->type));
  }
};

struct Art::Totals {
  uint64_t nodes[4] = {};
  uint64_t leaves = 0;
  uint64_t bytes = 0;
};

size_t Art::scan(std::string_view start, size_t max_count, ScanCallback fn) {
  if (max_count == 0) return 0;
  std::shared_lock lock(mu_);
  return ScanInChunks<ScanStack<Ref>>(
      start, max_count, fn,
      [&](std::string_view from, ScanStack<Ref>& st) {
        RadixScan<ScanAccess>(ScanAccess{root_}, st).Run(from);
      },
      [&](Ref w) {
        const auto* l = art::AsLeaf(w);
        return std::pair<std::string_view, std::string_view>(l->key(), l->value());
      });
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
  std::shared_lock lock(mu_);
  if (root_ == 0) return Status::OK();
  std::vector<uint8_t> path;
  Totals t;
  return VerifyRef(root_, 0, path, t);
}

IndexStats Art::stats() {
  std::shared_lock lock(mu_);
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
