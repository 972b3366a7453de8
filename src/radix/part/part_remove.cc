// P-ART remove: the leaf's child word cleared in place, the node replaced by a smaller copy,
// or a node left with one entry replaced by that entry (see part.h for the crash argument).
#include "pm/alloc.h"
#include "pm/persist.h"
#include "radix/part/part.h"

namespace pmindex::radix::part {

namespace {

// Node type after a remove leaves `n` children in a node of type `tag` (hysteresis, as ART).
uint64_t ShrunkTag(uint64_t tag, unsigned n) {
  if (tag == kTagNode256 && n <= 40) return kTagNode48;
  if (tag == kTagNode48 && n <= 12) return kTagNode16;
  if (tag == kTagNode16 && n <= 3) return kTagNode4;
  return tag;
}

}  // namespace

Status PArt::remove(std::string_view key) {
  if (!KeyInRange(key)) return Status::NotFound();
  for (;;) {
    Outcome o;
    {
      auto guard = pool_->allocator().epoch_guard();
      o = RemoveOnce(key);
    }
    if (o) return *o;
    restarts_.fetch_add(1, std::memory_order_relaxed);
  }
}

PArt::Outcome PArt::RemoveOnce(std::string_view key) {
  const uint8_t* k = Bytes(key);
  const uint32_t units = static_cast<uint32_t>(key.size());
  Place p;
  uint64_t w;
  for (;;) {
    w = Read(p.at);
    if (w == 0) return Status::NotFound();
    if (IsLeafChild(w)) {
      if (!leaf(w)->KeyEquals(key)) return Status::NotFound();
      break;
    }
    const PrefixHeader h = HeaderAt(w, p.depth);
    if (h.depth != p.depth) return Corruption("node header position out of range");
    const uint32_t pos = h.pos();
    if (pos > units) return Status::NotFound();
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
  if (p.at.node != 0) return RemoveFromNode(p, w);
  RowexNodeLock lock;
  if (!LockHolder(p.at, lock)) return std::nullopt;
  if (*root_ != w) return std::nullopt;
  MarkEmpty(*pool_);  // before the root word is cleared: a lost root word stays detectable
  CommitWord(pool_->persist_context(), root_, 0);
  pool_->allocator().retire(ChildOffset(w));
  return Status::OK();
}

// Under the locks of the node's parent and of the node: the leaf's entry cleared (1 fence),
// or the node replaced by a smaller copy without it (2 fences), or by its other entry.
PArt::Outcome PArt::RemoveFromNode(const Place& p, uint64_t leaf_word) {
  const uint64_t n = p.at.node;
  RowexNodeLock glock, nlock;
  if (!LockHolder(p.up, glock)) return std::nullopt;
  uint64_t* gslot = SlotOf(p.up);
  if (gslot == nullptr || *gslot != n) return std::nullopt;
  if (!nlock.Lock(&base(n)->lock, gen_)) return std::nullopt;
  uint64_t* slot = SlotOf(p.at);
  if (slot == nullptr || *slot != leaf_word) return std::nullopt;
  pm::PersistContext& pc = pool_->persist_context();
  const unsigned kids = Live(n);
  if (kids + (base(n)->end != 0) <= 2) return Collapse(gslot, n, p.holder, leaf_word, nlock);
  if (p.at.unit < 0) {
    CommitWord(pc, slot, 0);
  } else {
    const uint8_t unit = static_cast<uint8_t>(p.at.unit);
    const uint64_t tag = ChildTagOf(n);
    const uint64_t to = ShrunkTag(tag, kids - 1);
    Result<uint64_t> small = to != tag ? Copy(n, to, p.holder, unit, false, 0, 0)
                                       : Result<uint64_t>(Status::NotFound());
    if (small.ok()) {
      Publish(gslot, *small, nullptr);
      nlock.MarkObsolete(gen_);
      pool_->allocator().retire(ChildOffset(n));
    } else {  // in place (also when the pool has no room for the copy)
      Dispatch(mem(), n, [&](auto* x) { x->Remove(pc, unit); });
    }
  }
  pool_->allocator().retire(ChildOffset(leaf_word));  // unlinked durably
  return Status::OK();
}

// Node n keeps one entry besides the leaf: that entry takes n's place in the parent's child
// word (the commit; a leaf may hang at any depth, lookups compare whole keys). A node entry
// is locked first and its header rewritten for its new depth after the commit (a crash in
// between leaves a header HeaderAt reads right). 1 or 2 fences.
PArt::Outcome PArt::Collapse(uint64_t* gslot, uint64_t n, const PrefixHeader& h,
                             uint64_t leaf_word, RowexNodeLock& nlock) {
  pm::PersistContext& pc = pool_->persist_context();
  uint64_t other = base(n)->end != leaf_word ? base(n)->end : 0;
  if (other == 0) {
    Dispatch(mem(), n, [&](auto* x) {
      x->ForEach(0, [&](uint8_t, uint64_t c) {
        if (c != leaf_word) other = c;
        return other == 0;
      });
    });
  }
  RowexNodeLock olock;
  const bool node = other != 0 && !IsLeafChild(other);
  // `other` is linked from n, whose lock we hold, so nothing can have replaced it.
  if (node && !olock.Lock(&base(other)->lock, gen_)) return std::nullopt;
  if (other == 0 && gslot == root_) MarkEmpty(*pool_);  // a damaged node had one entry
  CommitWord(pc, gslot, other);
  nlock.MarkObsolete(gen_);
  if (node) {
    const uint32_t pos = PrefixHeader::PosOf(LoadWord(&base(other)->header));
    const PmLeaf* any = AnyLeaf(other);
    if (any != nullptr && pos >= h.depth)
      CommitWord(pc, &base(other)->header,
                 PrefixHeader::Make<8>(h.depth, pos - h.depth, any->key_ptr()).Encode());
  }
  pool_->allocator().retire(ChildOffset(n));
  pool_->allocator().retire(ChildOffset(leaf_word));
  return Status::OK();
}

}  // namespace pmindex::radix::part
