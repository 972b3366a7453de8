// Volatile ART: point operations, grow, shrink and collapse.
#include "radix/art/art.h"

#include <algorithm>
#include <mutex>

#include "radix/common/key.h"

namespace pmindex::radix {

using art::IsLeaf;
using art::Leaf;
using art::Node;
using art::Node16;
using art::Node256;
using art::Node4;
using art::Node48;
using art::NodeType;
using art::Ref;

Art::Art() { traits_ = Registration().traits; }
Art::~Art() { FreeTree(root_); }

IndexRegistration Art::Registration() {
  IndexRegistration r;
  r.traits.name = "art";
  r.traits.kind = IndexKind::kNone;
  r.traits.persistent = false;
  r.traits.ordered = true;
  r.traits.byte_keys = true;
  r.traits.max_key_size = kMaxKeySize;
  r.traits.max_value_size = kMaxValueSize;
  r.traits.concurrency = "writer-preferring reader-writer lock (many readers or one writer)";
  r.traits.durability = "volatile";
  r.traits.description = "ART (Leis et al.): volatile DRAM adaptive radix tree, the ceiling";
  r.make = [](const std::string&, const Options&) -> Result<std::unique_ptr<Index>> {
    return std::unique_ptr<Index>(new Art());
  };
  return r;
}

void Art::FreeTree(Ref r) {
  if (r == 0) return;
  if (IsLeaf(r)) {
    std::free(art::AsLeaf(r));
    return;
  }
  auto* n = reinterpret_cast<Node*>(r);
  FreeTree(n->end);
  art::ForEachChild(n, -1, [](uint8_t, Ref c) {
    FreeTree(c);
    return true;
  });
  std::free(n);
}

const Leaf* Art::AnyLeaf(Ref r) {
  while (!IsLeaf(r)) {
    auto* n = reinterpret_cast<const Node*>(r);
    Ref next = n->end;
    if (next == 0) {
      art::ForEachChild(n, -1, [&next](uint8_t, Ref c) {
        next = c;
        return false;
      });
    }
    if (next == 0) return nullptr;
    r = next;
  }
  return art::AsLeaf(r);
}

// Bytes of n's prefix that key matches from `depth` (stops where the key ends).
uint32_t Art::PrefixMatch(const Node* n, const uint8_t* k, size_t len, size_t depth) {
  const uint32_t limit = static_cast<uint32_t>(std::min<size_t>(n->prefix_len, len - depth));
  const uint32_t stored = std::min<uint32_t>(limit, art::kArtPrefix);
  uint32_t i = 0;
  while (i < stored && n->prefix[i] == k[depth + i]) ++i;
  if (i < stored || i == limit) return i;
  const Leaf* l = AnyLeaf(reinterpret_cast<Ref>(n));
  return static_cast<uint32_t>(CommonUnits<8>(k, l->key_ptr(), depth + i, depth + limit) - depth);
}

void Art::SetPrefix(Node* n, uint32_t len, const uint8_t* key, size_t depth) {
  n->prefix_len = len;
  std::memcpy(n->prefix, key + depth, std::min<uint32_t>(len, art::kArtPrefix));
}

Status Art::lookup(std::string_view key, std::string* value) {
  if (!KeyInRange(key)) return Status::InvalidArgument("key length out of range");
  std::shared_lock lock(mu_);
  const uint8_t* k = Bytes(key);
  const size_t len = key.size();
  Ref r = root_;
  size_t depth = 0;
  while (r != 0) {
    if (IsLeaf(r)) {
      const Leaf* l = art::AsLeaf(r);
      if (l->key() != key) return Status::NotFound();
      if (value) CopyValue(l->data + l->key_len, l->value_len, value);
      return Status::OK();
    }
    // Optimistic path compression: the prefix is skipped, the leaf compare checks it.
    auto* n = reinterpret_cast<Node*>(r);
    depth += n->prefix_len;
    if (depth > len) return Status::NotFound();
    if (depth == len) {
      r = n->end;
      continue;
    }
    const Ref* c = art::FindChild(n, k[depth]);
    if (c == nullptr) return Status::NotFound();
    r = *c;
    ++depth;
  }
  return Status::NotFound();
}

Status Art::insert(std::string_view key, std::string_view value) {
  return Put(key, value, PutMode::kInsert);
}
Status Art::update(std::string_view key, std::string_view value) {
  return Put(key, value, PutMode::kUpdate);
}
Status Art::upsert(std::string_view key, std::string_view value) {
  return Put(key, value, PutMode::kUpsert);
}

Status Art::Put(std::string_view key, std::string_view value, PutMode mode) {
  if (Status s = CheckKeyValue(key, value); !s.ok()) return s;
  std::unique_lock lock(mu_);
  const uint8_t* k = Bytes(key);
  const size_t len = key.size();
  Ref* ref = &root_;
  size_t depth = 0;
  for (;;) {
    const Ref r = *ref;
    if (r == 0) {
      if (mode == PutMode::kUpdate) return Status::NotFound();
      *ref = Leaf::Make(key, value);
      return Status::OK();
    }
    if (IsLeaf(r)) {
      Leaf* l = art::AsLeaf(r);
      if (l->key() == key) {
        if (mode == PutMode::kInsert) return Status::AlreadyExists();
        if (l->value_len == value.size()) {
          std::memcpy(l->data + l->key_len, value.data(), value.size());
        } else {
          *ref = Leaf::Make(key, value);
          std::free(l);
        }
        return Status::OK();
      }
      if (mode == PutMode::kUpdate) return Status::NotFound();
      // Lazy expansion: a Node4 over the common run of both keys.
      const size_t m = CommonUnits<8>(k, l->key_ptr(), depth, std::min<size_t>(len, l->key_len));
      auto* n = static_cast<Node4*>(art::NewNode(NodeType::k4));
      SetPrefix(n, static_cast<uint32_t>(m - depth), k, depth);
      const Ref fresh = Leaf::Make(key, value);
      Ref slot = reinterpret_cast<Ref>(n);
      if (m == len) n->end = fresh; else AddChild(&slot, n, k[m], fresh);
      if (m == l->key_len) n->end = r; else AddChild(&slot, n, l->key_ptr()[m], r);
      *ref = slot;
      return Status::OK();
    }
    auto* n = reinterpret_cast<Node*>(r);
    if (n->prefix_len != 0) {
      const uint32_t m = PrefixMatch(n, k, len, depth);
      if (m < n->prefix_len) {
        if (mode == PutMode::kUpdate) return Status::NotFound();
        // Split the prefix: a new Node4 holds n (one byte further down) and the new leaf.
        const Leaf* below = AnyLeaf(r);
        auto* parent = static_cast<Node4*>(art::NewNode(NodeType::k4));
        SetPrefix(parent, m, k, depth);
        const uint8_t nb = below->key_ptr()[depth + m];
        SetPrefix(n, n->prefix_len - m - 1, below->key_ptr(), depth + m + 1);
        Ref slot = reinterpret_cast<Ref>(parent);
        AddChild(&slot, parent, nb, r);
        const Ref fresh = Leaf::Make(key, value);
        if (depth + m == len) {
          parent->end = fresh;
        } else {
          AddChild(&slot, parent, k[depth + m], fresh);
        }
        *ref = slot;
        return Status::OK();
      }
      depth += n->prefix_len;
    }
    if (depth == len) {
      ref = &n->end;
      continue;
    }
    Ref* c = art::FindChild(n, k[depth]);
    if (c == nullptr) {
      if (mode == PutMode::kUpdate) return Status::NotFound();
      AddChild(ref, n, k[depth], Leaf::Make(key, value));
      return Status::OK();
    }
    ref = c;
    ++depth;
  }
}

namespace {

template <typename To>
To* Grow(Node* from, NodeType t) {
  auto* to = static_cast<To*>(art::NewNode(t));
  std::memcpy(to->prefix, from->prefix, sizeof(from->prefix));
  to->prefix_len = from->prefix_len;
  to->end = from->end;
  return to;
}

}  // namespace

// Adds b -> child to node n (absent), growing n (and rewriting *ref) when it is full.
void Art::AddChild(Ref* ref, Node* n, uint8_t b, Ref child) {
  switch (n->type) {
    case NodeType::k4: {
      auto* m = static_cast<Node4*>(n);
      if (m->count < 4) {
        unsigned i = 0;
        while (i < m->count && m->keys[i] < b) ++i;
        std::memmove(m->keys + i + 1, m->keys + i, m->count - i);
        std::memmove(m->child + i + 1, m->child + i, (m->count - i) * sizeof(Ref));
        m->keys[i] = b;
        m->child[i] = child;
        ++m->count;
        return;
      }
      auto* g = Grow<Node16>(n, NodeType::k16);
      std::memcpy(g->keys, m->keys, 4);
      std::memcpy(g->child, m->child, 4 * sizeof(Ref));
      g->count = 4;
      *ref = reinterpret_cast<Ref>(g);
      std::free(m);
      return AddChild(ref, g, b, child);
    }
    case NodeType::k16: {
      auto* m = static_cast<Node16*>(n);
      if (m->count < 16) {
        const unsigned i = LowerBound16(m->keys, m->count, b);
        std::memmove(m->keys + i + 1, m->keys + i, m->count - i);
        std::memmove(m->child + i + 1, m->child + i, (m->count - i) * sizeof(Ref));
        m->keys[i] = b;
        m->child[i] = child;
        ++m->count;
        return;
      }
      auto* g = Grow<Node48>(n, NodeType::k48);
      for (unsigned i = 0; i < 16; ++i) {
        g->child[i] = m->child[i];
        g->index[m->keys[i]] = static_cast<uint8_t>(i + 1);
      }
      g->count = 16;
      *ref = reinterpret_cast<Ref>(g);
      std::free(m);
      return AddChild(ref, g, b, child);
    }
    case NodeType::k48: {
      auto* m = static_cast<Node48*>(n);
      if (m->count < 48) {
        // Slots fill in order and a remove leaves a hole: the slot at `count` is free
        // unless one was, so the scan is for nodes that lost a child.
        unsigned p = m->count;
        if (m->child[p] != 0) {
          p = 0;
          while (m->child[p] != 0) ++p;
        }
        m->child[p] = child;
        m->index[b] = static_cast<uint8_t>(p + 1);
        ++m->count;
        return;
      }
      auto* g = Grow<Node256>(n, NodeType::k256);
      for (unsigned i = 0; i < 256; ++i)
        if (m->index[i]) g->child[i] = m->child[m->index[i] - 1];
      g->count = 48;
      *ref = reinterpret_cast<Ref>(g);
      std::free(m);
      return AddChild(ref, g, b, child);
    }
    case NodeType::k256: {
      auto* m = static_cast<Node256*>(n);
      m->child[b] = child;
      ++m->count;
      return;
    }
  }
}

void Art::RemoveChild(Node* n, uint8_t b) {
  switch (n->type) {
    case NodeType::k4:
    case NodeType::k16: {
      uint8_t* keys = n->type == NodeType::k4 ? static_cast<Node4*>(n)->keys
                                              : static_cast<Node16*>(n)->keys;
      Ref* child = n->type == NodeType::k4 ? static_cast<Node4*>(n)->child
                                           : static_cast<Node16*>(n)->child;
      unsigned i = 0;
      while (keys[i] != b) ++i;
      std::memmove(keys + i, keys + i + 1, n->count - i - 1);
      std::memmove(child + i, child + i + 1, (n->count - i - 1) * sizeof(Ref));
      --n->count;
      return;
    }
    case NodeType::k48: {
      auto* m = static_cast<Node48*>(n);
      m->child[m->index[b] - 1] = 0;
      m->index[b] = 0;
      --m->count;
      return;
    }
    case NodeType::k256:
      static_cast<Node256*>(n)->child[b] = 0;
      --n->count;
      return;
  }
}

// After a remove from n (reached through *ref, its prefix starting at `depth`): shrink a
// sparse node, or collapse a Node4 left with a single entry into *ref.
void Art::Fixup(Ref* ref, Node* n, size_t depth) {
  switch (n->type) {
    case NodeType::k4: {
      auto* m = static_cast<Node4*>(n);
      const unsigned entries = m->count + (m->end != 0);
      if (entries >= 2) return;
      if (entries == 0) {
        *ref = 0;
      } else if (m->end != 0) {
        *ref = m->end;
      } else if (IsLeaf(m->child[0])) {
        *ref = m->child[0];
      } else {
        // Merge n's prefix, the child's key byte and the child's prefix.
        auto* c = reinterpret_cast<Node*>(m->child[0]);
        const uint32_t len = m->prefix_len + 1 + c->prefix_len;
        SetPrefix(c, len, AnyLeaf(m->child[0])->key_ptr(), depth);
        *ref = m->child[0];
      }
      std::free(m);
      return;
    }
    case NodeType::k16: {
      auto* m = static_cast<Node16*>(n);
      if (m->count > 3) return;
      auto* s = Grow<Node4>(n, NodeType::k4);
      std::memcpy(s->keys, m->keys, m->count);
      std::memcpy(s->child, m->child, m->count * sizeof(Ref));
      s->count = m->count;
      *ref = reinterpret_cast<Ref>(s);
      std::free(m);
      return Fixup(ref, s, depth);  // collapses it if it has a single entry
    }
    case NodeType::k48: {
      auto* m = static_cast<Node48*>(n);
      if (m->count > 12) return;
      auto* s = Grow<Node16>(n, NodeType::k16);
      for (unsigned b = 0; b < 256; ++b) {
        if (!m->index[b]) continue;
        s->keys[s->count] = static_cast<uint8_t>(b);
        s->child[s->count++] = m->child[m->index[b] - 1];
      }
      *ref = reinterpret_cast<Ref>(s);
      std::free(m);
      return;
    }
    case NodeType::k256: {
      auto* m = static_cast<Node256*>(n);
      if (m->count > 37) return;
      auto* s = Grow<Node48>(n, NodeType::k48);
      for (unsigned b = 0; b < 256; ++b) {
        if (!m->child[b]) continue;
        s->child[s->count] = m->child[b];
        s->index[b] = static_cast<uint8_t>(++s->count);
      }
      *ref = reinterpret_cast<Ref>(s);
      std::free(m);
      return;
    }
  }
}

Status Art::remove(std::string_view key) {
  if (!KeyInRange(key)) return Status::NotFound();
  std::unique_lock lock(mu_);
  const uint8_t* k = Bytes(key);
  const size_t len = key.size();
  Ref* ref = &root_;
  Ref* parent_ref = nullptr;
  Node* parent = nullptr;
  size_t parent_depth = 0;
  int byte = -1;
  size_t depth = 0;
  for (;;) {
    const Ref r = *ref;
    if (r == 0) return Status::NotFound();
    if (IsLeaf(r)) {
      if (art::AsLeaf(r)->key() != key) return Status::NotFound();
      break;
    }
    auto* n = reinterpret_cast<Node*>(r);
    if (depth + n->prefix_len > len) return Status::NotFound();
    parent_ref = ref;
    parent = n;
    parent_depth = depth;
    depth += n->prefix_len;
    if (depth == len) {
      ref = &n->end;
      byte = -1;
    } else {
      ref = art::FindChild(n, k[depth]);
      if (ref == nullptr) return Status::NotFound();
      byte = k[depth];
      ++depth;
    }
  }
  std::free(art::AsLeaf(*ref));
  if (parent == nullptr) {
    *ref = 0;
    return Status::OK();
  }
  if (byte < 0) {
    parent->end = 0;
  } else {
    RemoveChild(parent, static_cast<uint8_t>(byte));
  }
  Fixup(parent_ref, parent, parent_depth);
  return Status::OK();
}

}  // namespace pmindex::radix
