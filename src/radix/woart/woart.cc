// WOART: the shared persistent radix tree instantiated with WOART's adaptive nodes; adding
// and removing children, growing and shrinking (see woart.h for the crash argument).
#include "radix/woart/woart.h"

#include "pm/alloc.h"
#include "pm/mutant.h"
#include "pm/persist.h"
#include "radix/common/persistent_radix_tree_point.h"
#include "radix/common/persistent_radix_tree_walk.h"
#include "radix/common/pm_tree_util.h"

namespace pmindex::radix {

namespace {

// Node type after a remove leaves `n` children in a node of type `tag` (hysteresis, as ART).
uint64_t ShrunkTag(uint64_t tag, unsigned n) {
  if (tag == kTagNode256 && n <= 40) return kTagNode48;
  if (tag == kTagNode48 && n <= 12) return kTagNode16;
  if (tag == kTagNode16 && n <= 3) return kTagNode4;
  return tag;
}

// Builds (unpublished) a node of type `tag` with header h, the end word and every child of
// `old` except unit `skip` (-1: none), plus unit -> word if add. Returns its tagged word.
Result<uint64_t> Rebuild(Pool& pool, uint64_t old, uint64_t tag, const PrefixHeader& h, int skip,
                         bool add, uint8_t unit, uint64_t word) {
  Result<uint64_t> off = pool.allocator().allocate(NodeSizeForTag(tag), /*zero=*/true);
  if (!off.ok()) return off.status();
  const uint64_t nw = MakeChild(*off, tag);
  auto* dst_base = pool.at<RadixNodeBase>(*off);
  dst_base->header = h.Encode();
  dst_base->end = pool.at<RadixNodeBase>(ChildOffset(old))->end;
  DispatchNode(pool, nw, [&](auto* dst) {
    DispatchNode(pool, old, [&](auto* src) {
      src->ForEach(0, [&](uint8_t key, uint64_t c) {
        if (static_cast<int>(key) != skip) dst->BuildAdd(key, c);
        return true;
      });
    });
    if (add) dst->BuildAdd(unit, word);
  });
  return nw;
}

}  // namespace

Status WoartOps::AddChild(Pool& pool, uint64_t* slot, const PrefixHeader& h, uint8_t unit,
                          uint64_t leaf_word, PmLeaf* leaf) {
  pm::PersistContext& pc = pool.persist_context();
  const uint64_t w = *slot;
  const bool full = DispatchNode(pool, w, [](auto* n) { return n->full(); });
  if (!full) {
    if (!pm::mutant(kSkipLeafPersist)) pc.flush(leaf, leaf->size());
    DispatchNode(pool, w, [&](auto* n) { n->Add(pc, unit, leaf_word); });
    return Status::OK();
  }
  const uint64_t tag = ChildTagOf(w);
  Result<uint64_t> grown = Rebuild(pool, w, tag + 1, h, -1, true, unit, leaf_word);
  if (!grown.ok()) {
    pool.allocator().free(ChildOffset(leaf_word));
    return grown.status();
  }
  if (!pm::mutant(kSkipLeafPersist)) pc.flush(leaf, leaf->size());
  pc.flush(pool.at<void>(ChildOffset(*grown)), NodeSizeForTag(tag + 1));
  pc.fence();
  CommitWord(pc, slot, *grown);
  pool.allocator().retire(ChildOffset(w));  // lookups that reached it may still read it
  return Status::OK();
}

void WoartOps::RemoveChild(Pool& pool, uint64_t* slot, const PrefixHeader& h, uint8_t unit,
                           std::vector<uint64_t>& freed) {
  pm::PersistContext& pc = pool.persist_context();
  const uint64_t nw = *slot;
  const uint64_t tag = ChildTagOf(nw);
  const uint64_t to = ShrunkTag(tag, ChildCount(pool, nw) - 1);
  Result<uint64_t> small = to != tag ? Rebuild(pool, nw, to, h, unit, false, 0, 0)
                                     : Result<uint64_t>(Status::NotFound());
  if (small.ok()) {
    // Shrink: the smaller node without the key is persisted and swapped in (one commit).
    pc.flush(pool.at<void>(ChildOffset(*small)), NodeSizeForTag(to));
    pc.fence();
    CommitWord(pc, slot, *small);
    freed.push_back(nw);
  } else {
    // In place (also when the pool has no room for the smaller node).
    DispatchNode(pool, nw, [&](auto* n) { n->Remove(pc, unit); });
  }
}

const char* WoartOps::CheckNode(const Pool& pool, uint64_t w) {
  const uint64_t off = ChildOffset(w);
  switch (ChildTagOf(w)) {
    case kTagNode4:
      if (WoartNode4::RawCount(LoadWord(&pool.at<WoartNode4>(off)->slots)) > 4)
        return "Node4 count beyond 4";
      break;
    case kTagNode16:
      if (LoadWord(&pool.at<WoartNode16>(off)->bitmap) >> 16)
        return "Node16 bitmap beyond 16 slots";
      break;
    case kTagNode48: {
      const auto* n48 = pool.at<WoartNode48>(off);
      for (unsigned b = 0; b < 256; ++b)
        if (n48->index[b] > WoartNode48::kCapacity) return "Node48 index out of range";
      if (static_cast<unsigned>(__builtin_popcountll(n48->used_slots())) != n48->count())
        return "Node48 slot named twice";
      break;
    }
    default:
      break;
  }
  return nullptr;
}

template class PersistentRadixTree<WoartOps>;

}  // namespace pmindex::radix
