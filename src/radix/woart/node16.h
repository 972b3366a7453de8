// WoartNode16: up to 16 children in unsorted slots with a bitmap of valid slots. A key and
// child are written into a free slot and persisted; setting the slot's bit (one 8-byte
// store) commits. Search is one SIMD compare masked by the bitmap.
//
//   offset  size  field       (192-byte block)
//   0       8     header      line 0   PrefixHeader word
//   8       8     end         line 0
//   16      8     bitmap      line 0   bits 0..15: slot i valid; other bits 0
//   24      16    keys[16]    line 0   (also read and written as two 8-byte key words)
//   40      128   child[16]   line 0: child[0..2], line 1: child[3..10], line 2: child[11..15]
#ifndef PMINDEX_RADIX_WOART_NODE16_H_
#define PMINDEX_RADIX_WOART_NODE16_H_

#include <emmintrin.h>

#include <cstddef>
#include <cstdint>

#include "pm/persist.h"
#include "pm/prefetch.h"
#include "radix/common/node_search.h"
#include "radix/common/pm_tree_util.h"

namespace pmindex::radix {

struct WoartNode16 {
  static constexpr unsigned kCapacity = 16;
  uint64_t header;
  uint64_t end;
  uint64_t bitmap;
  union {  // key_words: the same 16 bytes, as lock-free lookups load and writers store them
    uint8_t keys[kCapacity];
    uint64_t key_words[2];
  };
  uint64_t child[kCapacity];

  // Only bits 0..15 count (a corrupted word cannot index past the node; verify() reports it).
  uint64_t valid() const { return LoadWord(&bitmap) & 0xFFFF; }
  unsigned count() const { return __builtin_popcountll(valid()); }
  bool full() const { return count() == kCapacity; }

  uint64_t* Find(uint8_t b) {
    const unsigned m = Match16(keys, b) & static_cast<unsigned>(valid());
    return m ? &child[__builtin_ctz(m)] : nullptr;
  }

  // The child word of key b or 0, with atomic loads (lock-free lookups): the bitmap, then
  // the keys as two 8-byte words (a writer fills a free slot's key byte with an atomic store
  // of its word; the bitmap masks it until it is valid), then the child word.
  uint64_t Load(uint8_t b) const {
    const unsigned bm = static_cast<unsigned>(valid());
    const __m128i k = _mm_set_epi64x(static_cast<long long>(LoadWord(&key_words[1])),
                                     static_cast<long long>(LoadWord(&key_words[0])));
    const unsigned m = static_cast<unsigned>(_mm_movemask_epi8(
                           _mm_cmpeq_epi8(k, _mm_set1_epi8(static_cast<char>(b))))) &
                       bm;
    return m ? LoadWord(&child[__builtin_ctz(m)]) : 0;
  }

  uint64_t Any() const {
    const uint64_t bm = valid();
    return bm ? LoadWord(&child[__builtin_ctzll(bm)]) : 0;
  }

  // Calls f(key, child word) -> bool in key order from key `first`; false once f stops.
  template <typename F>
  bool ForEach(unsigned first, F&& f) const {
    // Slots are unsorted: a valid slot's place in key order is the number of valid keys
    // below its own (one SIMD compare each; keys of valid slots are distinct).
    const unsigned bm = static_cast<unsigned>(valid());
    uint8_t order[kCapacity] = {};  // stays in bounds even if a damaged node repeats a key
    unsigned n = 0;
    for (unsigned m = bm; m; m &= m - 1) {
      const unsigned slot = static_cast<unsigned>(__builtin_ctz(m));
      if (keys[slot] < first) continue;
      order[__builtin_popcount(Less16(keys, keys[slot]) & bm)] = static_cast<uint8_t>(slot);
      ++n;
    }
    // Ranks count keys below `first` too: the visited run starts after them.
    const unsigned skipped = static_cast<unsigned>(__builtin_popcount(bm)) - n;
    for (unsigned i = skipped; i < skipped + n; ++i)
      if (!f(keys[order[i]], child[order[i]])) return false;
    return true;
  }

  // The lines a scan reads to visit every child: all three.
  void PrefetchChildren() const { pm::PrefetchLines(this, 0, sizeof(*this)); }

  void BuildAdd(uint8_t b, uint64_t word) {
    const unsigned p = __builtin_ctzll(~bitmap);
    keys[p] = b;
    child[p] = word;
    bitmap |= uint64_t{1} << p;
  }

  // Key and child into a free slot, persisted; then the bitmap bit. 2 fences. The key byte
  // goes in with an atomic store of its whole key word (the other bytes unchanged: one
  // writer at a time), the child with an atomic store: lookups may read both concurrently.
  // The bitmap is read once, before the flushes: the key bytes share its line, and read after
  // their flush (which may evict the line) it waited for memory.
  void Add(pm::PersistContext& pc, uint8_t b, uint64_t word) {
    const uint64_t bm = bitmap;
    const unsigned p = __builtin_ctzll(~bm);
    const unsigned shift = 8 * (p % 8);
    StoreWord(&key_words[p / 8],
              (key_words[p / 8] & ~(uint64_t{0xFF} << shift)) | (uint64_t{b} << shift));
    StoreWord(&child[p], word);
    pc.flush(&keys[p], 1);
    pc.flush(&child[p], 8);
    pc.fence();
    CommitWord(pc, &bitmap, bm | (uint64_t{1} << p));
  }

  // Clears the key's bit. 1 fence.
  void Remove(pm::PersistContext& pc, uint8_t b) {
    const unsigned m = Match16(keys, b) & static_cast<unsigned>(bitmap);
    CommitWord(pc, &bitmap, bitmap & ~(uint64_t{1} << __builtin_ctz(m)));
  }
};
static_assert(sizeof(WoartNode16) == 168);
static_assert(offsetof(WoartNode16, bitmap) == 16);
static_assert(offsetof(WoartNode16, keys) == 24);
static_assert(offsetof(WoartNode16, child) == 40);

}  // namespace pmindex::radix

#endif  // PMINDEX_RADIX_WOART_NODE16_H_
