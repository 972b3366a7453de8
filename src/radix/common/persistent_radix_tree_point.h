// PersistentRadixTree point operations: attach and close, lookup, insert/update/upsert,
// remove, lazy header repair (see persistent_radix_tree.h for the crash argument). Included
// only by the .cc file of a design, which instantiates the template for its Ops.
#ifndef PMINDEX_RADIX_COMMON_PERSISTENT_RADIX_TREE_POINT_H_
#define PMINDEX_RADIX_COMMON_PERSISTENT_RADIX_TREE_POINT_H_

#include <algorithm>
#include <mutex>
#include <shared_mutex>

#include "pm/alloc.h"
#include "pm/mutant.h"
#include "pm/persist.h"
#include "radix/common/persistent_radix_tree.h"

namespace pmindex::radix {

template <typename Ops>
PersistentRadixTree<Ops>::PersistentRadixTree(std::unique_ptr<Pool> pool)
    : pool_(std::move(pool)),
      root_offset_(static_cast<uint64_t>(reinterpret_cast<char*>(RootSlot(*pool_)) -
                                         pool_->base())) {
  traits_ = Registration().traits;
}

template <typename Ops>
Status PersistentRadixTree<Ops>::close() {
  std::unique_lock lock(mu_);
  if (!pool_) return Status::OK();
  Status s = pool_->Close();
  pool_.reset();
  return s;
}

template <typename Ops>
IndexRegistration PersistentRadixTree<Ops>::Registration() {
  IndexRegistration r;
  r.traits.name = Ops::kName;
  r.traits.kind = Ops::kKind;
  r.traits.persistent = true;
  r.traits.ordered = true;
  r.traits.byte_keys = true;
  r.traits.max_key_size = kMaxKeySize;
  r.traits.max_value_size = kMaxValueSize;
  r.traits.concurrency =
      "lock-free lookups (epoch guard) beside one writer; writers, scans and walks under a "
      "writer-preferring reader-writer lock (single-threaded design)";
  r.traits.durability = "every acknowledged operation (8-byte failure-atomic commits)";
  r.traits.description = Ops::kDescription;
  r.attach = [](std::unique_ptr<Pool> pool, bool fresh) -> Result<std::unique_ptr<Index>> {
    if (Status s = CheckRootWord(*pool, fresh, Ops::kName); !s.ok()) return s;
    return std::unique_ptr<Index>(new PersistentRadixTree(std::move(pool)));
  };
  r.params = Ops::kParams;
  r.mutants = Ops::Mutants();
  // The radix-tree bugs: a node header and child committed in two stores, a split that links
  // its new parent before persisting it.
  r.crash_scenarios = {"header-child-two-stores", "split-sibling-early"};
  return r;
}

template <typename Ops>
const PmLeaf* PersistentRadixTree<Ops>::AnyLeaf(uint64_t w) const {
  for (;;) {
    if (!ValidWord(w)) return nullptr;
    if (IsLeafChild(w)) return leaf(w);
    uint64_t next = LoadWord(&base(w)->end);  // atomic: lookups repairing a header come here
    if (next == 0) next = Ops::AnyChild(*pool_, w);
    if (next == 0) return nullptr;
    w = next;
  }
}

template <typename Ops>
PrefixHeader PersistentRadixTree<Ops>::RepairHeader(uint64_t w, uint32_t depth, uint64_t word) {
  RadixNodeBase* nb = base(w);
  const PrefixHeader h = PrefixHeader::Decode(word);
  // Deeper than the depth it was reached at: a lookup that came over a path a concurrent
  // split replaced (the split rewrote the header after its commit); the position is right.
  if (h.depth > depth) return h;
  const PmLeaf* l = AnyLeaf(w);
  if (l == nullptr || h.pos() < depth) return h;  // corrupt; verify() names it
  PrefixHeader fixed = h.template Repaired<Ops::kBits>(depth, l->key_ptr());
  // Lazy repair: the same value whoever writes it, so a lost race is harmless.
  std::atomic_ref<uint64_t>(nb->header).compare_exchange_strong(word, fixed.Encode());
  pc().persist(&nb->header, 8);
  repairs_.fetch_add(1, std::memory_order_relaxed);
  return fixed;
}

// Optimistic path compression, as ART's lookup: only each node's discriminating position
// is read from its header; the skipped prefix units are checked once, by comparing the
// whole key at the leaf (a key that diverges inside a prefix reaches some other leaf or an
// empty slot). The position survives an interrupted split unchanged, so a stale header would
// route correctly; it is still repaired here (one compare on the common path) so that the
// first traversal after a crash makes it durable, as every traversal does.
template <typename Ops>
Status PersistentRadixTree<Ops>::lookup(std::string_view key, std::string* value) {
  if (!KeyInRange(key)) [[unlikely]]
    return Status::InvalidArgument("key length out of range");
  // No lock: the epoch guard keeps every block this lookup can reach from being reused
  // (writers retire what they unlink), and every word read below is an atomic load of a
  // word writers change with one atomic store (see the thread-safety note of the tree).
  auto guard = pool_->allocator().epoch_guard();
  // The mapping's base, read once: the acquire loads below would otherwise make the
  // compiler reload pool_ and its base for every node.
  const char* const mem = pool_->base();
  const uint64_t root = LoadWord(reinterpret_cast<const uint64_t*>(mem + root_offset_));
  if (key.size() == 8) [[likely]] {
    const WordKey<Ops::kBits> k = WordKey<Ops::kBits>::Of(key);
    uint32_t depth = 0;
    const uint64_t w = Descend(mem, root, k.be, &depth);
    if (w == 0) return Status::NotFound();
    if (IsLeafWord(w)) return LeafResult(reinterpret_cast<const PmLeaf*>(LeafAt(mem, w)), k, value);
    // A prefix, a stale header or a key's end. The key is made again here so that the fast
    // path keeps it in registers (FindFrom takes it by reference).
    return FindFrom(mem, WordKey<Ops::kBits>::Of(key), w, depth, value);
  }
  return FindFrom(mem, ByteKey<Ops::kBits>{key}, root, 0, value);
}

template <typename Ops>
template <typename Key>
Status PersistentRadixTree<Ops>::FindFrom(const char* mem, const Key& key, uint64_t w,
                                                 uint32_t depth, std::string* value) {
  const uint32_t units = key.units();
  while (w != 0) {
    if (IsLeafWord(w)) return LeafResult(reinterpret_cast<const PmLeaf*>(LeafAt(mem, w)), key, value);
    const auto* nb = reinterpret_cast<const RadixNodeBase*>(NodeAt(mem, w));
    // Common case: the node sits at `depth` (its header is not stale) and has no prefix to
    // skip, so the position it discriminates at is `depth`. That is a compare and a branch
    // (predicted) instead of a sum of header fields, so the child word's address does not
    // depend on the header's load: the CPU fetches both lines of the node at once instead
    // of one after the other (one cache miss per level instead of two).
    const uint64_t hw = LoadWord(&nb->header);
    if (PrefixHeader::DepthAndLenOf(hw) != depth) [[unlikely]]
      depth = PrefixHeader::PosOf(PrefixHeader::DepthOf(hw) == depth
                                      ? hw
                                      : RepairHeaderWord(w, depth, hw));
    if (depth >= units) {
      if (depth > units) return Status::NotFound();
      w = LoadWord(&nb->end);
    } else {
      w = Ops::LoadChild(mem, w, key.unit(depth));
      ++depth;
    }
  }
  return Status::NotFound();
}

template <typename Ops>
Status PersistentRadixTree<Ops>::Put(std::string_view key, std::string_view value,
                                     PutMode mode) {
  if (Status s = CheckKeyValue(key, value); !s.ok()) return s;
  if (key.size() == 8) [[likely]]
    WarmPath(key);
  for (;;) {
    Status s;
    {
      std::unique_lock lock(mu_);
      s = PutLocked(key, value, mode);
    }
    // Blocks retired earlier may still wait for their grace period: free what the open
    // guards allow and try again (an OutOfSpace put changed nothing).
    if (!s.IsOutOfSpace() || !pool_->allocator().reclaim_now()) return s;
  }
}

template <typename Ops>
Status PersistentRadixTree<Ops>::PutLocked(std::string_view key, std::string_view value,
                                           PutMode mode) {
  const uint8_t* k = Bytes(key);
  const size_t units = Span::units(key.size());
  uint64_t* slot = RootSlot(*pool_);
  uint32_t depth = 0;
  for (;;) {
    const uint64_t w = *slot;
    if (w == 0) {
      if (mode == PutMode::kUpdate) return Status::NotFound();
      Status s = LinkNewLeaf(slot, key, value);
      if (s.ok() && slot == RootSlot(*pool_)) ClearEmptyMark(*pool_);
      return s;
    }
    if (IsLeafChild(w)) {
      PmLeaf* l = leaf(w);
      if (l->KeyEquals(key)) {
        if (mode == PutMode::kInsert) return Status::AlreadyExists();
        return ReplaceLeafValue(*pool_, slot, l, value, Ops::kSkipLeafPersist);
      }
      if (mode == PutMode::kUpdate) return Status::NotFound();
      return ExpandLeaf(slot, depth, key, value);
    }
    // Common case: the node sits at `depth` (its header is not stale) and has no prefix, so
    // it discriminates at `depth`: no header to decode.
    if (const uint64_t hw = LoadWord(&base(w)->header);
        PrefixHeader::DepthAndLenOf(hw) == depth && depth < units) [[likely]] {
      const uint8_t unit = Span::unit(k, depth);
      uint64_t* child = Ops::FindChild(*pool_, w, unit);
      if constexpr (!Ops::kFixedFanout) {
        if (child == nullptr) {
          if (mode == PutMode::kUpdate) return Status::NotFound();
          return AddChild(slot, PrefixHeader::Decode(hw), unit, key, value);
        }
      }
      slot = child;
      ++depth;
      continue;
    }
    const PrefixHeader h = Header(w, depth);
    if (h.prefix_len != 0) {
      // Units of the prefix the key matches (stops where the key ends).
      const uint32_t limit = std::min<uint32_t>(h.prefix_len, units - depth);
      uint32_t m = 0;
      const uint32_t stored = std::min<uint32_t>(h.stored(), limit);
      while (m < stored && h.prefix[m] == Span::unit(k, depth + m)) ++m;
      if (m == stored && m < limit) {
        m = static_cast<uint32_t>(
            CommonUnits<Ops::kBits>(k, AnyLeaf(w)->key_ptr(), depth + m, depth + limit) -
            depth);
      }
      if (m < h.prefix_len) {
        if (mode == PutMode::kUpdate) return Status::NotFound();
        return SplitPrefix(slot, h, m, key, value);
      }
    }
    depth = h.pos();
    if (depth == units) {
      slot = &base(w)->end;
      continue;
    }
    const uint8_t unit = Span::unit(k, depth);
    uint64_t* child = Ops::FindChild(*pool_, w, unit);
    if constexpr (!Ops::kFixedFanout) {
      if (child == nullptr) {
        if (mode == PutMode::kUpdate) return Status::NotFound();
        return AddChild(slot, h, unit, key, value);
      }
    }
    slot = child;
    ++depth;
  }
}

// Empty slot: persist the leaf, then commit the child word. 2 fences.
template <typename Ops>
Status PersistentRadixTree<Ops>::LinkNewLeaf(uint64_t* slot, std::string_view key,
                                             std::string_view value) {
  uint64_t word;
  Result<PmLeaf*> l = NewLeaf(*pool_, key, value, &word);
  if (!l.ok()) return l.status();
  if (!pm::mutant(Ops::kSkipLeafPersist)) pc().flush(*l, (*l)->size());
  pc().fence();
  CommitWord(pc(), slot, word);
  return Status::OK();
}

// Key unit absent from the node *slot points at: Ops adds it in place or grows the node.
template <typename Ops>
Status PersistentRadixTree<Ops>::AddChild(uint64_t* slot, const PrefixHeader& h, uint8_t unit,
                                          std::string_view key, std::string_view value) {
  uint64_t leaf_word;
  Result<PmLeaf*> l = NewLeaf(*pool_, key, value, &leaf_word);
  if (!l.ok()) return l.status();
  return Ops::AddChild(*pool_, slot, h, unit, leaf_word, *l);
}

// A leaf slot must hold two keys: a new smallest node at `depth` whose prefix is their
// common run takes both leaves; it is persisted with the new leaf, then swapped in. 2 fences.
template <typename Ops>
Status PersistentRadixTree<Ops>::ExpandLeaf(uint64_t* slot, uint32_t depth, std::string_view key,
                                            std::string_view value) {
  const uint64_t old_word = *slot;
  const PmLeaf* old = leaf(old_word);
  const uint8_t* k = Bytes(key);
  const size_t units = Span::units(key.size());
  const size_t old_units = Span::units(old->key_len);
  const uint32_t pos = static_cast<uint32_t>(
      CommonUnits<Ops::kBits>(k, old->key_ptr(), depth, std::min(units, old_units)));
  constexpr size_t kSize = Ops::NodeSize(Ops::kSmallTag);
  uint64_t nw, leaf_word;
  Result<PmLeaf*> l = NewNodeAndLeaf(key, value, &nw, &leaf_word);
  if (!l.ok()) return l.status();
  base(nw)->header = PrefixHeader::Make<Ops::kBits>(depth, pos - depth, k).Encode();
  Place(nw, pos, k, units, leaf_word);
  Place(nw, pos, old->key_ptr(), old_units, old_word);
  if (!pm::mutant(Ops::kSkipLeafPersist)) pc().flush(*l, (*l)->size());
  pc().flush(base(nw), kSize);
  pc().fence();
  CommitWord(pc(), slot, nw);
  return Status::OK();
}

template <typename Ops>
Result<PmLeaf*> PersistentRadixTree<Ops>::NewNodeAndLeaf(std::string_view key,
                                                         std::string_view value, uint64_t* node,
                                                         uint64_t* leaf_word) {
  Result<uint64_t> off =
      pool_->allocator().allocate(Ops::NodeSize(Ops::kSmallTag), /*zero=*/true);
  if (!off.ok()) return off.status();
  Result<PmLeaf*> l = NewLeaf(*pool_, key, value, leaf_word);
  if (!l.ok()) {
    pool_->allocator().free(*off);
    return l.status();
  }
  *node = MakeChild(*off, Ops::kSmallTag);
  return l;
}

// The key diverges `match` units into the prefix of the node *slot points at: a new parent
// at its depth holding it and the new leaf is persisted and swapped in (commit), then the
// node's header is rewritten with one 8-byte store. A crash before that rewrite is repaired
// lazily by Header(). 3 fences.
template <typename Ops>
Status PersistentRadixTree<Ops>::SplitPrefix(uint64_t* slot, const PrefixHeader& h,
                                             uint32_t match, std::string_view key,
                                             std::string_view value) {
  const uint64_t old = *slot;
  const uint8_t* k = Bytes(key);
  const size_t units = Span::units(key.size());
  const uint8_t* below = AnyLeaf(old)->key_ptr();  // the old node's full prefix
  const uint32_t pos = h.depth + match;
  constexpr size_t kSize = Ops::NodeSize(Ops::kSmallTag);
  uint64_t parent, leaf_word;
  Result<PmLeaf*> l = NewNodeAndLeaf(key, value, &parent, &leaf_word);
  if (!l.ok()) return l.status();
  base(parent)->header = PrefixHeader::Make<Ops::kBits>(h.depth, match, k).Encode();
  Ops::BuildAdd(*pool_, parent, Span::unit(below, pos), old);
  Place(parent, pos, k, units, leaf_word);
  if (!pm::mutant(Ops::kSkipLeafPersist)) pc().flush(*l, (*l)->size());
  if (!pm::mutant(Ops::kSplitSkipParentPersist)) pc().flush(base(parent), kSize);
  pc().fence();
  CommitWord(pc(), slot, parent);
  // The old node now hangs one level lower; its discriminating position is unchanged.
  CommitWord(pc(), &base(old)->header,
             PrefixHeader::Make<Ops::kBits>(pos + 1, h.prefix_len - match - 1, below).Encode());
  return Status::OK();
}

template <typename Ops>
Status PersistentRadixTree<Ops>::remove(std::string_view key) {
  if (!KeyInRange(key)) return Status::NotFound();
  std::unique_lock lock(mu_);
  const uint8_t* k = Bytes(key);
  const size_t units = Span::units(key.size());
  // Per node on the path: the slot that leads to it, its header, and the key unit taken
  // below it (-1: its end word). At most one node per key unit plus the root.
  struct Step {  // trivially constructible: the array must not be zeroed per call
    uint64_t* slot;
    uint64_t header;  // the (repaired) header word
    int unit;
  };
  Step path[Span::units(kMaxKeySize) + 2];
  size_t nodes = 0;
  uint64_t* slot = RootSlot(*pool_);
  uint32_t depth = 0;
  for (;;) {
    const uint64_t w = *slot;
    if (w == 0) return Status::NotFound();
    if (IsLeafChild(w)) {
      if (!leaf(w)->KeyEquals(key)) return Status::NotFound();
      break;
    }
    const PrefixHeader h = Header(w, depth);
    if (h.pos() > units) return Status::NotFound();
    Step& step = path[nodes++];
    step.slot = slot;
    step.header = h.Encode();
    depth = h.pos();
    if (depth == units) {
      slot = &base(w)->end;
      step.unit = -1;
    } else {
      step.unit = Span::unit(k, depth);
      slot = Ops::FindChild(*pool_, w, static_cast<uint8_t>(step.unit));
      if constexpr (!Ops::kFixedFanout) {
        if (slot == nullptr) return Status::NotFound();
      }
      ++depth;
    }
  }
  const uint64_t leaf_word = *slot;
  // Nodes whose subtree holds only this leaf go with it, so no empty node is ever durable;
  // the entry to remove is then the one in the deepest surviving node (or the root word).
  size_t top = nodes;
  while (top > 0) {
    const uint64_t nw = *path[top - 1].slot;
    if (Ops::ChildCount(*pool_, nw) + (base(nw)->end != 0) != 1) break;
    --top;
  }
  std::vector<uint64_t> freed;
  if constexpr (Ops::kFixedFanout) {
    // WORT never shrinks a node: one left with a single other child that is a leaf is
    // replaced by that leaf (lookups compare whole keys at a leaf, so a leaf may hang at any
    // depth). One 8-byte store removes the key and the node together; without it a node
    // emptied down to one leaf would hold its block until the pool is rebuilt.
    if (top == nodes && nodes > 0) {
      const uint64_t nw = *path[nodes - 1].slot;
      const RadixNodeBase* nb = base(nw);
      uint64_t other = nb->end != leaf_word ? nb->end : 0;
      unsigned used = nb->end != 0;
      Ops::ForEachChild(*pool_, nw, 0, [&](uint8_t, uint64_t c) {
        ++used;
        if (c != leaf_word) other = c;
        return true;
      });
      if (used == 2 && other != 0 && IsLeafChild(other)) {
        freed.push_back(nw);
        freed.push_back(leaf_word);
        CommitWord(pc(), path[nodes - 1].slot, other);  // commit
        for (uint64_t w : freed) pool_->allocator().retire(ChildOffset(w));
        return Status::OK();
      }
    }
  }
  for (size_t i = top; i < nodes; ++i) freed.push_back(*path[i].slot);
  freed.push_back(leaf_word);
  if (top == 0) {
    MarkEmpty(*pool_);  // before the root word is cleared: a lost root word is then detectable
    CommitWord(pc(), RootSlot(*pool_), 0);
  } else {
    const Step& at = path[top - 1];
    if (at.unit < 0) {
      CommitWord(pc(), &base(*at.slot)->end, 0);
    } else {
      Ops::RemoveChild(*pool_, at.slot, PrefixHeader::Decode(at.header),
                       static_cast<uint8_t>(at.unit), freed);
    }
  }
  // Unlinked and durable: lookups that reached them before the commit may still read them.
  for (uint64_t w : freed) pool_->allocator().retire(ChildOffset(w));
  return Status::OK();
}

}  // namespace pmindex::radix

#endif  // PMINDEX_RADIX_COMMON_PERSISTENT_RADIX_TREE_POINT_H_
