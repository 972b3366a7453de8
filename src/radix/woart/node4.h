// WoartNode4: up to 4 children, one cache line. Its slot word holds the count, the sorted
// keys and which physical child slot each key uses, so one 8-byte store commits an insert
// or a remove (WOART's Node4 with an atomic slot array).
//
//   offset  size  field      (64-byte block, line 0 only)
//   0       8     header     PrefixHeader word
//   8       8     end        leaf of the key that ends at this node
//   16      8     slots      byte 0: count (0..4); bytes 1..4: keys in ascending order;
//                            byte 5: 2-bit physical child index of each sorted key; 6..7: 0
//   24      32    child[4]   physical child words; only those named by `slots` are live
#ifndef PMINDEX_RADIX_WOART_NODE4_H_
#define PMINDEX_RADIX_WOART_NODE4_H_

#include <cassert>
#include <cstddef>
#include <cstdint>

#include "pm/persist.h"
#include "pm/prefetch.h"
#include "radix/common/pm_tree_util.h"

namespace pmindex::radix {

struct WoartNode4 {
  static constexpr unsigned kCapacity = 4;
  uint64_t header;
  uint64_t end;
  uint64_t slots;
  uint64_t child[kCapacity];

  // Clamped so that a corrupted slot word cannot index past the node (verify() reports it).
  static unsigned Count(uint64_t s) { return (s & 0xFF) <= kCapacity ? (s & 0xFF) : kCapacity; }
  static unsigned RawCount(uint64_t s) { return s & 0xFF; }
  static uint8_t KeyAt(uint64_t s, unsigned i) { return static_cast<uint8_t>(s >> (8 + 8 * i)); }
  static unsigned IndexAt(uint64_t s, unsigned i) { return (s >> (40 + 2 * i)) & 3; }
  static uint64_t Make(unsigned count, const uint8_t* keys, const uint8_t* idx) {
    uint64_t s = count;
    for (unsigned i = 0; i < count; ++i)
      s |= (uint64_t{keys[i]} << (8 + 8 * i)) | (uint64_t{idx[i]} << (40 + 2 * i));
    return s;
  }

  unsigned count() const { return Count(LoadWord(&slots)); }
  bool full() const { return count() == kCapacity; }

  uint64_t* Find(uint8_t b) {
    const uint64_t s = LoadWord(&slots);
    for (unsigned i = 0, n = Count(s); i < n; ++i)
      if (KeyAt(s, i) == b) return &child[IndexAt(s, i)];
    return nullptr;
  }

  // The child word of key b or 0, with atomic loads (lock-free lookups). A child word read
  // through a slot word a writer has since replaced may belong to another key (its slot was
  // reused): the lookup's key compare at the leaf rejects it.
  uint64_t Load(uint8_t b) const {
    const uint64_t s = LoadWord(&slots);
    for (unsigned i = 0, n = Count(s); i < n; ++i)
      if (KeyAt(s, i) == b) return LoadWord(&child[IndexAt(s, i)]);
    return 0;
  }

  // Some child word (0 if none), for reading a key below the node.
  uint64_t Any() const {
    const uint64_t s = LoadWord(&slots);
    return Count(s) ? LoadWord(&child[IndexAt(s, 0)]) : 0;
  }

  // Calls f(key, child word) -> bool in key order from key `first`; false once f stops.
  template <typename F>
  bool ForEach(unsigned first, F&& f) const {
    const uint64_t s = LoadWord(&slots);
    for (unsigned i = 0, n = Count(s); i < n; ++i)
      if (KeyAt(s, i) >= first && !f(KeyAt(s, i), child[IndexAt(s, i)])) return false;
    return true;
  }

  // The lines a scan reads to visit every child: the node's one line.
  void PrefetchChildren() const { pm::PrefetchLine(this); }

  // Adds b -> word to an unpublished node (the caller persists the whole node).
  void BuildAdd(uint8_t b, uint64_t word) { Insert(nullptr, b, word, /*publish=*/false); }

  // Adds b -> word to a live node that is not full: the child is written into a free
  // physical slot and persisted, then the slot word is committed with one 8-byte store.
  // The caller has flushed the leaf; this fence covers it. 2 fences.
  void Add(pm::PersistContext& pc, uint8_t b, uint64_t word) {
    Insert(&pc, b, word, /*publish=*/true);
  }

  // Removes key b (present) with one 8-byte store of the slot word. 1 fence.
  void Remove(pm::PersistContext& pc, uint8_t b) {
    const uint64_t s = slots;
    uint8_t keys[kCapacity], idx[kCapacity];
    unsigned n = 0;
    for (unsigned i = 0; i < Count(s); ++i) {
      if (KeyAt(s, i) == b) continue;
      keys[n] = KeyAt(s, i);
      idx[n++] = static_cast<uint8_t>(IndexAt(s, i));
    }
    CommitWord(pc, &slots, Make(n, keys, idx));
  }

 private:
  // pc: the pool's seam when publish (unused when building an unpublished node).
  void Insert(pm::PersistContext* pc, uint8_t b, uint64_t word, bool publish) {
    const uint64_t s = slots;
    const unsigned n = Count(s);
    assert(n < kCapacity && "Insert into a full Node4");
    if (n >= kCapacity) __builtin_unreachable();  // what the assert checks, for the optimizer
    unsigned used = 0;
    uint8_t keys[kCapacity], idx[kCapacity];
    unsigned out = 0;
    bool placed = false;
    for (unsigned i = 0; i < n; ++i) used |= 1u << IndexAt(s, i);
    const uint8_t phys = static_cast<uint8_t>(__builtin_ctz(~used));
    for (unsigned i = 0; i < n; ++i) {
      if (!placed && b < KeyAt(s, i)) {
        keys[out] = b;
        idx[out++] = phys;
        placed = true;
      }
      keys[out] = KeyAt(s, i);
      idx[out++] = static_cast<uint8_t>(IndexAt(s, i));
    }
    if (!placed) {
      keys[out] = b;
      idx[out++] = phys;
    }
    const uint64_t next = Make(out, keys, idx);
    if (!publish) {
      child[phys] = word;
      slots = next;
      return;
    }
    if (pm::mutant("woart.header_and_child_two_stores")) {
      // The published WOART ordering bug: the slot word (the node's header of valid slots)
      // is committed before the child it names is durable.
      CommitWord(*pc, &slots, next);
      StoreWord(&child[phys], word);
      pc->persist(&child[phys], 8);
      return;
    }
    // A free slot, but a lookup may read it through an old slot word: atomic.
    StoreWord(&child[phys], word);
    pc->flush(&child[phys], 8);
    pc->fence();
    CommitWord(*pc, &slots, next);
  }
};
static_assert(sizeof(WoartNode4) == 56);
static_assert(offsetof(WoartNode4, slots) == 16);
static_assert(offsetof(WoartNode4, child) == 24);

}  // namespace pmindex::radix

#endif  // PMINDEX_RADIX_WOART_NODE4_H_
