// Node48: up to 48 children behind a 256-byte child index (ROWEX's Node48). Child slots are
// taken in order (`used`) and not reused; a full node is copied under its parent's lock.
//
//   offset  size  field          (672 bytes, 11 lines)
//   0       24    NodeBase       line 0
//   24      8     used           line 0: child slots taken (0..48); writers only
//   32      256   index[256]     lines 0..4: slot + 1 of key b's child, 0 = absent (read and
//                                written as 32 index words)
//   288     384   child[48]      lines 4..10
//
// Crash argument (Add): the child word and the raised `used` are persisted (with the leaf)
// before the index byte that names the slot, the commit (an 8-byte store of its index word).
// A crash before it leaves a taken slot no index byte names: its leaf is unreachable (freed
// by the allocator rebuild) and the slot is skipped until the node is copied. Remove clears
// the index byte (1 fence); the child word is never followed again.
#ifndef PMINDEX_RADIX_PART_NODE48_H_
#define PMINDEX_RADIX_PART_NODE48_H_

#include <cassert>
#include <cstddef>
#include <cstdint>

#include "pm/persist.h"
#include "pm/prefetch.h"
#include "radix/common/pm_tree_util.h"
#include "radix/part/part_node.h"

namespace pmindex::radix::part {

struct Node48 {
  static constexpr unsigned kCapacity = 48;
  static constexpr uint64_t kTag = kTagNode48;
  NodeBase base;
  uint64_t used;
  union {  // index_words: the same bytes, as readers load and writers store them
    uint8_t index[256];
    uint64_t index_words[32];
  };
  uint64_t child[kCapacity];

  // Slot + 1 of key b (0: absent), clamped to the node (Check reports a damaged byte).
  unsigned SlotOf(uint8_t b) const {
    const unsigned i = ByteOf(LoadWord(&index_words[b / 8]), b % 8);
    return i <= kCapacity ? i : 0;
  }
  uint64_t Load(uint8_t b) const {
    const unsigned i = SlotOf(b);
    return i ? LoadWord(&child[i - 1]) : 0;
  }
  uint64_t* Find(uint8_t b) {
    const unsigned i = SlotOf(b);
    return i ? &child[i - 1] : nullptr;
  }
  bool HasRoom() const { return LoadWord(&used) < kCapacity; }
  unsigned Live() const {
    unsigned n = 0;
    for (unsigned w = 0; w < 32; ++w) {
      const uint64_t x = LoadWord(&index_words[w]);
      for (unsigned j = 0; j < 8; ++j) n += ByteOf(x, j) != 0;
    }
    return n;
  }
  uint64_t Any() const {
    uint64_t c = 0;
    ForEach(0, [&](uint8_t, uint64_t w) {
      c = w;
      return false;
    });
    return c;
  }
  template <typename F>
  bool ForEach(unsigned first, F&& f) const {
    for (unsigned w = first / 8; w < 32; ++w) {
      const uint64_t x = LoadWord(&index_words[w]);
      if (x == 0) continue;
      for (unsigned j = 0; j < 8; ++j) {
        const unsigned b = 8 * w + j;
        const unsigned i = ByteOf(x, j);
        if (i == 0 || i > kCapacity || b < first) continue;
        const uint64_t c = LoadWord(&child[i - 1]);
        if (c != 0 && !f(static_cast<uint8_t>(b), c)) return false;
      }
    }
    return true;
  }
  void PrefetchChildren() const { pm::PrefetchLines(this, 0, sizeof(*this)); }

  void BuildAdd(uint8_t b, uint64_t word) {
    assert(used < kCapacity);
    child[used] = word;
    index[b] = static_cast<uint8_t>(++used);
  }
  // Child word and `used` persisted (with the leaf the caller flushed), then the index
  // byte. 2 fences.
  void Add(pm::PersistContext& pc, uint8_t b, uint64_t word) {
    const uint64_t p = used;
    assert(p < kCapacity && "Add into a full Node48");
    StoreWord(&child[p], word);
    StoreWord(&used, p + 1);
    pc.flush(&child[p], 8);
    pc.flush(&used, 8);
    pc.fence();
    uint64_t* iw = &index_words[b / 8];
    CommitWord(pc, iw, WithByte(*iw, b % 8, static_cast<uint8_t>(p + 1)));
  }
  void Remove(pm::PersistContext& pc, uint8_t b) {
    uint64_t* iw = &index_words[b / 8];
    CommitWord(pc, iw, WithByte(*iw, b % 8, 0));
  }
  const char* Check() const {
    if (LoadWord(&used) > kCapacity) return "Node48 slots taken beyond 48";
    uint64_t named = 0;
    for (unsigned b = 0; b < 256; ++b) {
      const unsigned i = ByteOf(LoadWord(&index_words[b / 8]), b % 8);
      if (i == 0) continue;
      if (i > LoadWord(&used)) return "Node48 index names an untaken slot";
      if (named & (uint64_t{1} << (i - 1))) return "Node48 slot named twice";
      named |= uint64_t{1} << (i - 1);
    }
    return nullptr;
  }
};
static_assert(sizeof(Node48) == 672);
static_assert(offsetof(Node48, used) == 24);
static_assert(offsetof(Node48, index) == 32);
static_assert(offsetof(Node48, child) == 288);

}  // namespace pmindex::radix::part

#endif  // PMINDEX_RADIX_PART_NODE48_H_
