// Volatile ART: point operations, grow, shrink and collapse, with optimistic lock coupling
// (art.h, "Thread safety").
#include "radix/art/art.h"

#include <algorithm>

#include "pm/version_lock.h"
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
using pm::VersionLock;

namespace {
constexpr uint32_t kGen = VersionLock::kResetGeneration;
constexpr int kEndSlot = 256;  // Rebuilt's `skip` for the end leaf
Node* AsNode(Ref r) { return reinterpret_cast<Node*>(r); }

// Stores a Node4's or Node16's key bytes (edited in `keys`) as the words readers load
// atomically (art_nodes.h).
void StoreKeyBytes(Node* n, const uint8_t* keys) {
  if (n->type == NodeType::k4) {
    uint32_t w;
    std::memcpy(&w, keys, 4);
    pm::Store(static_cast<Node4*>(n)->key_word, w);
  } else {
    uint64_t w[2];
    std::memcpy(w, keys, 16);
    pm::Store(static_cast<Node16*>(n)->key_words[0], w[0]);
    pm::Store(static_cast<Node16*>(n)->key_words[1], w[1]);
  }
}

}  // namespace

Art::Art() { traits_ = Registration().traits; }
Art::~Art() {
  epoch_.Drain(this);
  FreeTree(root_);
}

IndexRegistration Art::Registration() {
  IndexRegistration r;
  r.traits.name = "art";
  r.traits.kind = IndexKind::kNone;
  r.traits.persistent = false;
  r.traits.ordered = true;
  r.traits.byte_keys = true;
  r.traits.max_key_size = kMaxKeySize;
  r.traits.max_value_size = kMaxValueSize;
  r.traits.concurrency = "optimistic lock coupling (lock-free readers, node locks for writers)";
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
  auto* n = AsNode(r);
  FreeTree(n->end);
  art::ForEachChild(n, -1, [](uint8_t, Ref c) {
    FreeTree(c);
    return true;
  });
  std::free(n);
}

// Some leaf below r (racy: any leaf that was below r while the caller's version held has the
// prefixes above it); nullptr if a racy read found none.
const Leaf* Art::AnyLeaf(Ref r) {
  while (r != 0 && !IsLeaf(r)) {
    auto* n = reinterpret_cast<const Node*>(r);
    Ref next = pm::LoadAcquire(n->end);
    if (next == 0) {
      art::ForEachChild(n, -1, [&next](uint8_t, Ref c) {
        next = c;
        return false;
      });
    }
    r = next;
  }
  return r == 0 ? nullptr : art::AsLeaf(r);
}

// Bytes of n's prefix that key matches from `depth` (stops where the key ends), or
// kRestartMatch if a racy read gave nothing to compare with.
uint32_t Art::PrefixMatch(const Node* n, const uint8_t* k, size_t len, size_t depth) {
  const uint32_t limit =
      static_cast<uint32_t>(std::min<size_t>(pm::Load(n->prefix_len), len - depth));
  const uint32_t stored = std::min<uint32_t>(limit, art::kArtPrefix);
  uint32_t i = 0;
  while (i < stored && pm::Load(n->prefix[i]) == k[depth + i]) ++i;
  if (i < stored || i == limit) return i;
  const Leaf* l = AnyLeaf(reinterpret_cast<Ref>(n));
  if (l == nullptr || l->key_len < depth + limit) return kRestartMatch;
  return static_cast<uint32_t>(CommonUnits<8>(k, l->key_ptr(), depth + i, depth + limit) - depth);
}

// In a new node, or in a locked one (atomic stores: readers may be reading it).
void Art::SetPrefix(Node* n, uint32_t len, const uint8_t* key, size_t depth) {
  pm::Store(n->prefix_len, static_cast<uint16_t>(len));  // len <= kMaxKeySize
  for (uint32_t i = 0; i < std::min<uint32_t>(len, art::kArtPrefix); ++i)
    pm::Store(n->prefix[i], key[depth + i]);
}

Status Art::lookup(std::string_view key, std::string* value) {
  if (!KeyInRange(key)) return Status::InvalidArgument("key length out of range");
  pm::Epoch::Guard guard(epoch_);
  for (;;) {
    if (Outcome o = LookupOnce(key, value)) return std::move(*o);
  }
}

Art::Outcome Art::LookupOnce(std::string_view key, std::string* value) {
  const uint8_t* k = Bytes(key);
  const size_t len = key.size();
  Holder h{&root_lock_, 0};
  if (!ReadBegin(&h)) return Restart();
  Ref r = pm::LoadAcquire(root_);
  size_t depth = 0;
  for (;;) {
    if (r == 0) return Validate(h) ? Outcome(Status::NotFound()) : Restart();
    if (IsLeaf(r)) {
      const Leaf* l = art::AsLeaf(r);
      if (l->key() != key) return Validate(h) ? Outcome(Status::NotFound()) : Restart();
      if (value) l->CopyValueTo(value);
      return Validate(h) ? Outcome(Status::OK()) : Restart();
    }
    // Optimistic path compression: the prefix is skipped, the leaf compare checks it.
    Node* n = AsNode(r);
    Holder nh{&n->version, 0};
    if (!ReadBegin(&nh) || !Validate(h)) return Restart();
    depth += pm::Load(n->prefix_len);
    if (depth > len) return Validate(nh) ? Outcome(Status::NotFound()) : Restart();
    h = nh;
    if (depth == len) {
      r = pm::LoadAcquire(n->end);
      continue;
    }
    const Ref* c = art::FindChild(n, k[depth]);
    if (c == nullptr) return Validate(nh) ? Outcome(Status::NotFound()) : Restart();
    r = pm::LoadAcquire(*c);
    ++depth;
  }
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
  pm::Epoch::Guard guard(epoch_);
  for (;;) {
    if (Outcome o = PutOnce(key, value, mode)) return std::move(*o);
  }
}

// One descent: h is the holder of `slot` (the root lock, or the node the slot is in).
Art::Outcome Art::PutOnce(std::string_view key, std::string_view value, PutMode mode) {
  const uint8_t* k = Bytes(key);
  const size_t len = key.size();
  Holder h{&root_lock_, 0};
  if (!ReadBegin(&h)) return Restart();
  Ref* slot = &root_;
  size_t depth = 0;
  for (;;) {
    const Ref r = pm::LoadAcquire(*slot);
    if (r == 0) return PutIntoEmpty(h, slot, key, value, mode);
    if (IsLeaf(r)) return PutAtLeaf(h, slot, r, depth, key, value, mode);
    Node* n = AsNode(r);
    Holder nh{&n->version, 0};
    if (!ReadBegin(&nh) || !Validate(h)) return Restart();
    const uint32_t prefix_len = pm::Load(n->prefix_len);
    if (prefix_len != 0) {
      const uint32_t m = PrefixMatch(n, k, len, depth);
      if (m == kRestartMatch) return Restart();
      if (m < prefix_len) return SplitPrefix(h, slot, nh, n, depth, m, key, value, mode);
      depth += prefix_len;
    }
    if (depth == len) {
      h = nh;
      slot = &n->end;
      continue;
    }
    Ref* c = art::FindChild(n, k[depth]);
    if (c == nullptr) return AddLeaf(h, slot, nh, n, k[depth], key, value, mode);
    h = nh;
    slot = c;
    ++depth;
  }
}

// The empty root word or end slot gets the leaf (its holder's lock).
Art::Outcome Art::PutIntoEmpty(const Holder& h, Ref* slot, std::string_view key,
                               std::string_view value, PutMode mode) {
  if (mode == PutMode::kUpdate) return Validate(h) ? Outcome(Status::NotFound()) : Restart();
  if (!Upgrade(h)) return Restart();
  pm::StoreRelease(*slot, Leaf::Make(key, value));
  Unlock(h.word);
  return Status::OK();
}

// The slot holds leaf r: the key's, or one to expand lazily into a Node4 of both.
Art::Outcome Art::PutAtLeaf(const Holder& h, Ref* slot, Ref r, size_t depth,
                            std::string_view key, std::string_view value, PutMode mode) {
  Leaf* l = art::AsLeaf(r);
  if (l->key() == key) {
    if (mode == PutMode::kInsert) return Validate(h) ? Outcome(Status::AlreadyExists()) : Restart();
    if (!Upgrade(h)) return Restart();
    if (l->value_len == value.size()) {
      l->StoreValue(value);
      Unlock(h.word);
    } else {
      pm::StoreRelease(*slot, Leaf::Make(key, value));
      Unlock(h.word);
      Retire(r);
    }
    return Status::OK();
  }
  if (mode == PutMode::kUpdate) return Validate(h) ? Outcome(Status::NotFound()) : Restart();
  if (l->key_len < depth || !Upgrade(h)) return Restart();
  const uint8_t* k = Bytes(key);
  const size_t len = key.size();
  // Lazy expansion: a Node4 over the common run of both keys.
  const size_t m = CommonUnits<8>(k, l->key_ptr(), depth, std::min<size_t>(len, l->key_len));
  auto* n = static_cast<Node4*>(art::NewNode(NodeType::k4));
  SetPrefix(n, static_cast<uint32_t>(m - depth), k, depth);
  const Ref fresh = Leaf::Make(key, value);
  if (m == len) n->end = fresh; else InsertChild(n, k[m], fresh);
  if (m == l->key_len) n->end = r; else InsertChild(n, l->key_ptr()[m], r);
  pm::StoreRelease(*slot, reinterpret_cast<Ref>(n));
  Unlock(h.word);
  return Status::OK();
}

// n's prefix differs from the key after `match` bytes: a new Node4 holds n (one byte further
// down, its prefix shortened in place) and the new leaf. Locks the holder, then n.
Art::Outcome Art::SplitPrefix(const Holder& h, Ref* slot, const Holder& nh, Node* n,
                              size_t depth, uint32_t match, std::string_view key,
                              std::string_view value, PutMode mode) {
  if (mode == PutMode::kUpdate) return Validate(nh) ? Outcome(Status::NotFound()) : Restart();
  if (!Upgrade(h)) return Restart();
  if (!Upgrade(nh)) {
    Unlock(h.word, false);
    return Restart();
  }
  const Leaf* below = AnyLeaf(reinterpret_cast<Ref>(n));
  if (below == nullptr || below->key_len < depth + n->prefix_len) {
    Unlock(nh.word, false);
    Unlock(h.word, false);
    return Restart();
  }
  const uint8_t* k = Bytes(key);
  auto* parent = static_cast<Node4*>(art::NewNode(NodeType::k4));
  SetPrefix(parent, match, k, depth);
  const uint8_t nb = below->key_ptr()[depth + match];
  SetPrefix(n, n->prefix_len - match - 1, below->key_ptr(), depth + match + 1);
  InsertChild(parent, nb, reinterpret_cast<Ref>(n));
  const Ref fresh = Leaf::Make(key, value);
  if (depth + match == key.size()) {
    parent->end = fresh;
  } else {
    InsertChild(parent, k[depth + match], fresh);
  }
  pm::StoreRelease(*slot, reinterpret_cast<Ref>(parent));
  Unlock(nh.word);
  Unlock(h.word);
  return Status::OK();
}

// n has no child for byte b: added in place (n's lock), or into a grown copy that replaces n
// in its holder's slot (the holder's lock, then n's; n is marked obsolete and retired).
Art::Outcome Art::AddLeaf(const Holder& h, Ref* slot, const Holder& nh, Node* n, uint8_t b,
                          std::string_view key, std::string_view value, PutMode mode) {
  if (mode == PutMode::kUpdate) return Validate(nh) ? Outcome(Status::NotFound()) : Restart();
  if (pm::Load(n->count) < art::Capacity(n->type)) {
    if (!Upgrade(nh)) return Restart();
    InsertChild(n, b, Leaf::Make(key, value));
    Unlock(nh.word);
    return Status::OK();
  }
  if (!Upgrade(h)) return Restart();
  if (!Upgrade(nh)) {
    Unlock(h.word, false);
    return Restart();
  }
  const NodeType bigger = static_cast<NodeType>(static_cast<int>(n->type) + 1);
  Node* g = Rebuilt(n, bigger, -1, b, Leaf::Make(key, value));
  pm::StoreRelease(*slot, reinterpret_cast<Ref>(g));
  VersionLock::MarkObsolete(nh.word, kGen);
  Unlock(h.word);
  Retire(reinterpret_cast<Ref>(n));
  return Status::OK();
}

// A new node of type t (unpublished: plain stores) with n's prefix, end leaf and children,
// without the child of byte `skip` (or the end leaf: kEndSlot; -1: none) and with
// add -> add_child (-1: none). The caller holds n's lock.
Node* Art::Rebuilt(const Node* n, NodeType t, int skip, int add, Ref add_child) {
  Node* g = art::NewNode(t);
  std::memcpy(g->prefix, n->prefix, sizeof(n->prefix));
  g->prefix_len = n->prefix_len;
  g->end = skip == kEndSlot ? 0 : n->end;
  bool added = add < 0;
  auto put = [&](uint8_t b, Ref c) {
    if (!added && add < b) {
      InsertChild(g, static_cast<uint8_t>(add), add_child);
      added = true;
    }
    if (b != skip) InsertChild(g, b, c);
    return true;
  };
  art::ForEachChild(n, -1, put);
  if (!added) InsertChild(g, static_cast<uint8_t>(add), add_child);
  return g;
}

// Adds b -> child to n (absent, room left; n is new or locked). Every store a reader may see
// is atomic; the count goes last. Node4/16 shift right of the new key; a reader that reads
// mid-shift fails its version check.
void Art::InsertChild(Node* n, uint8_t b, Ref child) {
  const unsigned count = n->count;
  switch (n->type) {
    case NodeType::k4:
    case NodeType::k16: {
      uint8_t keys[16];
      Ref* slots;
      if (n->type == NodeType::k4) {
        std::memcpy(keys, &static_cast<Node4*>(n)->key_word, 4);
        slots = static_cast<Node4*>(n)->child;
      } else {
        std::memcpy(keys, static_cast<Node16*>(n)->key_words, 16);
        slots = static_cast<Node16*>(n)->child;
      }
      unsigned i = 0;
      while (i < count && keys[i] < b) ++i;
      for (unsigned j = count; j > i; --j) {
        keys[j] = keys[j - 1];
        pm::Store(slots[j], slots[j - 1]);
      }
      keys[i] = b;
      pm::StoreRelease(slots[i], child);
      StoreKeyBytes(n, keys);
      break;
    }
    case NodeType::k48: {
      auto* m = static_cast<Node48*>(n);
      // Slots fill in order and a remove leaves a hole: the slot at `count` is free unless
      // one was, so the search is for nodes that lost a child.
      unsigned p = count;
      if (m->child[p] != 0) {
        p = 0;
        while (m->child[p] != 0) ++p;
      }
      pm::StoreRelease(m->child[p], child);
      pm::Store(m->index[b], static_cast<uint8_t>(p + 1));
      break;
    }
    case NodeType::k256:
      pm::StoreRelease(static_cast<Node256*>(n)->child[b], child);
      break;
  }
  pm::Store(n->count, static_cast<uint16_t>(count + 1));
}

// Removes b's child from locked n in place (atomic stores, count last).
void Art::RemoveChild(Node* n, uint8_t b) {
  const unsigned count = n->count;
  switch (n->type) {
    case NodeType::k4:
    case NodeType::k16: {
      uint8_t keys[16];
      Ref* slots;
      if (n->type == NodeType::k4) {
        std::memcpy(keys, &static_cast<Node4*>(n)->key_word, 4);
        slots = static_cast<Node4*>(n)->child;
      } else {
        std::memcpy(keys, static_cast<Node16*>(n)->key_words, 16);
        slots = static_cast<Node16*>(n)->child;
      }
      unsigned i = 0;
      while (keys[i] != b) ++i;
      for (unsigned j = i; j + 1 < count; ++j) {
        keys[j] = keys[j + 1];
        pm::Store(slots[j], slots[j + 1]);
      }
      keys[count - 1] = 0;
      pm::Store(slots[count - 1], Ref{0});
      StoreKeyBytes(n, keys);
      break;
    }
    case NodeType::k48: {
      auto* m = static_cast<Node48*>(n);
      pm::Store(m->child[m->index[b] - 1], Ref{0});
      pm::Store(m->index[b], uint8_t{0});
      break;
    }
    case NodeType::k256:
      pm::Store(static_cast<Node256*>(n)->child[b], Ref{0});
      break;
  }
  pm::Store(n->count, static_cast<uint16_t>(count - 1));
}

}  // namespace pmindex::radix
