// Software prefetch that the compiler keeps.
//
// GCC treats __builtin_prefetch as free of side effects, so a pass whose only work is
// prefetching can vanish: the radix scans' prefetch pass over a node's children (a loop that
// only prefetched and counted) was deleted whole, and with the B+tree write path inlined
// into one function GCC 12 dropped the leaf prefetches (measured: wbtree's eadr insert
// 320 -> 452 ns without them). A volatile asm is never deleted; the library prefetches only
// through these two functions.
//
// EvictLines is the opposite request, for measurements only: it writes back and invalidates
// lines so that the next access misses (the primitive lab's uncached experiments). It is not
// a persist: it is not counted, the crash tracker does not see it, and no index calls it
// (indexes persist through persist.h).
#ifndef PMINDEX_PM_PREFETCH_H_
#define PMINDEX_PM_PREFETCH_H_

#include <cstddef>

namespace pmindex::pm {

// Requests the cache line holding p.
inline void PrefetchLine(const void* p) {
  asm volatile("prefetcht0 %0" : : "m"(*static_cast<const char*>(p)));
}

// Requests the cache lines of bytes [from, to) of the object at p, all at once. Unrolled:
// with constant bounds it is one instruction per line.
[[gnu::always_inline]] inline void PrefetchLines(const void* p, size_t from, size_t to) {
#pragma GCC unroll 64
  for (size_t off = from; off < to; off += 64) PrefetchLine(static_cast<const char*>(p) + off);
}

// Writes back and invalidates the cache lines of [p, p + n), then waits for it (mfence).
inline void EvictLines(const void* p, size_t n) {
  const char* c = static_cast<const char*>(p);
  for (size_t i = 0; i < n; i += 64) asm volatile("clflush %0" : "+m"(*const_cast<char*>(c + i)));
  asm volatile("mfence" ::: "memory");
}

}  // namespace pmindex::pm

#endif  // PMINDEX_PM_PREFETCH_H_
