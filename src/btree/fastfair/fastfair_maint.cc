// FAST&FAIR maintenance: recovery (canonical nodes again), verify, the block visitor, stats.
#include <algorithm>
#include <string>
#include <vector>

#include "btree/fastfair/fastfair.h"
#include "btree/fastfair/line_writer.h"
#include "pm/alloc.h"
#include "pm/mutant.h"

namespace pmindex::btree::fastfair {

Status FastFairTree::check_node(uint64_t o, uint32_t level) const {
  if (o % 64 != 0 || o < 4096 || o + node_bytes_ > pool_->size()) {
    return Status::Corruption("node offset " + std::to_string(o) + " outside the pool");
  }
  const Node* n = at(o);
  if (n->magic != kNodeMagic) {
    return Status::Corruption("node at offset " + std::to_string(o) + " has no node magic");
  }
  if (n->level != level) {
    return Status::Corruption("node at offset " + std::to_string(o) + " is at level " +
                              std::to_string(n->level) + ", expected " + std::to_string(level));
  }
  if ((n->count & kCountMask) > slots_) {
    return Status::Corruption("node at offset " + std::to_string(o) + ": count out of range");
  }
  return Status::OK();
}

Status FastFairTree::walk(FunctionRef<Status(Node*, uint64_t)> fn) const {
  uint64_t first = root_->root;
  if (first == 0) return Status::OK();
  if (first % 64 != 0 || first < 4096 || first + node_bytes_ > pool_->size()) {
    return Status::Corruption("root offset " + std::to_string(first) + " outside the pool");
  }
  uint32_t level = at(first)->level;
  const uint64_t max_nodes = pool_->size() / node_bytes_ + 1;
  uint64_t visited = 0;
  for (;;) {
    if (Status s = check_node(first, level); !s.ok()) return s;
    const uint64_t below = at(first)->leftmost;
    for (uint64_t o = first; o != 0;) {
      const uint64_t next = at(o)->sibling;
      if (next != 0) {
        if (Status s = check_node(next, level); !s.ok()) return s;
      }
      if (++visited > max_nodes) return Status::Corruption("a node list has a cycle");
      if (Status s = fn(at(o), o); !s.ok()) return s;
      o = next;
    }
    if (level == 0) return Status::OK();
    if (below == 0) return Status::Corruption("inner node without a leftmost child");
    first = below;
    --level;
  }
}

// Rewrites a node a crash left mid-shift or mid-truncation into its canonical form (node.h),
// with the same ordered stores as a delete: compaction left to right (key first: the slot
// written equals its source on the right and is skipped until its value is in), then count
// and sentinel in the order that never exposes a slot that is not an entry. Every state in
// between reads as the same entries, so a crash during recovery leaves a readable node.
Status FastFairTree::canonicalize(Node* n) {
  View v;
  ReadNode(n, slots_, &v);
  size_t t = v.n;
  if (v.sibling != 0) {  // an interrupted truncation: the sibling holds these
    const uint64_t hi = at(v.sibling)->low_key;
    while (t > 0 && v.key[t - 1] >= hi) --t;
  }
  if (t == v.n && Canonical(n, slots_, v)) return Status::OK();
  if (pm::mutant("fastfair.recovery_keeps_duplicate")) return Status::OK();
  LineWriter w(*pc_, LineWriter::Kind::kPlain);
  for (size_t i = 0; i < t; ++i) {
    if (n->slot[i].key == v.key[i] && n->slot[i].value == v.value[i]) continue;
    w.store(&n->slot[i].key, v.key[i]);
    w.store(&n->slot[i].value, v.value[i]);
  }
  w.close();
  const uint64_t cw = n->count;
  const size_t c = cw & kCountMask;
  const uint64_t last = t > 0 ? v.key[t - 1] : 0;
  const uint64_t want = CountWord(t, last);
  const bool sentinel = t > 0 && t < slots_ && !(want & kNoOverflow);
  if (c > t || (c == t && cw != want && (want & kNoOverflow))) {
    StoreRelease(n->count, want);  // hides copies and extras first
    pc_->persist(&n->count, 8);
  } else if (cw != want) {  // the overflow slot holds the last entry: the sentinel goes first
    if (sentinel) {
      StoreRelease(n->slot[t].key, SentinelKey(last));
      pc_->persist(&n->slot[t].key, 8);
    }
    StoreRelease(n->count, want);
    pc_->persist(&n->count, 8);
  }
  if (sentinel && n->slot[t].key >= last) {
    StoreRelease(n->slot[t].key, SentinelKey(last));
    pc_->persist(&n->slot[t].key, 8);
  }
  return Status::OK();
}

Status FastFairTree::recover() {
  if (pool_ == nullptr) return Status::InvalidArgument("index is closed");
  gen_ = static_cast<uint32_t>(pool_->generation());
  return walk([this](Node* n, uint64_t o) {
    if (n->seq != 0) n->seq = 0;  // a delete or truncation in flight when the process died
    Status s = canonicalize(n);
    return s.ok() ? s : s.WithContext("node at offset " + std::to_string(o));
  });
}

Status FastFairTree::visit_blocks(BlockVisitor& visitor) {
  if (pool_ == nullptr) return Status::OK();
  return walk([&visitor](Node*, uint64_t o) { return visitor.visit(o); });
}

// One node's own checks: canonical, unlocked, its keys inside [low_key, sibling's low_key).
Status FastFairTree::verify_node(Node* n, uint64_t o, uint64_t* keys) const {
  const std::string where = "node at offset " + std::to_string(o);
  View v;
  ReadNode(n, slots_, &v);
  if (!Canonical(n, slots_, v)) {
    return Status::Corruption(where + ": not canonical (count/sentinel)");
  }
  if (VersionLock::Held(n->version, gen_) || (n->seq & 1)) {
    return Status::Corruption(where + ": locked");
  }
  const uint64_t hi = v.sibling != 0 ? at(v.sibling)->low_key : 0;
  if (v.sibling != 0 && hi <= n->low_key) {
    return Status::Corruption(where + ": sibling's low key not above its own");
  }
  for (size_t i = 0; i < v.n; ++i) {
    if ((i > 0 && v.key[i] <= v.key[i - 1]) || v.key[i] < n->low_key ||
        (v.sibling != 0 && v.key[i] >= hi)) {
      return Status::Corruption(where + ": key " + std::to_string(v.key[i]) +
                                " out of order or outside the node's range");
    }
  }
  if (n->level == 0) {
    *keys += v.n;
    return Status::OK();
  }
  for (size_t i = 0; i <= v.n; ++i) {
    const uint64_t child = i == 0 ? n->leftmost : v.value[i - 1];
    if (Status s = check_node(child, n->level - 1); !s.ok()) return s.WithContext(where);
    if (at(child)->low_key != (i == 0 ? n->low_key : v.key[i - 1])) {
      return Status::Corruption(where + ": child " + std::to_string(i) +
                                "'s low key differs from its separator");
    }
  }
  return Status::OK();
}

// Also: each level's list starts at low key 0 with increasing low keys, and holds every child
// its parents name, in their order (a node no parent names yet is allowed: see fastfair.h).
Status FastFairTree::verify() {
  if (pool_ == nullptr) return Status::InvalidArgument("index is closed");
  uint64_t keys = 0;
  uint32_t level = UINT32_MAX;
  uint64_t prev_low = 0;
  std::vector<uint64_t> named, next_named;  // children named by the level above, in order
  size_t matched = 0;
  auto finish_level = [&]() -> Status {
    if (level != UINT32_MAX && matched != named.size()) {
      return Status::Corruption("level " + std::to_string(level) + ": a child its parent names "
                                "is not in the level's list, or out of order");
    }
    named.swap(next_named);
    next_named.clear();
    matched = 0;
    return Status::OK();
  };
  Status s = walk([&](Node* n, uint64_t o) -> Status {
    if (n->level != level) {
      if (Status f = finish_level(); !f.ok()) return f;
      level = n->level;
      if (n->low_key != 0) return Status::Corruption("a level's first node has a low key");
    } else if (n->low_key <= prev_low) {
      return Status::Corruption("node at offset " + std::to_string(o) + ": low key out of order");
    }
    prev_low = n->low_key;
    if (matched < named.size() && named[matched] == o) ++matched;
    if (Status vs = verify_node(n, o, &keys); !vs.ok()) return vs;
    if (n->level > 0) {
      View v;
      ReadNode(n, slots_, &v);
      next_named.push_back(n->leftmost);
      for (size_t i = 0; i < v.n; ++i) next_named.push_back(v.value[i]);
    }
    return Status::OK();
  });
  if (!s.ok()) return s;
  return finish_level();
}

IndexStats FastFairTree::stats() {
  IndexStats st;
  if (pool_ == nullptr) return st;
  uint64_t leaves = 0, inner = 0, height = 0;
  walk([&](Node* n, uint64_t) {
    View v;
    ReadNode(n, slots_, &v);
    if (n->level == 0) {
      ++leaves;
      st.keys += v.n;
    } else {
      ++inner;
    }
    height = std::max<uint64_t>(height, n->level + 1);
    return Status::OK();
  }).IgnoreError();
  st.pm_bytes = (leaves + inner) * node_bytes_;
  st.nodes = {{"leaves", leaves}, {"inner", inner}, {"height", height}};
  return st;
}

}  // namespace pmindex::btree::fastfair
