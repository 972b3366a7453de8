// WOART operations: lookup, insert/update/upsert, remove (see woart.h for the crash argument).
#include "radix/woart/woart.h"

#include <algorithm>
#include <mutex>

#include "pm/alloc.h"
#include "pm/mutant.h"
#include "pm/persist.h"
#include "radix/common/key.h"
#include "radix/common/pm_tree_util.h"
#include "radix/woart/woart_dispatch.h"

namespace pmindex::radix {

namespace {
using Span = KeySpan<8>;
constexpr char kSkipLeafPersist[] = "woart.skip_leaf_persist";

// Node type after a remove leaves `n` children in a node of type `tag` (hysteresis, as ART).
uint64_t ShrunkTag(uint64_t tag, unsigned n) {
  if (tag == kTagNode256 && n <= 40) return kTagNode48;
  if (tag == kTagNode48 && n <= 12) return kTagNode16;
  if (tag == kTagNode16 && n <= 3) return kTagNode4;
  return tag;
}
}  // namespace

Woart::Woart(std::unique_ptr<Pool> pool) : pool_(std::move(pool)) {
  traits_ = Registration().traits;
}

// A destructor cannot report an error: users who need to see one call close() first.
Woart::~Woart() { close().IgnoreError(); }

Status Woart::close() {
  std::unique_lock lock(mu_);
  if (!pool_) return Status::OK();
  Status s = pool_->Close();
  pool_.reset();
  return s;
}

IndexRegistration Woart::Registration() {
  IndexRegistration r;
  r.traits.name = "woart";
  r.traits.kind = IndexKind::kWOART;
  r.traits.persistent = true;
  r.traits.ordered = true;
  r.traits.byte_keys = true;
  r.traits.max_key_size = kMaxKeySize;
  r.traits.max_value_size = kMaxValueSize;
  r.traits.concurrency =
      "writer-preferring reader-writer lock (many readers or one writer; single-threaded design)";
  r.traits.durability = "every acknowledged operation (8-byte failure-atomic commits)";
  r.traits.description = "WOART: ART with nodes redesigned for 8-byte failure-atomic updates";
  r.attach = [](std::unique_ptr<Pool> pool, bool) -> Result<std::unique_ptr<Index>> {
    return std::unique_ptr<Index>(new Woart(std::move(pool)));
  };
  r.params = "woart span=8 prefix=5";
  return r;
}

uint64_t* Woart::FindChild(uint64_t w, uint8_t b) const {
  return DispatchNode(*pool_, w, [b](auto* n) { return n->Find(b); });
}

unsigned Woart::ChildCount(uint64_t w) const {
  return DispatchNode(*pool_, w, [](auto* n) { return n->count(); });
}

const PmLeaf* Woart::AnyLeaf(uint64_t w) const {
  for (;;) {
    if (!ValidChildWord(*pool_, w, kTagNode256, NodeSizeForTag(ChildTagOf(w)))) return nullptr;
    if (IsLeafChild(w)) return leaf(w);
    uint64_t next = base(w)->end;
    if (next == 0) next = DispatchNode(*pool_, w, [](auto* n) { return n->Any(); });
    if (next == 0) return nullptr;
    w = next;
  }
}

PrefixHeader Woart::RepairHeader(uint64_t w, uint32_t depth, uint64_t word) {
  WoartNodeBase* nb = base(w);
  const PrefixHeader h = PrefixHeader::Decode(word);
  const PmLeaf* l = AnyLeaf(w);
  if (l == nullptr || h.pos() < depth) return h;  // corrupt; verify() names it
  PrefixHeader fixed = h.Repaired<8>(depth, l->key_ptr());
  std::atomic_ref<uint64_t>(nb->header).compare_exchange_strong(word, fixed.Encode());
  pm::persist(&nb->header, 8);
  repairs_.fetch_add(1, std::memory_order_relaxed);
  return fixed;
}

bool Woart::lookup(std::string_view key, std::string* value) {
  if (!KeyInRange(key)) return false;
  std::shared_lock lock(mu_);
  const uint8_t* k = Bytes(key);
  const size_t units = key.size();
  uint64_t w = *RootSlot(*pool_);
  uint32_t depth = 0;
  while (w != 0) {
    if (IsLeafChild(w)) {
      const PmLeaf* l = leaf(w);
      if (!l->KeyEquals(key)) return false;
      if (value) value->assign(l->value());
      return true;
    }
    const PrefixHeader h = Header(w, depth);
    if (h.pos() > units) return false;
    for (unsigned i = 0; i < h.stored(); ++i)
      if (h.prefix[i] != k[depth + i]) return false;
    depth = h.pos();
    if (depth == units) {
      w = base(w)->end;
    } else {
      const uint64_t* s = FindChild(w, k[depth]);
      if (s == nullptr) return false;
      w = *s;
      ++depth;
    }
  }
  return false;
}

Status Woart::insert(std::string_view key, std::string_view value) {
  return Put(key, value, PutMode::kInsert);
}
Status Woart::update(std::string_view key, std::string_view value) {
  return Put(key, value, PutMode::kUpdate);
}
Status Woart::upsert(std::string_view key, std::string_view value) {
  return Put(key, value, PutMode::kUpsert);
}

Status Woart::Put(std::string_view key, std::string_view value, PutMode mode) {
  if (Status s = CheckKeyValue(key, value); !s.ok()) return s;
  std::unique_lock lock(mu_);
  const uint8_t* k = Bytes(key);
  const size_t units = key.size();
  uint64_t* slot = RootSlot(*pool_);
  uint32_t depth = 0;
  for (;;) {
    const uint64_t w = *slot;
    if (w == 0) {
      if (mode == PutMode::kUpdate) return Status::NotFound();
      return LinkNewLeaf(slot, key, value);
    }
    if (IsLeafChild(w)) {
      PmLeaf* l = leaf(w);
      if (l->KeyEquals(key)) {
        if (mode == PutMode::kInsert) return Status::AlreadyExists();
        return ReplaceLeafValue(*pool_, slot, l, value, kSkipLeafPersist);
      }
      if (mode == PutMode::kUpdate) return Status::NotFound();
      return ExpandLeaf(slot, depth, key, value);
    }
    const PrefixHeader h = Header(w, depth);
    if (h.prefix_len != 0) {
      const uint32_t limit = std::min<uint32_t>(h.prefix_len, units - depth);
      uint32_t m = 0;
      const uint32_t stored = std::min<uint32_t>(h.stored(), limit);
      while (m < stored && h.prefix[m] == k[depth + m]) ++m;
      if (m == stored && m < limit) {
        m = static_cast<uint32_t>(
            CommonUnits<8>(k, AnyLeaf(w)->key_ptr(), depth + m, depth + limit) - depth);
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
    uint64_t* child = FindChild(w, k[depth]);
    if (child == nullptr) {
      if (mode == PutMode::kUpdate) return Status::NotFound();
      return AddToNode(slot, h, k[depth], key, value);
    }
    slot = child;
    ++depth;
  }
}

Status Woart::LinkNewLeaf(uint64_t* slot, std::string_view key, std::string_view value) {
  uint64_t word;
  Result<PmLeaf*> l = NewLeaf(*pool_, key, value, &word);
  if (!l.ok()) return l.status();
  if (!pm::mutant(kSkipLeafPersist)) pm::flush(*l, (*l)->size());
  pm::fence();
  CommitWord(slot, word);
  return Status::OK();
}

// Key byte b is absent from the node *slot points at: add it in place (2 fences), or grow
// into a persisted bigger node swapped in with one store (2 fences).
Status Woart::AddToNode(uint64_t* slot, const PrefixHeader& h, uint8_t b, std::string_view key,
                        std::string_view value) {
  const uint64_t w = *slot;
  uint64_t leaf_word;
  Result<PmLeaf*> l = NewLeaf(*pool_, key, value, &leaf_word);
  if (!l.ok()) return l.status();
  const bool full = DispatchNode(*pool_, w, [](auto* n) { return n->full(); });
  if (!full) {
    if (!pm::mutant(kSkipLeafPersist)) pm::flush(*l, (*l)->size());
    DispatchNode(*pool_, w, [&](auto* n) { n->Add(b, leaf_word); });
    return Status::OK();
  }
  const uint64_t tag = ChildTagOf(w);
  Result<uint64_t> grown = Rebuild(w, tag + 1, h, -1, true, b, leaf_word);
  if (!grown.ok()) {
    pool_->allocator().free(ChildOffset(leaf_word));
    return grown.status();
  }
  if (!pm::mutant(kSkipLeafPersist)) pm::flush(*l, (*l)->size());
  pm::flush(base(*grown), NodeSizeForTag(tag + 1));
  pm::fence();
  CommitWord(slot, *grown);
  pool_->allocator().free(ChildOffset(w));
  return Status::OK();
}

Result<uint64_t> Woart::Rebuild(uint64_t old, uint64_t tag, const PrefixHeader& h, int skip,
                                bool add, uint8_t b, uint64_t word) {
  Result<uint64_t> off = pool_->allocator().allocate(NodeSizeForTag(tag), /*zero=*/true);
  if (!off.ok()) return off.status();
  const uint64_t nw = MakeChild(*off, tag);
  base(nw)->header = h.Encode();
  base(nw)->end = base(old)->end;
  DispatchNode(*pool_, nw, [&](auto* dst) {
    DispatchNode(*pool_, old, [&](auto* src) {
      src->ForEach([&](uint8_t key, uint64_t c) {
        if (static_cast<int>(key) != skip) dst->BuildAdd(key, c);
      });
    });
    if (add) dst->BuildAdd(b, word);
  });
  return nw;
}

// Lazy expansion: a new Node4 at `depth` holding the old and the new leaf, persisted with
// the new leaf, then swapped in. 2 fences.
Status Woart::ExpandLeaf(uint64_t* slot, uint32_t depth, std::string_view key,
                         std::string_view value) {
  const uint64_t old_word = *slot;
  const PmLeaf* old = leaf(old_word);
  const uint8_t* k = Bytes(key);
  const size_t units = key.size();
  const uint32_t pos =
      static_cast<uint32_t>(CommonUnits<8>(k, old->key_ptr(), depth,
                                           std::min<size_t>(units, old->key_len)));
  Result<uint64_t> off = pool_->allocator().allocate(sizeof(WoartNode4), /*zero=*/true);
  if (!off.ok()) return off.status();
  uint64_t leaf_word;
  Result<PmLeaf*> l = NewLeaf(*pool_, key, value, &leaf_word);
  if (!l.ok()) {
    pool_->allocator().free(*off);
    return l.status();
  }
  auto* n = pool_->at<WoartNode4>(*off);
  n->header = PrefixHeader::Make<8>(depth, pos - depth, k).Encode();
  if (pos == units) n->end = leaf_word; else n->BuildAdd(k[pos], leaf_word);
  if (pos == old->key_len) n->end = old_word; else n->BuildAdd(old->key_ptr()[pos], old_word);
  if (!pm::mutant(kSkipLeafPersist)) pm::flush(*l, (*l)->size());
  pm::flush(n, sizeof(WoartNode4));
  pm::fence();
  CommitWord(slot, MakeChild(*off, kTagNode4));
  return Status::OK();
}

// Path-compression split, as WORT: persist a new Node4 parent holding the old node and the
// new leaf, swap it in (commit), rewrite the old header (repaired lazily if lost). 3 fences.
Status Woart::SplitPrefix(uint64_t* slot, const PrefixHeader& h, uint32_t match,
                          std::string_view key, std::string_view value) {
  const uint64_t old = *slot;
  const uint8_t* k = Bytes(key);
  const size_t units = key.size();
  const uint8_t* below = AnyLeaf(old)->key_ptr();
  const uint32_t pos = h.depth + match;
  Result<uint64_t> off = pool_->allocator().allocate(sizeof(WoartNode4), /*zero=*/true);
  if (!off.ok()) return off.status();
  uint64_t leaf_word;
  Result<PmLeaf*> l = NewLeaf(*pool_, key, value, &leaf_word);
  if (!l.ok()) {
    pool_->allocator().free(*off);
    return l.status();
  }
  auto* parent = pool_->at<WoartNode4>(*off);
  parent->header = PrefixHeader::Make<8>(h.depth, match, k).Encode();
  parent->BuildAdd(below[pos], old);
  if (pos == units) parent->end = leaf_word; else parent->BuildAdd(k[pos], leaf_word);
  if (!pm::mutant(kSkipLeafPersist)) pm::flush(*l, (*l)->size());
  pm::flush(parent, sizeof(WoartNode4));
  pm::fence();
  CommitWord(slot, MakeChild(*off, kTagNode4));
  CommitWord(&base(old)->header,
             PrefixHeader::Make<8>(pos + 1, h.prefix_len - match - 1, below).Encode());
  return Status::OK();
}

Status Woart::remove(std::string_view key) {
  if (!KeyInRange(key)) return Status::NotFound();
  std::unique_lock lock(mu_);
  const uint8_t* k = Bytes(key);
  const size_t units = key.size();
  // Per node on the path: the slot that leads to it, its header, and the key byte taken
  // below it (-1: its end word). At most one node per key byte plus the root.
  struct Step {  // trivially constructible: the array must not be zeroed per call
    uint64_t* slot;
    uint64_t header;  // the (repaired) header word
    int byte;
  };
  Step path[kMaxKeySize + 2];
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
    Step& step = path[nodes++];
    step.slot = slot;
    const PrefixHeader h = Header(w, depth);
    step.header = h.Encode();
    if (h.pos() > units) return Status::NotFound();
    depth = h.pos();
    if (depth == units) {
      slot = &base(w)->end;
      step.byte = -1;
    } else {
      slot = FindChild(w, k[depth]);
      if (slot == nullptr) return Status::NotFound();
      step.byte = k[depth];
      ++depth;
    }
  }
  const uint64_t leaf_word = *slot;
  // Nodes whose subtree holds only this leaf go with it, so no empty node is ever durable;
  // the entry to remove is then the one in the deepest surviving node (or the root word).
  size_t top = nodes;
  while (top > 0) {
    const uint64_t nw = *path[top - 1].slot;
    if (ChildCount(nw) + (base(nw)->end != 0) != 1) break;
    --top;
  }
  std::vector<uint64_t> freed;
  for (size_t i = top; i < nodes; ++i) freed.push_back(*path[i].slot);
  freed.push_back(leaf_word);
  if (top == 0) {
    CommitWord(RootSlot(*pool_), 0);
  } else {
    const Step& at = path[top - 1];
    const uint64_t nw = *at.slot;
    if (at.byte < 0) {
      CommitWord(&base(nw)->end, 0);
    } else {
      const uint64_t tag = ChildTagOf(nw);
      const uint64_t to = ShrunkTag(tag, ChildCount(nw) - 1);
      Result<uint64_t> small =
          to != tag ? Rebuild(nw, to, PrefixHeader::Decode(at.header), at.byte, false, 0, 0)
                    : Result<uint64_t>(Status::NotFound());
      if (small.ok()) {
        // Shrink: the smaller node without the key is persisted and swapped in (one commit).
        pm::flush(base(*small), NodeSizeForTag(to));
        pm::fence();
        CommitWord(at.slot, *small);
        freed.push_back(nw);
      } else {
        // In place (also when the pool has no room for the smaller node).
        DispatchNode(*pool_, nw, [&](auto* n) { n->Remove(static_cast<uint8_t>(at.byte)); });
      }
    }
  }
  for (uint64_t w : freed) pool_->allocator().free(ChildOffset(w));
  return Status::OK();
}

}  // namespace pmindex::radix
