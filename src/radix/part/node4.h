// Node4: up to 4 children in append-only slots (ROWEX's Node4). The slot word holds the
// number of slots used and their key bytes, so one 8-byte store publishes a slot's key and
// makes it count at once; a removed slot keeps its key with a child word of 0 and is not
// reused (a full node is copied, compacted or grown, under its parent's lock).
//
//   offset  size  field      (64-byte block, one line)
//   0       24    NodeBase   lock, header, end
//   24      8     slots      byte 0: slots used (0..4); bytes 1..4: key byte of each slot
//   32      32    child[4]   child word of each slot; 0 = removed (or not yet used)
//
// Crash argument (Add): the child word of the next slot is written and persisted (with the
// leaf, flushed by the caller) before the slot word that counts it; a crash before that
// store leaves the slot unused and its leaf unreachable (the allocator rebuild frees it).
#ifndef PMINDEX_RADIX_PART_NODE4_H_
#define PMINDEX_RADIX_PART_NODE4_H_

#include <cassert>
#include <cstddef>
#include <cstdint>

#include "pm/mutant.h"
#include "pm/persist.h"
#include "pm/prefetch.h"
#include "radix/common/pm_tree_util.h"
#include "radix/part/part_node.h"

namespace pmindex::radix::part {

struct Node4 {
  static constexpr unsigned kCapacity = 4;
  static constexpr uint64_t kTag = kTagNode4;
  NodeBase base;
  uint64_t slots;
  uint64_t child[kCapacity];

  // Clamped: a damaged slot word cannot index past the node (Check reports it).
  static unsigned Used(uint64_t s) { return (s & 0xFF) <= kCapacity ? (s & 0xFF) : kCapacity; }
  static uint8_t KeyAt(uint64_t s, unsigned i) { return ByteOf(s, 1 + i); }

  // The child word of key b or 0 (lock-free readers: atomic loads). A removed slot may
  // carry b too; the live one comes later.
  uint64_t Load(uint8_t b) const {
    const uint64_t s = LoadWord(&slots);
    for (unsigned i = 0, n = Used(s); i < n; ++i) {
      if (KeyAt(s, i) != b) continue;
      if (const uint64_t c = LoadWord(&child[i])) return c;
    }
    return 0;
  }
  // The live child word of key b, or nullptr (writers, under the node's lock).
  uint64_t* Find(uint8_t b) {
    const uint64_t s = slots;
    for (unsigned i = 0, n = Used(s); i < n; ++i)
      if (KeyAt(s, i) == b && child[i] != 0) return &child[i];
    return nullptr;
  }
  bool HasRoom() const { return Used(LoadWord(&slots)) < kCapacity; }
  unsigned Live() const {
    unsigned n = 0;
    for (unsigned i = 0, u = Used(LoadWord(&slots)); i < u; ++i) n += LoadWord(&child[i]) != 0;
    return n;
  }
  uint64_t Any() const {
    for (unsigned i = 0, u = Used(LoadWord(&slots)); i < u; ++i)
      if (const uint64_t c = LoadWord(&child[i])) return c;
    return 0;
  }
  // f(key, child word) -> bool for the live children in key order from key `first`.
  template <typename F>
  bool ForEach(unsigned first, F&& f) const {
    const uint64_t s = LoadWord(&slots);
    uint8_t keys[kCapacity];
    uint64_t kids[kCapacity];
    unsigned n = 0;
    for (unsigned i = 0, u = Used(s); i < u; ++i) {
      const uint64_t c = LoadWord(&child[i]);
      if (c == 0 || KeyAt(s, i) < first) continue;
      keys[n] = KeyAt(s, i);
      kids[n++] = c;
    }
    SortPairs(keys, kids, n);
    for (unsigned i = 0; i < n; ++i)
      if (!f(keys[i], kids[i])) return false;
    return true;
  }
  void PrefetchChildren() const { pm::PrefetchLine(this); }

  // Into an unpublished node (the caller persists it whole).
  void BuildAdd(uint8_t b, uint64_t word) {
    const unsigned n = Used(slots);
    assert(n < kCapacity);
    child[n] = word;
    slots = WithByte(slots, 1 + n, b) + 1;
  }
  // Into a live node with room, under its lock: the child word persisted (with the leaf the
  // caller flushed), then the slot word that counts it. 2 fences.
  void Add(pm::PersistContext& pc, uint8_t b, uint64_t word) {
    const uint64_t s = slots;
    const unsigned n = Used(s);
    assert(n < kCapacity && "Add into a full Node4");
    const uint64_t next = WithByte(s, 1 + n, b) + 1;
    if (pm::mutant(kCountBeforeEntry)) {
      // The published P-ART ordering: the count and key are made visible (and durable)
      // before the child they cover is persisted.
      CommitWord(pc, &slots, next);
      StoreWord(&child[n], word);
      pc.flush(&child[n], 8);
      return;
    }
    StoreWord(&child[n], word);  // an unused slot, but lookups may read it: atomic
    pc.flush(&child[n], 8);
    pc.fence();
    CommitWord(pc, &slots, next);
  }
  // Removes live key b: its child word cleared with one store. 1 fence.
  void Remove(pm::PersistContext& pc, uint8_t b) {
    uint64_t* c = Find(b);
    assert(c != nullptr);
    CommitWord(pc, c, 0);
  }
  const char* Check() const {
    return (LoadWord(&slots) & 0xFF) > kCapacity ? "Node4 slot count beyond 4" : nullptr;
  }
};
static_assert(sizeof(Node4) == 64);
static_assert(offsetof(Node4, slots) == 24);
static_assert(offsetof(Node4, child) == 32);

}  // namespace pmindex::radix::part

#endif  // PMINDEX_RADIX_PART_NODE4_H_
