#include "btree/hybrid/inner_tree.h"

#include <algorithm>
#include <cassert>
#include <new>
#include <string>

#include "btree/hybrid/leaf_common.h"
#include "pm/mutant.h"

namespace pmindex::btree {
namespace {

constexpr auto kRelaxed = std::memory_order_relaxed;
using inner_detail::ChildIndex;
using inner_detail::StableVersion;

inline bool Upgrade(InnerTree::Node* n, uint64_t v) {
  return VersionLock::TryUpgrade(&n->version, v);
}

}  // namespace

InnerTree::Node* InnerTree::new_node(uint32_t level) {
  Node* n = nullptr;
  if (alloc_ != nullptr) {
    // inner=pm. Its content is persisted before anything names it (the callers' persist_range).
    Result<uint64_t> block = alloc_->allocate(sizeof(Node));
    if (block.ok()) n = new (base_ + *block) Node;
  }
  if (n == nullptr) n = new Node;  // DRAM, or a full pool (see the header)
  n->level = level;
  for (auto& k : n->keys) k.store(kNoKey, kRelaxed);  // invariant 1: no keys yet
  for (auto& c : n->children) c.store(nullptr, kRelaxed);
  std::lock_guard<std::mutex> lock(nodes_mu_);
  nodes_.push_back(n);
  return n;
}

void InnerTree::clear(bool free_pool_nodes) {
  std::lock_guard<std::mutex> lock(nodes_mu_);
  for (Node* n : nodes_) {
    if (!in_pool(n)) {
      delete n;
    } else if (free_pool_nodes) {
      alloc_->free(static_cast<uint64_t>(reinterpret_cast<char*>(n) - base_));
    }
  }
  nodes_.clear();
  root_.store(nullptr);
}

void InnerTree::place_in_pool(pm::Allocator* alloc, pm::PersistContext* pc, char* base,
                              uint64_t size) {
  assert(nodes_.empty() && "nodes are placed before the first is made");
  alloc_ = alloc;
  pc_ = pc;
  base_ = base;
  pool_size_ = size;
}

Status InnerTree::visit_pool_nodes(BlockVisitor& visitor) const {
  std::lock_guard<std::mutex> lock(nodes_mu_);
  for (const Node* n : nodes_) {
    if (!in_pool(n)) continue;
    const uint64_t off = static_cast<uint64_t>(reinterpret_cast<const char*>(n) - base_);
    if (Status s = visitor.visit(off); !s.ok()) return s;
  }
  return Status::OK();
}

uint64_t InnerTree::pool_node_count() const {
  if (base_ == nullptr) return 0;
  std::lock_guard<std::mutex> lock(nodes_mu_);
  return static_cast<uint64_t>(
      std::count_if(nodes_.begin(), nodes_.end(), [&](const Node* n) { return in_pool(n); }));
}

void InnerTree::persist_range(const Node* n, uint32_t from, uint32_t to) {
  if (!in_pool(n)) return;
  pc_->flush(n, 64);  // line 0: count (and the volatile version word beside it)
  if (to > from) pc_->flush(&n->keys[from], (to - from) * sizeof(n->keys[0]));
  pc_->flush(&n->children[from], (to - from + 1) * sizeof(n->children[0]));
  pc_->fence();
}

void InnerTree::insert_at(Node* n, uint32_t pos, uint64_t key, void* right_child) {
  const uint32_t count = n->count.load(kRelaxed);
  for (uint32_t i = count; i > pos; --i) {
    n->keys[i].store(n->keys[i - 1].load(kRelaxed), kRelaxed);
    n->children[i + 1].store(n->children[i].load(kRelaxed), std::memory_order_release);
  }
  n->keys[pos].store(key, kRelaxed);
  n->children[pos + 1].store(right_child, std::memory_order_release);
  n->count.store(count + 1, kRelaxed);
  persist_range(n, pos, count + 1);  // inner=pm: the shifted keys and children
}

void InnerTree::split(Node* parent, Node* n) {
  const uint32_t count = n->count.load(kRelaxed);
  const uint32_t mid = count / 2;
  const uint64_t sep = n->keys[mid].load(kRelaxed);
  Node* right = new_node(n->level);
  const uint32_t rcount = count - mid - 1;
  for (uint32_t i = 0; i < rcount; ++i) right->keys[i].store(n->keys[mid + 1 + i].load(kRelaxed));
  for (uint32_t i = 0; i <= rcount; ++i) {
    right->children[i].store(n->children[mid + 1 + i].load(kRelaxed));
  }
  right->count.store(rcount);
  // inner=pm: the new node is durable before its parent (or the root) names it. (The
  // mutant is registered by nvtree, whose tests run inner=pm; it acts in every layout.)
  if (!pm::mutant("nvtree.pm_inner_skip_node_persist")) persist_range(right, 0, rcount);
  if (parent != nullptr) {
    insert_at(parent, ChildIndex(parent, sep), sep, right);
  } else {
    Node* root = new_node(n->level + 1);
    root->keys[0].store(sep);
    root->children[0].store(n);
    root->children[1].store(right);
    root->count.store(1);
    persist_range(root, 0, 1);
    root_.store(root, std::memory_order_release);  // while n is locked: invariant 3
  }
  n->count.store(mid, kRelaxed);
  for (uint32_t i = mid; i < count; ++i) n->keys[i].store(kNoKey, kRelaxed);  // invariant 1
  if (in_pool(n)) {  // the count and the cleared keys (children past the count are not read)
    pc_->flush(n, 64);
    pc_->flush(&n->keys[mid], (count - mid) * sizeof(n->keys[0]));
    pc_->fence();
  }
}

InnerTree::Node* InnerTree::lock_parent(uint64_t low_key, const void* leaf, bool need_room,
                                        uint32_t* index) {
restart:
  Node* node = root_.load(std::memory_order_acquire);
  uint64_t v = StableVersion(node);
  if (node != root_.load(std::memory_order_acquire)) goto restart;
  Node* parent = nullptr;
  uint64_t pv = 0;
  for (;;) {
    if (need_room && node->count.load(kRelaxed) == kMaxKeys) {
      if (parent != nullptr && !Upgrade(parent, pv)) goto restart;
      if (!Upgrade(node, v)) {
        if (parent != nullptr) unlock(parent);
        goto restart;
      }
      if (parent == nullptr && node != root_.load(std::memory_order_acquire)) {
        unlock(node);
        goto restart;
      }
      split(parent, node);
      unlock(node);
      if (parent != nullptr) unlock(parent);
      goto restart;
    }
    const uint32_t idx = ChildIndex(node, low_key);
    if (node->level == 1) {
      if (!Upgrade(node, v)) goto restart;
      if (node->children[idx].load(kRelaxed) != leaf) {  // cannot happen: the leaf is locked
        unlock(node);
        goto restart;
      }
      *index = idx;
      return node;
    }
    Node* next = static_cast<Node*>(node->children[idx].load(std::memory_order_acquire));
    if (!validate(node, v)) goto restart;
    const uint64_t nv = StableVersion(next);
    if (!validate(node, v)) goto restart;
    parent = node;
    pv = v;
    node = next;
    v = nv;
  }
}

void InnerTree::replace_child(Node* n, uint32_t index, void* leaf) {
  n->children[index].store(leaf, std::memory_order_release);
  if (in_pool(n)) pc_->persist(&n->children[index], sizeof(n->children[0]));
}

void InnerTree::insert_child_after(Node* n, uint32_t index, uint64_t low_key, void* leaf) {
  insert_at(n, index, low_key, leaf);
}

void InnerTree::remove_child(Node* n, uint32_t index) {
  const uint32_t count = n->count.load(kRelaxed);
  assert(index > 0 && index <= count && "child 0 has no key of its own to remove");
  for (uint32_t i = index; i < count; ++i) {
    n->keys[i - 1].store(n->keys[i].load(kRelaxed), kRelaxed);
    n->children[i].store(n->children[i + 1].load(kRelaxed), std::memory_order_release);
  }
  n->keys[count - 1].store(kNoKey, kRelaxed);  // invariant 1
  n->count.store(count - 1, kRelaxed);
  persist_range(n, index - 1, count);  // inner=pm: the shifted keys and children
}

void InnerTree::init_single(void* leaf) {
  assert(empty() && "init_single is for the first leaf of an empty tree");
  Node* n = new_node(1);
  n->children[0].store(leaf);
  n->count.store(0);
  persist_range(n, 0, 0);  // inner=pm: durable before the root names it
  root_.store(n, std::memory_order_release);
}

void InnerTree::build(const std::vector<std::pair<uint64_t, void*>>& leaves) {
  clear(/*free_pool_nodes=*/true);
  if (leaves.empty()) return;
  // Leave a quarter of each node free so the first splits after recovery stay local.
  constexpr uint32_t kFill = (kMaxKeys + 1) * 3 / 4;
  std::vector<std::pair<uint64_t, void*>> level(leaves);
  uint32_t height = 1;
  for (;;) {
    std::vector<std::pair<uint64_t, void*>> up;
    for (size_t i = 0; i < level.size(); i += kFill) {
      const size_t n = std::min<size_t>(kFill, level.size() - i);
      Node* node = new_node(height);
      for (size_t j = 0; j < n; ++j) {
        node->children[j].store(level[i + j].second, kRelaxed);
        if (j > 0) node->keys[j - 1].store(level[i + j].first, kRelaxed);
      }
      node->count.store(static_cast<uint32_t>(n - 1), kRelaxed);
      persist_range(node, 0, static_cast<uint32_t>(n - 1));  // inner=pm
      up.emplace_back(level[i].first, node);
    }
    if (up.size() == 1) {
      root_.store(static_cast<Node*>(up[0].second), std::memory_order_release);
      return;
    }
    level.swap(up);
    ++height;
  }
}

Status InnerTree::verify(const std::vector<std::pair<uint64_t, void*>>& leaves) const {
  const Node* root = root_.load();
  if (root == nullptr) {
    return leaves.empty() ? Status::OK()
                          : Status::Corruption("inner tree is empty but the leaf chain is not");
  }
  size_t next_leaf = 0;
  std::string error;
  // (node, lower bound, has upper bound, upper bound)
  std::function<void(const Node*, uint64_t, bool, uint64_t)> walk =
      [&](const Node* n, uint64_t lo, bool has_hi, uint64_t hi) {
        if (!error.empty()) return;
        const uint32_t count = n->count.load();
        if (count > kMaxKeys) {
          error = "inner node count " + std::to_string(count) + " too large";
          return;
        }
        for (uint32_t i = count; i <= kMaxKeys; ++i) {
          if (n->keys[i].load() != kNoKey) {
            error = "inner node key slot " + std::to_string(i) + " past the count is not kNoKey";
            return;
          }
        }
        for (uint32_t i = 0; i < count; ++i) {
          const uint64_t k = n->keys[i].load();
          if ((i > 0 && k <= n->keys[i - 1].load()) || (i == 0 && k <= lo) ||
              (has_hi && k >= hi)) {
            error = "inner node keys out of order or outside the node's bounds";
            return;
          }
        }
        for (uint32_t i = 0; i <= count; ++i) {
          const uint64_t clo = i == 0 ? lo : n->keys[i - 1].load();
          const bool chas = i < count || has_hi;
          const uint64_t chi = i < count ? n->keys[i].load() : hi;
          void* child = n->children[i].load();
          if (n->level == 1) {
            if (next_leaf >= leaves.size() || leaves[next_leaf].second != child) {
              error = "inner tree leaf " + std::to_string(next_leaf) +
                      " differs from the leaf chain";
              return;
            }
            if (leaves[next_leaf].first != clo) {
              error = "leaf " + std::to_string(next_leaf) + " low key " +
                      std::to_string(leaves[next_leaf].first) +
                      " differs from its inner bound " + std::to_string(clo);
              return;
            }
            ++next_leaf;
          } else {
            const Node* c = static_cast<const Node*>(child);
            if (c->level + 1 != n->level) {
              error = "inner node levels inconsistent";
              return;
            }
            walk(c, clo, chas, chi);
          }
        }
      };
  walk(root, 0, false, 0);
  if (error.empty() && next_leaf != leaves.size()) {
    error = "leaf chain has " + std::to_string(leaves.size()) + " leaves, inner tree " +
            std::to_string(next_leaf);
  }
  return error.empty() ? Status::OK() : Status::Corruption(error);
}

uint64_t InnerTree::node_count() const {
  std::lock_guard<std::mutex> lock(nodes_mu_);
  return nodes_.size();
}

uint32_t InnerTree::height() const {
  const Node* r = root_.load();
  return r == nullptr ? 0 : r->level;
}

}  // namespace pmindex::btree
