// ROART: attach, lookup and the write paths (insert, update, upsert, remove, compaction,
// leaf-array split, node growth, prefix split, unlinking). The crash argument is in roart.h;
// each persistent step below says which crash it prevents.
#include "radix/roart/roart.h"

#include <algorithm>
#include <cstring>

#include "pm/mutant.h"
#include "pm/pool_format.h"
#include "pm/version_lock.h"
#include "radix/common/key.h"

namespace pmindex::roart {

using radix::PmLeaf;
using pm::VersionLock;

Roart::Roart(std::unique_ptr<Pool> pool)
    : pool_(std::move(pool)),
      base_(pool_->base()),
      alloc_(&pool_->allocator()),
      gen_(static_cast<uint32_t>(pool_->generation())) {}

Roart::~Roart() { close().IgnoreError(); }

Result<std::unique_ptr<Index>> Roart::Attach(std::unique_ptr<Pool> pool, bool fresh) {
  std::unique_ptr<Roart> tree(new Roart(std::move(pool)));
  Pool* p = tree->pool_.get();
  if (const uint64_t r = p->root(); r != 0) {
    // A damaged root word is refused before recovery or teardown follows it.
    if (r % 64 != 0 || r < pm::kHeaderSize || !p->contains(p->base() + r, sizeof(Node256)) ||
        p->at<NodeHeader>(r)->type != kTagNode256) {
      return Status::Corruption(p->path() + ": roart root offset " + std::to_string(r) +
                                " is not a root node");
    }
    tree->root_.store(p->at<NodeHeader>(r));
  } else if (fresh) {
    Result<NodeHeader*> root = tree->EnsureRoot();
    if (!root.ok()) return root.status().WithContext(p->path());
  } else if (p->allocator().carved_chunks() > 1) {
    return Status::Corruption(p->path() + ": roart has no root node but " +
                              std::to_string(p->allocator().carved_chunks()) +
                              " chunks carved: its root is lost");
  }
  // Otherwise (creation interrupted before the root was published) the first write makes it.
  return std::unique_ptr<Index>(std::move(tree));
}

Result<NodeHeader*> Roart::EnsureRoot() {
  std::lock_guard<std::mutex> lock(root_mu_);
  if (NodeHeader* r = root()) return r;
  Result<uint64_t> off = alloc_->allocate(sizeof(Node256), /*zero=*/true);
  if (!off.ok()) return off.status();
  auto* n = pool_->at<NodeHeader>(*off);
  n->type = static_cast<uint8_t>(kTagNode256);  // depth 0, no prefix, no children
  pc().persist(n, sizeof(Node256));              // before set_root publishes it
  pool_->set_root(*off);
  root_.store(n, std::memory_order_release);
  return n;
}

Result<uint64_t> Roart::NewLeaf(std::string_view key, std::string_view value) {
  const size_t size = PmLeaf::SizeFor(key.size(), value.size());
  Result<uint64_t> off = alloc_->allocate(size);
  if (!off.ok()) return off.status();
  PmLeaf* leaf = PmLeaf::Init(base_ + *off, key, value);
  // Persisted before any entry names it: a crash never leaves an entry to a torn leaf.
  if (!pm::mutant("roart.skip_leaf_persist")) pc().persist(leaf, size);
  return *off;
}

int Roart::FindInArray(const LeafArray* la, std::string_view key, uint16_t fp,
                       uint64_t* entry) const {
  for (unsigned i = 0; i < la->capacity; ++i) {
    const uint64_t e = Load(&la->e[i]);
    if (e != 0 && LeafEntryFp(e) == fp && LeafAt(LeafEntryOffset(e))->KeyEquals(key)) {
      if (entry != nullptr) *entry = e;
      return static_cast<int>(i);
    }
  }
  return -1;
}

// ---- lookup ----

Status Roart::lookup(std::string_view key, std::string* value) {
  if (!radix::KeyInRange(key)) return Status::InvalidArgument("roart: key out of range");
  pm::Epoch::Guard guard(alloc_->epoch());
  const NodeHeader* n = root();
  if (n == nullptr) return Status::NotFound();
  // Prefixes are not compared on the way down (the leaf's whole key is): only positions.
  for (;;) {
    const uint32_t pos = PosOf(n);
    uint64_t child;
    if (key.size() <= pos) {
      if (key.size() < pos) return Status::NotFound();
      child = EntryChild(Load(&n->end));
    } else {
      child = FindChild(n, static_cast<uint8_t>(key[pos]));
    }
    if (child == 0) return Status::NotFound();
    const uint64_t tag = TagOf(child);
    if (tag == kTagLeaf) {
      const PmLeaf* leaf = at<PmLeaf>(child);
      if (!leaf->KeyEquals(key)) return Status::NotFound();
      if (value != nullptr) leaf->LoadValue(value);
      return Status::OK();
    }
    if (tag == kTagLeafArray) {
      const auto* la = at<LeafArray>(child);
      uint64_t e = 0;
      if (FindInArray(la, key, radix::Fingerprint16(key), &e) < 0) return Status::NotFound();
      if (value != nullptr) LeafAt(LeafEntryOffset(e))->LoadValue(value);  // the matched leaf
      return Status::OK();
    }
    n = at<NodeHeader>(child);
  }
}

// ---- writes ----

Status Roart::insert(std::string_view key, std::string_view value) {
  return Write(key, value, Op::kInsert);
}
Status Roart::update(std::string_view key, std::string_view value) {
  return Write(key, value, Op::kUpdate);
}
Status Roart::upsert(std::string_view key, std::string_view value) {
  return Write(key, value, Op::kUpsert);
}
Status Roart::remove(std::string_view key) { return Write(key, {}, Op::kRemove); }

Status Roart::Write(std::string_view key, std::string_view value, Op op) {
  Status s = radix::CheckKeyValue(key, value);
  if (!s.ok()) return s;
  if (root() == nullptr) {
    Result<NodeHeader*> r = EnsureRoot();
    if (!r.ok()) return r.status();
  }
  for (bool retried = false;; retried = true) {
    {
      pm::Epoch::Guard guard(alloc_->epoch());
      for (int attempt = 0;; ++attempt) {
        if (attempt > 0) VersionLock::Backoff(attempt);
        Attempt a = WriteOnce(key, value, op);
        if (!a.restart) {
          s = std::move(a.status);
          break;
        }
      }
    }
    // Out of space: what the epoch still parks may make room (outside the guard).
    if (!s.IsOutOfSpace() || retried || !alloc_->reclaim_now()) return s;
  }
}

Roart::Attempt Roart::WriteOnce(std::string_view key, std::string_view value, Op op) {
  const bool must_exist = op == Op::kUpdate || op == Op::kRemove;
  Path p{nullptr, 0, 0, root(), 0};
  for (;;) {
    const std::string_view prefix = PrefixAt(p.node, p.depth);
    const std::string_view rest = key.substr(p.depth);
    const size_t match = std::mismatch(prefix.begin(), prefix.end(), rest.begin(), rest.end()).first -
                         prefix.begin();
    if (match < prefix.size()) {  // the key leaves the node's prefix
      if (must_exist) return Done(Status::NotFound());
      return SplitPrefix(p, match, key, value);
    }
    const uint32_t pos = p.depth + static_cast<uint32_t>(prefix.size());
    if (key.size() == pos) return WriteEnd(p, key, value, op);
    const uint8_t b = static_cast<uint8_t>(key[pos]);
    const uint64_t child = FindChild(p.node, b);
    if (child == 0) {
      if (must_exist) return Done(Status::NotFound());
      return InsertIntoEmpty(p, b, key, value);
    }
    const uint64_t tag = TagOf(child);
    if (tag == kTagLeaf) return WriteAtLeaf(p, b, child, key, value, op);
    if (tag == kTagLeafArray) return WriteToArray(p, b, child, key, value, op);
    p = Path{p.node, b, child, at<NodeHeader>(child), pos + 1};
  }
}

template <typename MakeEntry>
Status Roart::UpdateLeaf(uint64_t* slot, PmLeaf* leaf, std::string_view value,
                         MakeEntry&& make_entry) {
  if (value.size() == leaf->value_len && value.size() <= 8) {
    // One failure-atomic 8-byte store, persisted: a crash leaves the old or the new value.
    std::atomic_ref<uint64_t>(leaf->value_word)
        .store(PmLeaf::PackSmallValue(value), std::memory_order_relaxed);
    pc().persist(&leaf->value_word, 8);
    return Status::OK();
  }
  Result<uint64_t> off = NewLeaf(leaf->key(), value);
  if (!off.ok()) return off.status();
  Store(slot, make_entry(*off));
  pc().persist(slot, 8);  // commit: the new leaf was persisted first
  alloc_->retire(reinterpret_cast<char*>(leaf) - base_);
  return Status::OK();
}

Roart::Attempt Roart::WriteEnd(const Path& p, std::string_view key, std::string_view value,
                               Op op) {
  NodeHeader* n = p.node;
  if (!Lock(&n->lock)) return Restart();
  const uint64_t end = Load(&n->end);
  Status s;
  if (end != 0) {  // the end leaf's key is this key: the path spells it
    if (op == Op::kInsert) {
      s = Status::AlreadyExists();
    } else if (op == Op::kRemove) {
      if (n != root() && LiveCount(n) == 0) {  // the node would be left empty
        Unlock(&n->lock);
        return RemoveUnlinking(key);
      }
      Store(&n->end, 0);
      pc().persist(&n->end, 8);  // commit
      Retire(end);
    } else {
      s = UpdateLeaf(&n->end, at<PmLeaf>(end), value,
                     [](uint64_t off) { return radix::MakeChild(off, kTagLeaf); });
    }
  } else if (op == Op::kUpdate || op == Op::kRemove) {
    s = Status::NotFound();
  } else {
    Result<uint64_t> off = NewLeaf(key, value);
    if (off.ok()) {
      Store(&n->end, radix::MakeChild(*off, kTagLeaf));
      pc().persist(&n->end, 8);  // commit: the leaf was persisted first
    }
    s = off.status();
  }
  Unlock(&n->lock);
  return Done(std::move(s));
}

Roart::Attempt Roart::InsertIntoEmpty(const Path& p, uint8_t b, std::string_view key,
                                      std::string_view value) {
  Result<uint64_t> off = NewLeaf(key, value);
  if (!off.ok()) return Done(off.status());
  const uint64_t leaf_child = radix::MakeChild(*off, kTagLeaf);
  NodeHeader* n = p.node;
  if (!Lock(&n->lock)) {
    alloc_->free(*off);
    return Restart();
  }
  if (FindChild(n, b) != 0) {  // another writer filled the slot
    Unlock(&n->lock);
    alloc_->free(*off);
    return Restart();
  }
  const bool added = AddChildInPlace(pc(), n, b, leaf_child);
  Unlock(&n->lock);
  if (added) return Done(Status::OK());
  Attempt a = Grow(p, b, leaf_child);
  if (a.restart || !a.status.ok()) alloc_->free(*off);
  return a;
}

// The node is full: a copy of the next size with the new child, persisted, then published by
// one store in the parent (the commit); the old node is frozen (obsolete) and retired.
Roart::Attempt Roart::Grow(const Path& p, uint8_t b, uint64_t leaf_child) {
  NodeHeader* parent = p.parent;  // never the root's: a Node256 is never full
  if (!Lock(&parent->lock)) return Restart();
  uint64_t* slot = SlotOf(parent, p.parent_byte);
  if (slot == nullptr || EntryChild(Load(slot)) != p.node_child) {
    Unlock(&parent->lock);
    return Restart();
  }
  NodeHeader* n = p.node;
  if (!Lock(&n->lock)) {
    Unlock(&parent->lock);
    return Restart();
  }
  std::vector<std::pair<uint8_t, uint64_t>> children;
  ForEachChild(n, [&](uint8_t byte, uint64_t c) { children.emplace_back(byte, c); });
  if (FindChild(n, b) != 0 || children.size() < (n->type == kTagNode4    ? 4u
                                                 : n->type == kTagNode16 ? 16u
                                                                         : 48u)) {
    Unlock(&n->lock);  // it changed meanwhile
    Unlock(&parent->lock);
    return Restart();
  }
  children.insert(std::upper_bound(children.begin(), children.end(), std::make_pair(b, uint64_t{0})),
                  {b, leaf_child});
  Result<uint64_t> grown = BuildNode(pc(), *alloc_, base_, p.depth, PrefixAt(n, p.depth),
                                     Load(&n->end), children);
  if (!grown.ok()) {
    Unlock(&n->lock);
    Unlock(&parent->lock);
    return Done(grown.status());
  }
  // The copy is durable before the store that publishes it.
  if (!pm::mutant("roart.skip_grow_persist")) pc().fence();
  ReplaceEntry(pc(), slot, p.parent_byte, *grown);  // commit
  Obsolete(&n->lock);
  Unlock(&parent->lock);
  Retire(p.node_child);
  return Done(Status::OK());
}

Roart::Attempt Roart::WriteAtLeaf(const Path& p, uint8_t b, uint64_t leaf_child,
                                  std::string_view key, std::string_view value, Op op) {
  PmLeaf* leaf = at<PmLeaf>(leaf_child);
  const bool same = leaf->KeyEquals(key);
  if (!same && (op == Op::kUpdate || op == Op::kRemove)) return Done(Status::NotFound());
  if (same && op == Op::kInsert) return Done(Status::AlreadyExists());
  // Compaction: the old leaf and the new one into a leaf array, built before the lock.
  uint64_t array = 0, new_leaf = 0;
  if (!same) {
    Result<uint64_t> off = NewLeaf(key, value);
    if (!off.ok()) return Done(off.status());
    new_leaf = *off;
    Result<uint64_t> la = BuildLeafArray(
        pc(), *alloc_, base_, PosOf(p.node) + 1,
        {LeafEntryOf(radix::Fingerprint16(leaf->key()), OffsetOf(leaf_child)),
         LeafEntryOf(radix::Fingerprint16(key), new_leaf)});
    if (!la.ok()) {
      alloc_->free(new_leaf);
      return Done(la.status());
    }
    if (!pm::mutant("roart.skip_compact_persist")) pc().fence();  // the array before its link
    array = *la;
  }
  auto discard = [&] {
    if (array == 0) return;
    alloc_->free(new_leaf);
    alloc_->free(OffsetOf(array));
  };
  NodeHeader* n = p.node;
  if (!Lock(&n->lock)) {
    discard();
    return Restart();
  }
  uint64_t* slot = SlotOf(n, b);
  if (slot == nullptr || EntryChild(Load(slot)) != leaf_child) {
    Unlock(&n->lock);
    discard();
    return Restart();
  }
  if (same && op == Op::kRemove && n != root() && LiveCount(n) + (Load(&n->end) != 0) == 1) {
    Unlock(&n->lock);  // the node would be left empty: it is unlinked instead
    return RemoveUnlinking(key);
  }
  Status s;
  if (array != 0) {
    ReplaceEntry(pc(), slot, b, array);  // commit: the array and both leaves are durable
  } else if (op == Op::kRemove) {
    RemoveChild(pc(), n, b);  // commit
    Retire(leaf_child);
  } else {
    s = UpdateLeaf(slot, leaf, value, [b](uint64_t off) {
      return EntryOf(b, radix::MakeChild(off, kTagLeaf));
    });
  }
  Unlock(&n->lock);
  return Done(std::move(s));
}

Roart::Attempt Roart::WriteToArray(const Path& p, uint8_t b, uint64_t array_child,
                                   std::string_view key, std::string_view value, Op op) {
  auto* la = at<LeafArray>(array_child);
  const uint16_t fp = radix::Fingerprint16(key);
  if (!Lock(&la->lock)) return Restart();
  const int i = FindInArray(la, key, fp);
  Status s;
  if (i >= 0) {
    const uint64_t e = Load(&la->e[i]);
    if (op == Op::kInsert) {
      s = Status::AlreadyExists();
    } else if (op == Op::kRemove) {
      if (const unsigned count = la->count; count <= 2) {
        Unlock(&la->lock);  // the array goes: its last leaf replaces it, or it is unlinked
        return count == 2 ? Demote(p, b, array_child, key) : RemoveUnlinking(key);
      }
      Store(&la->e[i], 0);
      pc().persist(&la->e[i], 8);  // commit
      la->count--;
      alloc_->retire(LeafEntryOffset(e));
    } else {
      s = UpdateLeaf(&la->e[i], LeafAt(LeafEntryOffset(e)), value,
                     [fp](uint64_t off) { return LeafEntryOf(fp, off); });
    }
  } else if (op == Op::kUpdate || op == Op::kRemove) {
    s = Status::NotFound();
  } else if (la->count >= la->capacity) {
    Unlock(&la->lock);
    return SplitArray(p, b, array_child, key, value);
  } else {
    Result<uint64_t> off = NewLeaf(key, value);
    s = off.status();
    for (unsigned j = 0; off.ok() && j < la->capacity; ++j) {
      if (Load(&la->e[j]) != 0) continue;
      Store(&la->e[j], LeafEntryOf(fp, *off));
      if (!pm::mutant("roart.skip_entry_persist")) pc().persist(&la->e[j], 8);  // commit
      la->count++;
      break;
    }
  }
  Unlock(&la->lock);
  return Done(std::move(s));
}

// Locks node n and the leaf array its slot for byte b names, if the slot still names it;
// false (nothing held) otherwise, and the caller restarts.
bool Roart::LockSlotAndArray(NodeHeader* n, uint8_t b, uint64_t array_child, uint64_t** slot,
                             LeafArray** la) {
  if (!Lock(&n->lock)) return false;
  *slot = SlotOf(n, b);
  *la = at<LeafArray>(array_child);
  if (*slot == nullptr || EntryChild(Load(*slot)) != array_child || !Lock(&(*la)->lock)) {
    Unlock(&n->lock);
    return false;
  }
  return true;
}

// The inverse of compaction: a leaf array of two keys loses one, and the other leaf takes its
// place in the parent with one store (the commit: the key is gone and the array unlinked).
// So no leaf array holds fewer than two keys, and a remove gives back the array's block.
Roart::Attempt Roart::Demote(const Path& p, uint8_t b, uint64_t array_child, std::string_view key) {
  NodeHeader* n = p.node;
  uint64_t* slot;
  LeafArray* la;
  if (!LockSlotAndArray(n, b, array_child, &slot, &la)) return Restart();
  const int i = FindInArray(la, key, radix::Fingerprint16(key));
  if (i < 0 || la->count != 2) {  // changed meanwhile
    Unlock(&la->lock);
    Unlock(&n->lock);
    return Restart();
  }
  uint64_t other = 0;
  for (unsigned j = 0; j < la->capacity; ++j)
    if (j != static_cast<unsigned>(i) && Load(&la->e[j]) != 0) other = Load(&la->e[j]);
  const uint64_t removed = Load(&la->e[i]);
  ReplaceEntry(pc(), slot, b, radix::MakeChild(LeafEntryOffset(other), kTagLeaf));  // commit
  Obsolete(&la->lock);
  Unlock(&n->lock);
  Retire(array_child);
  alloc_->retire(LeafEntryOffset(removed));
  return Done(Status::OK());
}

// A full leaf array (and the new key) becomes a copy of twice its capacity (growth), or, at
// 64, a node at the array's depth over leaves and leaf arrays (split); either is built and
// persisted off to the side and published by one store in the parent. The leaves are not
// copied: the new arrays name the same leaf blocks.
Roart::Attempt Roart::SplitArray(const Path& p, uint8_t b, uint64_t array_child,
                                 std::string_view key, std::string_view value) {
  NodeHeader* n = p.node;
  uint64_t* slot;
  LeafArray* la;
  if (!LockSlotAndArray(n, b, array_child, &slot, &la)) return Restart();
  const uint16_t fp = radix::Fingerprint16(key);
  if (la->count < la->capacity || FindInArray(la, key, fp) >= 0) {  // changed meanwhile
    Unlock(&la->lock);
    Unlock(&n->lock);
    return Restart();
  }
  const bool grow = la->capacity < kLeafArraySize;
  std::vector<uint64_t> made;
  Result<uint64_t> off = NewLeaf(key, value);
  Result<uint64_t> node = off;  // its error, or replaced below
  if (off.ok()) {
    made.push_back(*off);
    std::vector<uint64_t> entries(la->e, la->e + la->capacity);
    entries.push_back(LeafEntryOf(fp, *off));
    if (grow) {  // a copy of twice the capacity
      node = BuildLeafArray(pc(), *alloc_, base_, la->depth, entries, 2u * la->capacity);
      if (node.ok()) made.push_back(OffsetOf(*node));
    } else {
      node = BuildSplit(entries, la->depth, &made);
    }
  }
  if (!node.ok()) {
    for (uint64_t m : made) alloc_->free(m);
    Unlock(&la->lock);
    Unlock(&n->lock);
    return Done(node.status());
  }
  // Everything the split or growth built is durable before the store that publishes it.
  if (!pm::mutant(grow ? "roart.skip_array_grow_persist" : "roart.skip_split_persist")) pc().fence();
  ReplaceEntry(pc(), slot, b, *node);  // commit
  Obsolete(&la->lock);
  Unlock(&n->lock);
  Retire(array_child);
  return Done(Status::OK());
}

Result<uint64_t> Roart::BuildSplit(std::vector<uint64_t>& entries, uint32_t depth,
                                   std::vector<uint64_t>* made) {
  auto key_of = [this](uint64_t e) { return LeafAt(LeafEntryOffset(e))->key(); };
  std::sort(entries.begin(), entries.end(),
            [&](uint64_t x, uint64_t y) { return key_of(x) < key_of(y); });
  // The keys' common part from depth on: the first and last key in order bound it.
  const std::string_view first = key_of(entries.front()), last = key_of(entries.back());
  size_t pos = depth;
  while (pos < first.size() && pos < last.size() && first[pos] == last[pos]) ++pos;
  uint64_t end = 0;
  size_t i = 0;
  if (first.size() == pos) end = radix::MakeChild(LeafEntryOffset(entries[i++]), kTagLeaf);
  std::vector<std::pair<uint8_t, uint64_t>> children;
  while (i < entries.size()) {
    const uint8_t byte = static_cast<uint8_t>(key_of(entries[i])[pos]);
    size_t j = i + 1;
    while (j < entries.size() && static_cast<uint8_t>(key_of(entries[j])[pos]) == byte) ++j;
    uint64_t child = radix::MakeChild(LeafEntryOffset(entries[i]), kTagLeaf);
    if (j - i > 1) {
      std::vector<uint64_t> group(entries.begin() + i, entries.begin() + j);
      Result<uint64_t> la = BuildLeafArray(pc(), *alloc_, base_, static_cast<uint32_t>(pos + 1), group);
      if (!la.ok()) return la.status();
      made->push_back(OffsetOf(*la));
      child = *la;
    }
    children.emplace_back(byte, child);
    i = j;
  }
  Result<uint64_t> node = BuildNode(pc(), *alloc_, base_, depth,
                                    first.substr(depth, pos - depth), end, children);
  if (node.ok()) made->push_back(OffsetOf(*node));
  return node;
}

// Minimally ordered split: the new node (the shared part of the prefix, the old node and the
// new leaf below it) is persisted and published by one store in the parent: the commit.
// The old node's shorter prefix word is stored after it, unordered: until it is, the node's
// prefix word is stale (its depth smaller than where it is reached), which readers read
// around and recover() repairs, as its position, and so every key below it, is unchanged.
Roart::Attempt Roart::SplitPrefix(const Path& p, size_t match, std::string_view key,
                                  std::string_view value) {
  NodeHeader* parent = p.parent;  // not null: the root has no prefix
  if (!Lock(&parent->lock)) return Restart();
  uint64_t* slot = SlotOf(parent, p.parent_byte);
  NodeHeader* n = p.node;
  if (slot == nullptr || EntryChild(Load(slot)) != p.node_child || !Lock(&n->lock)) {
    Unlock(&parent->lock);
    return Restart();
  }
  const std::string_view prefix = PrefixAt(n, p.depth);
  const uint32_t split = p.depth + static_cast<uint32_t>(match);
  Result<uint64_t> off = NewLeaf(key, value);
  Result<uint64_t> node = off;  // its error, or replaced below
  if (off.ok()) {
    const uint64_t leaf = radix::MakeChild(*off, kTagLeaf);
    std::vector<std::pair<uint8_t, uint64_t>> children{{static_cast<uint8_t>(prefix[match]), p.node_child}};
    if (key.size() > split) {
      const uint8_t kb = static_cast<uint8_t>(key[split]);
      children.insert(kb < children[0].first ? children.begin() : children.end(), {kb, leaf});
    }
    node = BuildNode(pc(), *alloc_, base_, p.depth, prefix.substr(0, match),
                     key.size() == split ? leaf : 0, children);
    if (!node.ok()) alloc_->free(*off);
  }
  if (!node.ok()) {
    Unlock(&n->lock);
    Unlock(&parent->lock);
    return Done(node.status());
  }
  const uint64_t shorter = PrefixWord(split + 1, prefix.substr(match + 1));
  if (!pm::mutant("roart.skip_prefix_split_persist")) pc().fence();  // the node before its link
  ReplaceEntry(pc(), slot, p.parent_byte, *node);             // commit
  // The old node's prefix word, with no fence of its own: stale, it is read around (its
  // stored bytes and position do not change) and recover() rewrites it.
  Store(&n->prefix, shorter);
  pc().flush(&n->prefix, 8);
  Unlock(&n->lock);
  Unlock(&parent->lock);
  return Done(Status::OK());
}

// The path from the root is locked top-down (as every writer locks), so no entry on it
// changes; the highest entry whose subtree holds nothing but the key is cleared with one
// persisted store (the commit), and what it unlinked is frozen (obsolete) and retired.
Roart::Attempt Roart::RemoveUnlinking(std::string_view key) {
  std::vector<Level> path;
  NodeHeader* n = root();
  for (uint32_t depth = 0;;) {
    const std::string_view prefix = PrefixAt(n, depth);
    if (key.substr(depth, prefix.size()) != prefix) return Done(Status::NotFound());
    const uint32_t pos = depth + static_cast<uint32_t>(prefix.size());
    Level l{n, key.size() == pos, 0, 0};
    if (l.end) {
      l.child = EntryChild(Load(&n->end));
    } else {
      l.byte = static_cast<uint8_t>(key[pos]);
      l.child = FindChild(n, l.byte);
    }
    if (l.child == 0) return Done(Status::NotFound());
    path.push_back(l);
    if (!IsNodeTag(TagOf(l.child))) break;
    n = at<NodeHeader>(l.child);
    depth = pos + 1;
  }
  size_t locked = 0;
  LeafArray* la = TagOf(path.back().child) == kTagLeafArray ? at<LeafArray>(path.back().child) : nullptr;
  auto release = [&](size_t upto) {
    for (size_t i = upto; i-- > 0;) Unlock(&path[i].node->lock);
  };
  for (; locked < path.size(); ++locked) {
    if (!Lock(&path[locked].node->lock)) {
      release(locked);
      return Restart();
    }
  }
  if (la != nullptr && !Lock(&la->lock)) {
    release(locked);
    return Restart();
  }
  auto release_all = [&] {
    if (la != nullptr) Unlock(&la->lock);
    release(locked);
  };
  for (const Level& l : path) {  // unchanged since the descent read it?
    const uint64_t now = l.end ? EntryChild(Load(&l.node->end)) : FindChild(l.node, l.byte);
    if (now != l.child) {
      release_all();
      return Restart();
    }
  }
  return Done(UnlinkLocked(key, path, la));
}

Status Roart::UnlinkLocked(std::string_view key, const std::vector<Level>& path, LeafArray* la) {
  auto release = [&](size_t upto) {
    for (size_t i = upto; i-- > 0;) Unlock(&path[i].node->lock);
  };
  uint64_t leaf_off;
  int idx = -1;
  if (la != nullptr) {
    idx = FindInArray(la, key, radix::Fingerprint16(key));
    leaf_off = idx < 0 ? 0 : LeafEntryOffset(Load(&la->e[idx]));
  } else {
    leaf_off = at<PmLeaf>(path.back().child)->KeyEquals(key) ? OffsetOf(path.back().child) : 0;
  }
  if (leaf_off == 0 || (la != nullptr && la->count > 1)) {  // gone, or no longer the last
    if (leaf_off != 0) {
      Store(&la->e[idx], 0);
      pc().persist(&la->e[idx], 8);  // commit
      la->count--;
      alloc_->retire(leaf_off);
    }
    if (la != nullptr) Unlock(&la->lock);
    release(path.size());
    return leaf_off == 0 ? Status::NotFound() : Status::OK();
  }
  // The highest level whose entry goes: above every node that holds nothing else.
  size_t top = path.size() - 1;
  while (top > 0 && LiveCount(path[top].node) + (Load(&path[top].node->end) != 0) == 1) --top;
  const Level& t = path[top];
  if (t.end) {
    Store(&t.node->end, 0);
    pc().persist(&t.node->end, 8);  // commit
  } else {
    RemoveChild(pc(), t.node, t.byte);  // commit
  }
  for (size_t i = top + 1; i < path.size(); ++i) {  // unlinked: frozen, then retired
    Obsolete(&path[i].node->lock);
    alloc_->retire(reinterpret_cast<char*>(path[i].node) - base_);
  }
  if (la != nullptr) {
    Obsolete(&la->lock);
    Retire(path.back().child);
  }
  alloc_->retire(leaf_off);
  release(top + 1);
  return Status::OK();
}

}  // namespace pmindex::roart
