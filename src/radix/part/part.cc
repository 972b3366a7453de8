// P-ART: attach, registration, lookup and the insert paths (see part.h for the crash
// argument and the locking).
#include "radix/part/part.h"

#include <algorithm>

#include "pm/alloc.h"
#include "pm/mutant.h"
#include "pm/persist.h"

namespace pmindex::radix::part {

PArt::PArt(std::unique_ptr<Pool> pool)
    : pool_(std::move(pool)),
      root_(RootSlot(*pool_)),
      root_lock_(RootSlot(*pool_) + 2),
      gen_(static_cast<uint32_t>(pool_->generation())) {
  traits_ = Registration().traits;
}

Status PArt::close() {
  if (!pool_) return Status::OK();
  Status s = pool_->Close();
  pool_.reset();
  return s;
}

IndexRegistration PArt::Registration() {
  IndexRegistration r;
  r.traits.name = "part";
  r.traits.kind = kKind;
  r.traits.persistent = true;
  r.traits.ordered = true;
  r.traits.byte_keys = true;
  r.traits.max_key_size = kMaxKeySize;
  r.traits.max_value_size = kMaxValueSize;
  r.traits.concurrency =
      "concurrent (ROWEX: writers lock the nodes they change, lookups and scans take no lock)";
  r.traits.durability = "every acknowledged operation (8-byte failure-atomic commits)";
  r.traits.description = "P-ART: RECIPE's persistent ART with ROWEX concurrency";
  r.attach = [](std::unique_ptr<Pool> pool, bool fresh) -> Result<std::unique_ptr<Index>> {
    if (Status s = CheckRootWord(*pool, fresh, "part"); !s.ok()) return s;
    return std::unique_ptr<Index>(new PArt(std::move(pool)));
  };
  r.params = "part span=8 prefix=5";
  r.mutants = {
      {kCountBeforeEntry,
       "a Node4/Node16 insert publishes the slot count before the key and child it covers "
       "are persisted (the published P-ART ordering)",
       "header-child-two-stores"},
      {kSkipNodePersist,
       "a new node (grown or compacted copy, prefix split, lazy expansion) is published "
       "before it is persisted"},
      {kSkipLeafPersist, "a new leaf is published before it is persisted"},
  };
  r.crash_scenarios = {"header-child-two-stores", "split-sibling-early",
                       "pftree-node-insert-in-place", "part-collapse"};
  return r;
}

uint64_t* PArt::SlotOf(const Link& l) {
  if (l.node == 0) return root_;
  if (l.unit < 0) return &base(l.node)->end;
  return Dispatch(mem(), l.node, [&](auto* n) { return n->Find(static_cast<uint8_t>(l.unit)); });
}

const PmLeaf* PArt::AnyLeaf(uint64_t w) const {
  for (;;) {
    if (!ValidWord(w)) return nullptr;
    if (IsLeafChild(w)) return leaf(w);
    uint64_t next = LoadWord(&base(w)->end);
    if (next == 0) next = Any(w);
    if (next == 0) return nullptr;
    w = next;
  }
}

PrefixHeader PArt::HeaderAt(uint64_t w, uint32_t depth) const {
  const PrefixHeader h = PrefixHeader::Decode(LoadWord(&base(w)->header));
  if (h.depth == depth) [[likely]]
    return h;
  const PmLeaf* l = AnyLeaf(w);
  if (l == nullptr || h.pos() < depth) return h;  // damaged: the caller reports it
  return h.Repaired<8>(depth, l->key_ptr());
}

// ---- lookup: lock-free, no retry ----

// Optimistic path compression, as ART's lookup: only each node's position is read from its
// header (it never changes, so a header a split or collapse has not rewritten yet routes
// right); the skipped prefix is checked once, by comparing the whole key at the leaf.
template <typename Key>
Status PArt::Find(const Key& key, std::string* value) const {
  const char* const m = mem();
  const uint32_t units = key.units();
  uint64_t w = LoadWord(root_);
  uint32_t depth = 0;
  while (w != 0) {
    if (IsLeafChild(w)) {
      const auto* l = reinterpret_cast<const PmLeaf*>(m + ChildOffset(w));
      if (!key.Matches(*l)) return Status::NotFound();
      if (value) l->LoadValue(value);
      return Status::OK();
    }
    const auto* nb = reinterpret_cast<const NodeBase*>(m + ChildOffset(w));
    const uint64_t hw = LoadWord(&nb->header);
    if (PrefixHeader::DepthAndLenOf(hw) != depth) [[unlikely]]
      depth = PrefixHeader::PosOf(hw);
    if (depth >= units) {
      if (depth > units) return Status::NotFound();
      w = LoadWord(&nb->end);
      continue;
    }
    w = Dispatch(m, w, [&](auto* n) { return n->Load(key.unit(depth)); });
    ++depth;
  }
  return Status::NotFound();
}

Status PArt::lookup(std::string_view key, std::string* value) {
  if (!KeyInRange(key)) [[unlikely]]
    return Status::InvalidArgument("key length out of range");
  auto guard = pool_->allocator().epoch_guard();  // every block reached stays allocated
  if (key.size() == 8) [[likely]]
    return Find(WordKey<8>::Of(key), value);
  return Find(ByteKey<8>{key}, value);
}

// ---- insert, update, upsert ----

Status PArt::Put(std::string_view key, std::string_view value, PutMode mode) {
  if (Status s = CheckKeyValue(key, value); !s.ok()) return s;
  for (;;) {
    Outcome o;
    {
      auto guard = pool_->allocator().epoch_guard();
      o = PutOnce(key, value, mode);
    }
    if (!o) {
      restarts_.fetch_add(1, std::memory_order_relaxed);
      continue;
    }
    // Blocks retired earlier may wait for their grace period: free what the open guards
    // allow and try again (an OutOfSpace put changed nothing).
    if (!o->IsOutOfSpace() || !pool_->allocator().reclaim_now()) return *o;
  }
}

// The descent without locks (ROWEX): every word is read with an atomic load; the step that
// changes something locks and re-checks.
PArt::Outcome PArt::PutOnce(std::string_view key, std::string_view value, PutMode mode) {
  const uint8_t* k = Bytes(key);
  const uint32_t units = static_cast<uint32_t>(key.size());
  Place p;
  for (;;) {
    const uint64_t w = Read(p.at);
    if (w == 0) {
      if (mode == PutMode::kUpdate) return Status::NotFound();
      return AddLeaf(p, key, value);
    }
    if (IsLeafChild(w)) {
      if (leaf(w)->KeyEquals(key)) {
        if (mode == PutMode::kInsert) return Status::AlreadyExists();
        return UpdateLeaf(p, w, value);
      }
      if (mode == PutMode::kUpdate) return Status::NotFound();
      return ExpandLeaf(p, w, key, value);
    }
    // Common case: the node sits at the depth reached and has no prefix: no header to decode.
    const uint64_t hw = LoadWord(&base(w)->header);
    PrefixHeader h{p.depth, 0, {}};
    if (PrefixHeader::DepthAndLenOf(hw) != p.depth) [[unlikely]] {
      Outcome out;
      if (LeavesPrefix(p, w, key, value, mode, &h, &out)) return out;
    }
    const uint32_t pos = h.pos();
    p.up = p.at;
    p.holder = h;
    if (pos == units) {
      p.at = Link{w, -1};
      p.depth = pos;
    } else {
      p.at = Link{w, k[pos]};
      p.depth = pos + 1;
    }
  }
}

// The header of node w as at p.depth into *h; true if the key leaves its prefix there, with
// the outcome (the split, NotFound for an update, or a damaged node) in *out.
bool PArt::LeavesPrefix(const Place& p, uint64_t w, std::string_view key, std::string_view value,
                        PutMode mode, PrefixHeader* h, Outcome* out) {
  *h = HeaderAt(w, p.depth);
  if (h->depth != p.depth) {
    *out = Corruption("node header position out of range");
    return true;
  }
  if (h->prefix_len == 0) return false;
  // Units of the prefix the key matches (stops where the key ends).
  const uint8_t* k = Bytes(key);
  const uint32_t limit =
      std::min<uint32_t>(h->prefix_len, static_cast<uint32_t>(key.size()) - p.depth);
  const uint32_t stored = std::min<uint32_t>(h->stored(), limit);
  uint32_t m = 0;
  while (m < stored && h->prefix[m] == k[p.depth + m]) ++m;
  if (m == stored && m < limit) {
    const PmLeaf* below = AnyLeaf(w);
    if (below == nullptr) {
      *out = Corruption("node without a leaf");
      return true;
    }
    m = static_cast<uint32_t>(
        CommonUnits<8>(k, below->key_ptr(), p.depth + m, p.depth + limit) - p.depth);
  }
  if (m == h->prefix_len) return false;
  *out = mode == PutMode::kUpdate ? Outcome(Status::NotFound())
                                  : SplitPrefix(p, w, *h, m, key, value);
  return true;
}

void PArt::Publish(uint64_t* slot, uint64_t node, const PmLeaf* l) {
  pm::PersistContext& pc = pool_->persist_context();
  if (l != nullptr && !pm::mutant(kSkipLeafPersist)) pc.flush(l, l->size());
  if (!pm::mutant(kSkipNodePersist)) pc.flush(base(node), NodeSize(ChildTagOf(node)));
  pc.fence();
  CommitWord(pc, slot, node);
}

// An empty slot: the root word or an end word (stored under the holder's lock), or a unit
// the node has no child for (in place if the node has room, else by copy).
PArt::Outcome PArt::AddLeaf(const Place& p, std::string_view key, std::string_view value) {
  pm::PersistContext& pc = pool_->persist_context();
  const Link& at = p.at;
  const bool by_copy = at.node != 0 && at.unit >= 0 &&
                       !Dispatch(mem(), at.node, [](auto* n) { return n->HasRoom(); });
  if (by_copy) {
    RowexNodeLock plock;
    if (!LockHolder(p.up, plock)) return std::nullopt;
    const uint64_t* gslot = SlotOf(p.up);
    if (gslot == nullptr || *gslot != at.node) return std::nullopt;
    uint64_t word;
    Result<PmLeaf*> l = NewLeaf(*pool_, key, value, &word);
    if (!l.ok()) return l.status();
    Outcome o = AddByCopy(p, word, *l);
    if (!o || !o->ok()) pool_->allocator().free(ChildOffset(word));
    return o;
  }
  RowexNodeLock lock;
  if (!LockHolder(at, lock)) return std::nullopt;
  if (at.node != 0 && at.unit >= 0) {
    const bool free = Dispatch(mem(), at.node, [&](auto* n) {
      return n->HasRoom() && n->Find(static_cast<uint8_t>(at.unit)) == nullptr;
    });
    if (!free) return std::nullopt;
  } else if (*SlotOf(at) != 0) {
    return std::nullopt;
  }
  uint64_t word;
  Result<PmLeaf*> l = NewLeaf(*pool_, key, value, &word);
  if (!l.ok()) return l.status();
  if (!pm::mutant(kSkipLeafPersist)) pc.flush(*l, (*l)->size());
  if (at.node == 0 || at.unit < 0) {
    pc.fence();
    CommitWord(pc, SlotOf(at), word);
    if (at.node == 0) ClearEmptyMark(*pool_);
  } else {
    Dispatch(mem(), at.node,
             [&](auto* n) { n->Add(pc, static_cast<uint8_t>(at.unit), word); });
  }
  return Status::OK();
}

// The node at p.at.node is full: under its parent's lock (held by the caller) and its own, a
// copy with the new child (compacted, or grown when every slot is live) is persisted with
// the leaf and swapped into the parent's child word; the old node is obsolete from then on.
PArt::Outcome PArt::AddByCopy(const Place& p, uint64_t leaf_word, PmLeaf* l) {
  const uint64_t n = p.at.node;
  const uint8_t unit = static_cast<uint8_t>(p.at.unit);
  RowexNodeLock nlock;
  if (!nlock.Lock(&base(n)->lock, gen_)) return std::nullopt;
  if (Dispatch(mem(), n, [&](auto* x) { return x->Find(unit); }) != nullptr) return std::nullopt;
  const uint64_t tag = std::max(ChildTagOf(n), TagFor(Live(n) + 1));
  Result<uint64_t> copy = Copy(n, tag, p.holder, -1, true, unit, leaf_word);
  if (!copy.ok()) return copy.status();
  Publish(SlotOf(p.up), *copy, l);
  nlock.MarkObsolete(gen_);
  pool_->allocator().retire(ChildOffset(n));  // readers that reached it may still read it
  return Status::OK();
}

Result<uint64_t> PArt::Copy(uint64_t old, uint64_t tag, const PrefixHeader& h, int skip,
                            bool add, uint8_t unit, uint64_t word) {
  Result<uint64_t> off = pool_->allocator().allocate(NodeSize(tag), /*zero=*/true);
  if (!off.ok()) return off.status();
  const uint64_t nw = MakeChild(*off, tag);
  NodeBase* nb = base(nw);
  nb->header = h.Encode();
  nb->end = LoadWord(&base(old)->end);
  Dispatch(mem(), nw, [&](auto* dst) {
    Dispatch(mem(), old, [&](auto* src) {
      src->ForEach(0, [&](uint8_t b, uint64_t c) {
        if (static_cast<int>(b) != skip) dst->BuildAdd(b, c);
        return true;
      });
    });
    if (add) dst->BuildAdd(unit, word);
  });
  return nw;
}

PArt::Outcome PArt::UpdateLeaf(const Place& p, uint64_t w, std::string_view value) {
  RowexNodeLock lock;
  if (!LockHolder(p.at, lock)) return std::nullopt;
  uint64_t* slot = SlotOf(p.at);
  if (slot == nullptr || *slot != w) return std::nullopt;
  return ReplaceLeafValue(*pool_, slot, leaf(w), value, kSkipLeafPersist);
}

Result<PmLeaf*> PArt::NewNodeAndLeaf(std::string_view key, std::string_view value,
                                     uint64_t* node, uint64_t* leaf_word) {
  Result<uint64_t> off = pool_->allocator().allocate(sizeof(Node4), /*zero=*/true);
  if (!off.ok()) return off.status();
  Result<PmLeaf*> l = NewLeaf(*pool_, key, value, leaf_word);
  if (!l.ok()) {
    pool_->allocator().free(*off);
    return l.status();
  }
  *node = MakeChild(*off, kTagNode4);
  return l;
}

void PArt::PlaceInto(uint64_t node, uint32_t pos, const uint8_t* key, size_t units,
                     uint64_t word) {
  if (pos == units)
    base(node)->end = word;
  else
    Dispatch(mem(), node, [&](auto* n) { n->BuildAdd(key[pos], word); });
}

// A leaf's slot must hold two keys: a new Node4 at the slot's depth whose prefix is their
// common run takes both; persisted with the new leaf, then swapped in. 2 fences.
PArt::Outcome PArt::ExpandLeaf(const Place& p, uint64_t w, std::string_view key,
                               std::string_view value) {
  RowexNodeLock lock;
  if (!LockHolder(p.at, lock)) return std::nullopt;
  uint64_t* slot = SlotOf(p.at);
  if (slot == nullptr || *slot != w) return std::nullopt;
  const PmLeaf* old = leaf(w);
  const uint8_t* k = Bytes(key);
  const uint32_t pos = static_cast<uint32_t>(
      CommonUnits<8>(k, old->key_ptr(), p.depth, std::min<size_t>(key.size(), old->key_len)));
  uint64_t nw, leaf_word;
  Result<PmLeaf*> l = NewNodeAndLeaf(key, value, &nw, &leaf_word);
  if (!l.ok()) return l.status();
  base(nw)->header = PrefixHeader::Make<8>(p.depth, pos - p.depth, k).Encode();
  PlaceInto(nw, pos, k, key.size(), leaf_word);
  PlaceInto(nw, pos, old->key_ptr(), old->key_len, w);
  Publish(slot, nw, *l);
  return Status::OK();
}

// The key leaves node w's prefix after `match` units: under the locks of the slot's holder
// and of w, a new Node4 at w's depth holding w and the new leaf is persisted and swapped in
// (the commit), then w's header is rewritten for its new depth with one store. A crash
// between the two leaves a header that HeaderAt reads right. 3 fences.
PArt::Outcome PArt::SplitPrefix(const Place& p, uint64_t w, const PrefixHeader& h,
                                uint32_t match, std::string_view key, std::string_view value) {
  RowexNodeLock lock, wlock;
  if (!LockHolder(p.at, lock)) return std::nullopt;
  uint64_t* slot = SlotOf(p.at);
  if (slot == nullptr || *slot != w) return std::nullopt;
  if (!wlock.Lock(&base(w)->lock, gen_)) return std::nullopt;
  const PmLeaf* any = AnyLeaf(w);
  if (any == nullptr) return Corruption("node without a leaf");
  const uint8_t* below = any->key_ptr();  // w's whole prefix
  const uint8_t* k = Bytes(key);
  const uint32_t pos = h.depth + match;
  uint64_t parent, leaf_word;
  Result<PmLeaf*> l = NewNodeAndLeaf(key, value, &parent, &leaf_word);
  if (!l.ok()) return l.status();
  base(parent)->header = PrefixHeader::Make<8>(h.depth, match, k).Encode();
  Dispatch(mem(), parent, [&](auto* n) { n->BuildAdd(below[pos], w); });
  PlaceInto(parent, pos, k, key.size(), leaf_word);
  Publish(slot, parent, *l);
  // w now hangs one level lower; its position is unchanged.
  CommitWord(pool_->persist_context(), &base(w)->header,
             PrefixHeader::Make<8>(pos + 1, h.prefix_len - match - 1, below).Encode());
  return Status::OK();
}

}  // namespace pmindex::radix::part
