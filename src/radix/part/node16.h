// Node16: up to 16 children in append-only slots (ROWEX's Node16): a count of slots used,
// their key bytes and their child words. A slot's key byte and child word are written and
// persisted before the count that makes the slot visible; a removed slot keeps its key with
// a child word of 0 and is not reused (a full node is copied under its parent's lock).
//
//   offset  size  field        (176 bytes, 3 lines)
//   0       24    NodeBase     line 0
//   24      8     count        line 0: slots used (0..16) in byte 0, other bytes 0
//   32      16    keys[16]     line 0 (read and written as two 8-byte key words)
//   48      128   child[16]    line 0: child[0..1], line 1: child[2..9], line 2: child[10..15]
//
// Crash argument (Add): key and child of the next slot lie on different lines from slot 2
// on; both are persisted (with the leaf) before the count is raised with one store, so no
// crash leaves a counted slot whose key or child did not reach media.
#ifndef PMINDEX_RADIX_PART_NODE16_H_
#define PMINDEX_RADIX_PART_NODE16_H_

#include <emmintrin.h>

#include <cassert>
#include <cstddef>
#include <cstdint>

#include "pm/mutant.h"
#include "pm/persist.h"
#include "pm/prefetch.h"
#include "radix/common/pm_tree_util.h"
#include "radix/part/part_node.h"

namespace pmindex::radix::part {

struct Node16 {
  static constexpr unsigned kCapacity = 16;
  static constexpr uint64_t kTag = kTagNode16;
  NodeBase base;
  uint64_t count;
  union {  // key_words: the same 16 bytes, as readers load and writers store them
    uint8_t keys[kCapacity];
    uint64_t key_words[2];
  };
  uint64_t child[kCapacity];

  static unsigned Used(uint64_t c) { return c <= kCapacity ? static_cast<unsigned>(c) : kCapacity; }
  // Bits of the used slots whose key is b (atomic loads of the count, then the keys).
  unsigned Matches(uint8_t b, unsigned* used) const {
    *used = Used(LoadWord(&count));
    const __m128i k = _mm_set_epi64x(static_cast<long long>(LoadWord(&key_words[1])),
                                     static_cast<long long>(LoadWord(&key_words[0])));
    const unsigned m = static_cast<unsigned>(
        _mm_movemask_epi8(_mm_cmpeq_epi8(k, _mm_set1_epi8(static_cast<char>(b)))));
    return m & ((1u << *used) - 1);
  }
  uint8_t KeyAt(unsigned i) const { return ByteOf(LoadWord(&key_words[i / 8]), i % 8); }

  uint64_t Load(uint8_t b) const {
    unsigned used;
    for (unsigned m = Matches(b, &used); m; m &= m - 1)
      if (const uint64_t c = LoadWord(&child[__builtin_ctz(m)])) return c;
    return 0;
  }
  uint64_t* Find(uint8_t b) {
    unsigned used;
    for (unsigned m = Matches(b, &used); m; m &= m - 1)
      if (child[__builtin_ctz(m)] != 0) return &child[__builtin_ctz(m)];
    return nullptr;
  }
  bool HasRoom() const { return Used(LoadWord(&count)) < kCapacity; }
  unsigned Live() const {
    unsigned n = 0;
    for (unsigned i = 0, u = Used(LoadWord(&count)); i < u; ++i) n += LoadWord(&child[i]) != 0;
    return n;
  }
  uint64_t Any() const {
    for (unsigned i = 0, u = Used(LoadWord(&count)); i < u; ++i)
      if (const uint64_t c = LoadWord(&child[i])) return c;
    return 0;
  }
  template <typename F>
  bool ForEach(unsigned first, F&& f) const {
    uint8_t ks[kCapacity];
    uint64_t kids[kCapacity];
    unsigned n = 0;
    for (unsigned i = 0, u = Used(LoadWord(&count)); i < u; ++i) {
      const uint64_t c = LoadWord(&child[i]);
      const uint8_t k = KeyAt(i);
      if (c == 0 || k < first) continue;
      ks[n] = k;
      kids[n++] = c;
    }
    SortPairs(ks, kids, n);
    for (unsigned i = 0; i < n; ++i)
      if (!f(ks[i], kids[i])) return false;
    return true;
  }
  void PrefetchChildren() const { pm::PrefetchLines(this, 0, sizeof(*this)); }

  void BuildAdd(uint8_t b, uint64_t word) {
    const unsigned n = Used(count);
    assert(n < kCapacity);
    keys[n] = b;
    child[n] = word;
    count = n + 1;
  }
  // Key byte and child word into the next slot, persisted (with the leaf the caller
  // flushed); then the count. 2 fences.
  void Add(pm::PersistContext& pc, uint8_t b, uint64_t word) {
    const unsigned n = Used(count);
    assert(n < kCapacity && "Add into a full Node16");
    if (pm::mutant(kCountBeforeEntry)) {
      // The published P-ART ordering: the count goes first, the entry after it unordered.
      CommitWord(pc, &count, n + 1);
      StoreWord(&key_words[n / 8], WithByte(key_words[n / 8], n % 8, b));
      StoreWord(&child[n], word);
      pc.flush(&keys[n], 1);
      pc.flush(&child[n], 8);
      return;
    }
    StoreWord(&key_words[n / 8], WithByte(key_words[n / 8], n % 8, b));
    StoreWord(&child[n], word);
    pc.flush(&keys[n], 1);
    pc.flush(&child[n], 8);
    pc.fence();
    CommitWord(pc, &count, n + 1);
  }
  void Remove(pm::PersistContext& pc, uint8_t b) {
    uint64_t* c = Find(b);
    assert(c != nullptr);
    CommitWord(pc, c, 0);
  }
  const char* Check() const {
    return LoadWord(&count) > kCapacity ? "Node16 slot count beyond 16" : nullptr;
  }
};
static_assert(sizeof(Node16) == 176);
static_assert(offsetof(Node16, count) == 24);
static_assert(offsetof(Node16, keys) == 32);
static_assert(offsetof(Node16, child) == 48);

}  // namespace pmindex::radix::part

#endif  // PMINDEX_RADIX_PART_NODE16_H_
