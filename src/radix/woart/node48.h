// WoartNode48: up to 48 children behind a 256-byte child index. A child word is persisted
// into a free slot before the key's index byte (a 1-byte, hence failure-atomic, store) names
// it; clearing the index byte removes the key.
//
//   offset  size  field        (768-byte block)
//   0       8     header       line 0
//   8       8     end          line 0
//   16      256   index[256]   lines 0..4: slot + 1 of key b's child, 0 = absent
//   272     384   child[48]    lines 4..10
// Free-slot hint: a slot whose child word is 0 is free. Remove clears the index byte (the
// commit, persisted) and only then zeroes the child word, without a fence of its own; a crash
// before that zero is durable leaves a nonzero word no index byte names, which merely keeps
// that slot from being reused (the node grows one insert earlier). The reverse state, an
// index byte naming a zero word, cannot arise, because a slot is named only after its child
// word is persisted, and zeroed only after it is no longer named.
#ifndef PMINDEX_RADIX_WOART_NODE48_H_
#define PMINDEX_RADIX_WOART_NODE48_H_

#include <emmintrin.h>

#include <atomic>
#include <cstddef>
#include <cstdint>

#include "pm/persist.h"
#include "pm/prefetch.h"
#include "radix/common/pm_tree_util.h"

namespace pmindex::radix {

struct WoartNode48 {
  static constexpr unsigned kCapacity = 48;
  uint64_t header;
  uint64_t end;
  uint8_t index[256];
  uint64_t child[kCapacity];

  uint64_t used_slots() const {
    uint64_t used = 0;
    for (unsigned b = 0; b < 256; ++b)
      if (index[b] && index[b] <= kCapacity) used |= uint64_t{1} << (index[b] - 1);
    return used;
  }
  // Nonzero index bytes, 16 at a time (drives grow/shrink only; verify() checks the index).
  unsigned count() const {
    unsigned zero = 0;
    for (unsigned b = 0; b < 256; b += 16) {
      const __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(index + b));
      zero += __builtin_popcount(_mm_movemask_epi8(_mm_cmpeq_epi8(v, _mm_setzero_si128())));
    }
    return 256 - zero;
  }
  // First slot with a zero child word, or kCapacity.
  unsigned free_slot() const {
    for (unsigned p = 0; p < kCapacity; ++p)
      if (child[p] == 0) return p;
    return kCapacity;
  }
  bool full() const { return free_slot() == kCapacity; }

  uint64_t* Find(uint8_t b) {
    const uint8_t i = index[b];
    return i && i <= kCapacity ? &child[i - 1] : nullptr;
  }

  // The index byte of key b, with an atomic load (lock-free lookups meet writers here).
  uint8_t LoadIndex(unsigned b) const {
    return std::atomic_ref<uint8_t>(const_cast<uint8_t&>(index[b])).load(std::memory_order_acquire);
  }

  // The child word of key b or 0, with atomic loads (lock-free lookups). A child word read
  // through an index byte a writer has since cleared may be 0 or belong to another key (its
  // slot was reused): the lookup's key compare at the leaf rejects it.
  uint64_t Load(uint8_t b) const {
    const uint8_t i = LoadIndex(b);
    return i && i <= kCapacity ? LoadWord(&child[i - 1]) : 0;
  }

  uint64_t Any() const {
    for (unsigned b = 0; b < 256; ++b)
      if (const uint8_t i = LoadIndex(b); i && i <= kCapacity) return LoadWord(&child[i - 1]);
    return 0;
  }

  // Calls f(key, child word) -> bool in key order from key `first`; false once f stops.
  template <typename F>
  bool ForEach(unsigned first, F&& f) const {
    // Index bytes beyond kCapacity (corruption, reported by verify()) are skipped. The index
    // is read 16 bytes at a time (NonZero16).
    for (unsigned base = first & ~15u; base < 256; base += 16) {
      unsigned set = NonZero16(index + base);
      if (base < first) set &= ~0u << (first - base);
      for (; set != 0; set &= set - 1) {
        const unsigned b = base + static_cast<unsigned>(__builtin_ctz(set));
        if (index[b] <= kCapacity && !f(static_cast<uint8_t>(b), child[index[b] - 1]))
          return false;
      }
    }
    return true;
  }

  // The lines a scan reads to visit every child: the index and the child slots, all eleven.
  void PrefetchChildren() const { pm::PrefetchLines(this, 0, sizeof(*this)); }

  void BuildAdd(uint8_t b, uint64_t word) {
    const unsigned p = free_slot();
    child[p] = word;
    index[b] = static_cast<uint8_t>(p + 1);
  }

  // Child into a free slot, persisted; then the index byte. 2 fences.
  void Add(pm::PersistContext& pc, uint8_t b, uint64_t word) {
    const unsigned p = free_slot();
    StoreWord(&child[p], word);  // a free slot, but a lookup may read it through an old index byte
    pc.flush(&child[p], 8);
    pc.fence();
    std::atomic_ref<uint8_t>(index[b]).store(static_cast<uint8_t>(p + 1),
                                              std::memory_order_release);
    pc.persist(&index[b], 1);
  }

  // Clears the index byte (1 fence), then frees the slot's child word (no fence: the next
  // fence of any operation orders it; if it is lost the slot just stays unused).
  void Remove(pm::PersistContext& pc, uint8_t b) {
    const unsigned p = index[b] - 1;
    std::atomic_ref<uint8_t>(index[b]).store(0, std::memory_order_release);
    pc.persist(&index[b], 1);
    StoreWord(&child[p], 0);
    pc.flush(&child[p], 8);
  }
};
static_assert(sizeof(WoartNode48) == 656);
static_assert(offsetof(WoartNode48, index) == 16);
static_assert(offsetof(WoartNode48, child) == 272);

}  // namespace pmindex::radix

#endif  // PMINDEX_RADIX_WOART_NODE48_H_
