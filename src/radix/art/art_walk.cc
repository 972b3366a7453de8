// Volatile ART: ordered scan, verify and stats.
#include <algorithm>
#include <cstddef>
#include <mutex>
#include <string>

#include "pm/prefetch.h"
#include "radix/art/art.h"
#include "radix/common/key.h"
#include "radix/common/scan_stack.h"

namespace pmindex::radix {

using art::IsLeaf;
using art::Leaf;
using art::Node;
using art::Ref;

// A scan is one descent and an in-order walk over a ScanStack of pending child references,
// as PersistentRadixTree's (persistent_radix_tree_walk.h gives the reasons): the children
// right of the path are pushed on the way down, a node's children are prefetched when it is
// expanded, a node with node children pre-expands the next pending node, and leaves are read
// only after the walk. A node's type is in the node, not in its reference, so a node is
// prefetched as three lines whatever its type (Node4 and Node16 fit; a Node48 or Node256
// reads more, in order).
struct Art::ScanState : ScanStack<Ref> {};

namespace {

// A leaf's first line and the line of its 19th byte: a leaf of an 8-byte key and an 8-byte
// value (19 bytes) in a malloc block (16-byte aligned) crosses a line boundary one time in
// four, and its value is then read from a second line. A node's first three lines.
void ScanPrefetch(Ref r) {
  const char* p = reinterpret_cast<const char*>(r & ~Ref{1});
  pm::PrefetchLine(p);
  if (IsLeaf(r)) {
    pm::PrefetchLine(p + offsetof(Leaf, data) + 15);
  } else {
    pm::PrefetchLine(p + 64);
    pm::PrefetchLine(p + 128);
  }
}

// Once a node's first line (its type) is read: the rest of the lines a walk over its children
// reads, requested together, so the index and the child slots are waited for once.
void PrefetchRest(const Node* n) {
  if (n->type == art::NodeType::k48)
    pm::PrefetchLines(n, 192, sizeof(art::Node48));
  else if (n->type == art::NodeType::k256)
    pm::PrefetchLines(n, 192, 512);
}

// The first `limit` (>= 1) children from byte `from` in key order into kids; their count.
// A scan never reaches more than it has leaves left to output (every child holds a key), so
// the rest of a wide node is not read.
size_t Children(const Node* n, int from, Ref* kids, size_t limit) {
  size_t k = 0;
  art::ForEachChild(n, from, [&](uint8_t, Ref c) {
    kids[k++] = c;
    return k < limit;
  });
  return k;
}

// The end reference (if any) and the children in key order, the first `limit` (>= 1) of
// them, into kids; their count.
size_t AllChildren(const Node* n, Ref* kids, size_t limit) {
  if (n->end == 0) return Children(n, -1, kids, limit);
  kids[0] = n->end;
  return limit == 1 ? 1 : 1 + Children(n, -1, kids + 1, limit - 1);
}

}  // namespace

struct Art::Totals {
  uint64_t nodes[4] = {};
  uint64_t leaves = 0;
  uint64_t bytes = 0;
};

void Art::ScanChunk(std::string_view start, ScanState& st) const {
  Ref kids[257];
  // Requests a path level's nearest right children, during the descent (as
  // PersistentRadixTree's walk).
  auto prefetch_level = [&](const Node* node, unsigned from) {
    const size_t k = Children(node, static_cast<int>(from), kids, kScanPathPrefetch);
    for (size_t i = 0; i < k; ++i) ScanPrefetch(kids[i]);
  };
  // Pushes a path level's right children (on top, or under what is kept).
  auto push_level = [&](Ref node, unsigned from, size_t d, bool under) {
    const size_t got = Children(reinterpret_cast<const Node*>(node), static_cast<int>(from),
                                kids, st.need - (under ? st.size : 0));
    if (under)
      st.PushUnder(kids, got, d);
    else
      st.Push(kids, got, d);
  };
  ScanPath<Ref> path;
  // Descent: the references right of the path to `start`, nearest on top.
  const uint8_t* s = Bytes(start);
  const size_t su = start.size();
  Ref r = root_;
  size_t depth = 0;
  while (r != 0) {
    if (IsLeaf(r)) {
      if (art::AsLeaf(r)->key() >= start) st.Push(&r, 1, depth);
      break;
    }
    auto* n = reinterpret_cast<const Node*>(r);
    PrefetchRest(n);
    const size_t pos = depth + n->prefix_len;
    int order = 0;  // of the node's prefix against start's bytes there
    if (n->prefix_len != 0) {
      const uint8_t* ref = n->prefix_len > art::kArtPrefix ? AnyLeaf(r)->key_ptr() : nullptr;
      for (size_t i = depth; i < pos && order == 0; ++i) {
        if (i == su) {  // start ends inside the prefix: every key here is longer, so greater
          order = 1;
          break;
        }
        const uint8_t a = i - depth < art::kArtPrefix ? n->prefix[i - depth] : ref[i];
        if (a != s[i]) order = a < s[i] ? -1 : 1;
      }
    }
    if (order < 0) break;           // the whole subtree is below start
    if (order > 0 || su == pos) {  // the whole subtree is at or above start
      st.Push(&r, 1, depth);
      break;
    }
    const uint8_t u = s[pos];  // the end leaf's key is a prefix of start: below
    // The next block of the path is requested before this node's right children are
    // collected.
    const Ref* next = art::FindChild(const_cast<Node*>(n), u);
    const Ref down = next != nullptr ? *next : 0;
    if (down != 0) ScanPrefetch(down);
    path.Step(r, u + 1u, pos + 1, push_level);
    prefetch_level(n, u + 1u);
    r = down;
    depth = pos + 1;
  }
  // The path's right children, deepest level first, under the reference the descent ended
  // on.
  path.PushRecorded(st, push_level);
  for (size_t i = 0; i < std::min(st.size, kScanStartPrefetch); ++i) ScanPrefetch(st.Peek(i));
  // The walk.
  while (st.size != 0 && st.need != 0) {
    st.Pop(&r, &depth);
    if (IsLeaf(r)) {
      st.Output(r);
      continue;
    }
    auto* n = reinterpret_cast<const Node*>(r);
    PrefetchRest(n);
    const size_t k = AllChildren(n, kids, st.need);
    for (size_t i = 0; i < k; ++i) ScanPrefetch(kids[i]);
    size_t i = 0;
    while (i < k && IsLeaf(kids[i])) st.Output(kids[i++]);
    if (i == k) {
      // As PersistentRadixTree's walk requests the pending word after the next, in two
      // steps, since a node's type (its size) is in its first line: the word after the next,
      // whose first lines were requested one expansion ago, has the rest of its lines
      // requested; the one after that its first lines.
      if (st.size > 1 && !IsLeaf(st.Peek(1)))
        PrefetchRest(reinterpret_cast<const Node*>(st.Peek(1)));
      if (st.size > 2) ScanPrefetch(st.Peek(2));
      continue;
    }
    const size_t pushed = st.Push(kids + i, k - i, depth + n->prefix_len + 1);
    // Pre-expansion reads the next node's children only if they lie in the three lines
    // prefetched (Node4, Node16); of a Node48 or Node256 it requests the other lines, so its
    // children are read without a wait when it is expanded.
    Ref y;
    if (st.TakeForPreExpansion(pushed, [](Ref c) { return !IsLeaf(c); }, &y)) {
      auto* yn = reinterpret_cast<const Node*>(y);
      if (yn->type == art::NodeType::k4 || yn->type == art::NodeType::k16) {
        const size_t m = AllChildren(yn, kids, st.need - pushed);
        for (size_t j = 0; j < m; ++j) ScanPrefetch(kids[j]);
      } else {
        pm::PrefetchLines(yn, 192, art::NodeBytes(yn->type));
      }
      if (st.size > pushed + 1 && st.need > pushed + 1) ScanPrefetch(st.Peek(pushed + 1));
    }
  }
}

size_t Art::scan(std::string_view start, size_t max_count, ScanCallback fn) {
  if (max_count == 0) return 0;
  std::shared_lock lock(mu_);
  return ScanInChunks<ScanState>(
      start, max_count, fn, [&](std::string_view from, ScanState& st) { ScanChunk(from, st); },
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
