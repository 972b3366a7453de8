// ROART's node operations: finding, adding, replacing and removing entries, building nodes
// and leaf arrays (layouts and crash argument in roart_nodes.h).
#include "radix/roart/roart_nodes.h"

#include <cassert>
#include <cstring>

#include "pm/mutant.h"

namespace pmindex::roart {

namespace {

uint8_t LoadIndex(const uint8_t* p) {
  return std::atomic_ref<uint8_t>(*const_cast<uint8_t*>(p)).load(std::memory_order_acquire);
}
void StoreIndex(uint8_t* p, uint8_t v) {
  std::atomic_ref<uint8_t>(*p).store(v, std::memory_order_release);
}

// Entries of a Node4/16 (unsorted: an entry is written into any free slot).
uint64_t* SmallEntries(NodeHeader* n, unsigned* size) {
  if (n->type == kTagNode4) {
    *size = 4;
    return reinterpret_cast<Node4*>(n)->e;
  }
  *size = 16;
  return reinterpret_cast<Node16*>(n)->e;
}
const uint64_t* SmallEntries(const NodeHeader* n, unsigned* size) {
  return SmallEntries(const_cast<NodeHeader*>(n), size);
}

}  // namespace

size_t FixedSize(uint64_t tag) {
  switch (tag) {
    case kTagNode4: return sizeof(Node4);
    case kTagNode16: return sizeof(Node16);
    case kTagNode48: return sizeof(Node48);
    case kTagNode256: return sizeof(Node256);
    default: return sizeof(NodeHeader);
  }
}

uint64_t FindChild(const NodeHeader* n, uint8_t b) {
  switch (n->type) {
    case kTagNode256: {
      const uint64_t e = Load(&reinterpret_cast<const Node256*>(n)->e[b]);
      return EntryChild(e);
    }
    case kTagNode48: {
      auto* n48 = reinterpret_cast<const Node48*>(n);
      const uint8_t idx = LoadIndex(&n48->index[b]);
      if (idx == 0) return 0;
      // The slot may have been reused for another byte since the index was read: the
      // entry's own key byte decides (entry compression).
      const uint64_t e = Load(&n48->e[idx - 1]);
      return e != 0 && EntryByte(e) == b ? EntryChild(e) : 0;
    }
    default: {
      unsigned size;
      const uint64_t* es = SmallEntries(n, &size);
      for (unsigned i = 0; i < size; ++i) {
        const uint64_t e = Load(&es[i]);
        if (e != 0 && EntryByte(e) == b) return EntryChild(e);
      }
      return 0;
    }
  }
}

uint64_t* SlotOf(NodeHeader* n, uint8_t b) {
  switch (n->type) {
    case kTagNode256: {
      uint64_t* slot = &reinterpret_cast<Node256*>(n)->e[b];
      return Load(slot) != 0 ? slot : nullptr;
    }
    case kTagNode48: {
      auto* n48 = reinterpret_cast<Node48*>(n);
      const uint8_t idx = LoadIndex(&n48->index[b]);
      if (idx == 0 || idx > 48) return nullptr;
      uint64_t* slot = &n48->e[idx - 1];
      const uint64_t e = Load(slot);
      return e != 0 && EntryByte(e) == b ? slot : nullptr;
    }
    default: {
      unsigned size;
      uint64_t* es = SmallEntries(n, &size);
      for (unsigned i = 0; i < size; ++i) {
        const uint64_t e = Load(&es[i]);
        if (e != 0 && EntryByte(e) == b) return &es[i];
      }
      return nullptr;
    }
  }
}

unsigned LiveCount(const NodeHeader* n) {
  if (n->type != kTagNode256) return n->count;
  unsigned live = 0;
  for (uint64_t e : reinterpret_cast<const Node256*>(n)->e) live += Load(&e) != 0;
  return live;
}

size_t EntriesFrom(const NodeHeader* n, unsigned from, uint64_t* out, size_t limit) {
  size_t k = 0;
  switch (n->type) {
    case kTagNode256: {
      auto* n256 = reinterpret_cast<const Node256*>(n);
      for (unsigned b = from; b < 256 && k < limit; ++b) {
        const uint64_t e = Load(&n256->e[b]);
        if (e != 0) out[k++] = e;
      }
      return k;
    }
    case kTagNode48: {
      auto* n48 = reinterpret_cast<const Node48*>(n);
      for (unsigned b = from; b < 256 && k < limit; ++b) {
        const uint8_t idx = LoadIndex(&n48->index[b]);
        if (idx == 0 || idx > 48) continue;
        const uint64_t e = Load(&n48->e[idx - 1]);
        if (e != 0 && EntryByte(e) == b) out[k++] = e;
      }
      return k;
    }
    default: {
      unsigned size;
      const uint64_t* es = SmallEntries(n, &size);
      for (unsigned i = 0; i < size; ++i) {  // insertion sort of <= 16 entries by byte
        const uint64_t e = Load(&es[i]);
        if (e == 0 || EntryByte(e) < from) continue;
        size_t j = k++;
        for (; j > 0 && EntryByte(out[j - 1]) > EntryByte(e); --j) out[j] = out[j - 1];
        out[j] = e;
      }
      return std::min(k, limit);
    }
  }
}

bool AddChildInPlace(pm::PersistContext& pc, NodeHeader* n, uint8_t b, uint64_t child) {
  const uint64_t entry = EntryOf(b, child);
  switch (n->type) {
    case kTagNode256: {
      uint64_t* slot = &reinterpret_cast<Node256*>(n)->e[b];
      Store(slot, entry);
      pc.persist(slot, 8);  // commit
      return true;
    }
    case kTagNode48: {
      auto* n48 = reinterpret_cast<Node48*>(n);
      if (n->count >= 48) return false;
      for (unsigned s = 0; s < 48; ++s) {
        if (Load(&n48->e[s]) != 0) continue;
        Store(&n48->e[s], entry);
        pc.persist(&n48->e[s], 8);  // commit: recovery rebuilds the index from it
        StoreIndex(&n48->index[b], static_cast<uint8_t>(s + 1));  // never flushed
        n->count++;
        return true;
      }
      return false;
    }
    default: {
      unsigned size;
      uint64_t* es = SmallEntries(n, &size);
      if (n->count >= size) return false;
      for (unsigned i = 0; i < size; ++i) {
        if (Load(&es[i]) != 0) continue;
        Store(&es[i], entry);
        pc.persist(&es[i], 8);  // commit
        n->count++;
        return true;
      }
      return false;
    }
  }
}

void ReplaceEntry(pm::PersistContext& pc, uint64_t* slot, uint8_t b, uint64_t child) {
  Store(slot, EntryOf(b, child));
  pc.persist(slot, 8);  // commit
}

void RemoveChild(pm::PersistContext& pc, NodeHeader* n, uint8_t b) {
  uint64_t* slot = SlotOf(n, b);
  assert(slot != nullptr);
  Store(slot, 0);
  pc.persist(slot, 8);  // commit
  if (n->type == kTagNode48) StoreIndex(&reinterpret_cast<Node48*>(n)->index[b], 0);
  if (n->type != kTagNode256) n->count--;
}

namespace {

uint64_t TypeFor(size_t children) {
  if (children <= 4) return kTagNode4;
  if (children <= 16) return kTagNode16;
  if (children <= 48) return kTagNode48;
  return kTagNode256;
}

// Writes children into the entries of a zeroed node of type `tag`.
void FillEntries(NodeHeader* n, const std::vector<std::pair<uint8_t, uint64_t>>& children) {
  switch (n->type) {
    case kTagNode256:
      for (const auto& [b, c] : children) reinterpret_cast<Node256*>(n)->e[b] = EntryOf(b, c);
      return;
    case kTagNode48: {
      auto* n48 = reinterpret_cast<Node48*>(n);
      for (size_t s = 0; s < children.size(); ++s) {
        n48->e[s] = EntryOf(children[s].first, children[s].second);
        n48->index[children[s].first] = static_cast<uint8_t>(s + 1);
      }
      break;
    }
    default: {
      unsigned size;
      uint64_t* es = SmallEntries(n, &size);
      for (size_t s = 0; s < children.size(); ++s)
        es[s] = EntryOf(children[s].first, children[s].second);
      break;
    }
  }
  n->count = static_cast<uint8_t>(children.size());
}

}  // namespace

Result<uint64_t> BuildNode(pm::PersistContext& pc, pm::Allocator& alloc, char* base,
                           uint32_t depth, std::string_view prefix, uint64_t end,
                           const std::vector<std::pair<uint8_t, uint64_t>>& children) {
  const uint64_t tag = TypeFor(children.size());
  const size_t size = FixedSize(tag) + prefix.size();
  Result<uint64_t> off = alloc.allocate(size, /*zero=*/true);
  if (!off.ok()) return off.status();
  auto* n = reinterpret_cast<NodeHeader*>(base + *off);
  n->type = static_cast<uint8_t>(tag);
  n->prefix = PrefixWord(depth, prefix);
  n->prefix_base = static_cast<uint16_t>(depth);
  n->prefix_cap = static_cast<uint16_t>(prefix.size());
  n->end = end;
  std::memcpy(reinterpret_cast<char*>(n) + FixedSize(tag), prefix.data(), prefix.size());
  FillEntries(n, children);
  pc.flush(n, size);  // the caller fences before publishing
  return radix::MakeChild(*off, tag);
}

Result<uint64_t> BuildLeafArray(pm::PersistContext& pc, pm::Allocator& alloc, char* base,
                                uint32_t depth, const std::vector<uint64_t>& entries,
                                unsigned capacity) {
  if (capacity == 0) capacity = LeafArrayCapacityFor(entries.size());
  assert(entries.size() <= capacity && capacity <= kLeafArraySize);
  const size_t bytes = LeafArrayBytes(capacity);
  Result<uint64_t> off = alloc.allocate(bytes, /*zero=*/true);
  if (!off.ok()) return off.status();
  auto* la = reinterpret_cast<LeafArray*>(base + *off);
  la->type = static_cast<uint8_t>(kTagLeafArray);
  la->depth = static_cast<uint16_t>(depth);
  la->capacity = static_cast<uint16_t>(capacity);
  la->count = static_cast<uint8_t>(entries.size());
  std::memcpy(la->e, entries.data(), entries.size() * 8);
  // All of it, free slots included: a reused block holds old bytes there, which after a
  // crash would read as entries. The caller fences before publishing.
  pc.flush(la, pm::mutant("roart.array_tail_unflushed") ? 64 + 8 * entries.size() : bytes);
  return radix::MakeChild(*off, kTagLeafArray);
}

}  // namespace pmindex::roart
