// WoartNode256: one child word per key byte; insert and remove are one 8-byte store.
//
//   offset  size  field        (2560-byte block)
//   0       8     header       line 0
//   8       8     end          line 0
//   16      2048  child[256]   lines 0..32
#ifndef PMINDEX_RADIX_WOART_NODE256_H_
#define PMINDEX_RADIX_WOART_NODE256_H_

#include <smmintrin.h>

#include <cstddef>
#include <cstdint>

#include "pm/persist.h"
#include "pm/prefetch.h"
#include "radix/common/pm_tree_util.h"

namespace pmindex::radix {

struct WoartNode256 {
  static constexpr unsigned kCapacity = 256;
  uint64_t header;
  uint64_t end;
  uint64_t child[256];

  unsigned count() const {
    unsigned zero = 0;
    for (unsigned b = 0; b < 256; b += 2) {
      const __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(child + b));
      zero += __builtin_popcount(_mm_movemask_pd(
          _mm_castsi128_pd(_mm_cmpeq_epi64(v, _mm_setzero_si128()))));
    }
    return 256 - zero;
  }
  bool full() const { return false; }

  uint64_t* Find(uint8_t b) { return child[b] ? &child[b] : nullptr; }

  // The child word of key b or 0, with an atomic load (lock-free lookups).
  uint64_t Load(uint8_t b) const { return LoadWord(&child[b]); }

  uint64_t Any() const {
    for (unsigned b = 0; b < 256; ++b)
      if (const uint64_t w = LoadWord(&child[b]); w != 0) return w;
    return 0;
  }

  // Calls f(key, child word) -> bool in key order from key `first`; false once f stops.
  template <typename F>
  bool ForEach(unsigned first, F&& f) const {
    for (unsigned b = first; b < 256; ++b)
      if (child[b] && !f(static_cast<uint8_t>(b), child[b])) return false;
    return true;
  }

  // The first 8 of the 33 lines a scan reads to visit every child (header and children
  // 0..61): the rest are read in order, which the hardware prefetcher follows, and a scan of
  // a few keys needs no more.
  void PrefetchChildren() const { pm::PrefetchLines(this, 0, 8 * 64); }

  void BuildAdd(uint8_t b, uint64_t word) { child[b] = word; }
  // The caller has flushed the leaf: fence, then the child word. 2 fences.
  void Add(pm::PersistContext& pc, uint8_t b, uint64_t word) {
    pc.fence();
    CommitWord(pc, &child[b], word);
  }
  void Remove(pm::PersistContext& pc, uint8_t b) { CommitWord(pc, &child[b], 0); }
};
static_assert(sizeof(WoartNode256) == 2064);
static_assert(offsetof(WoartNode256, child) == 16);

}  // namespace pmindex::radix

#endif  // PMINDEX_RADIX_WOART_NODE256_H_
