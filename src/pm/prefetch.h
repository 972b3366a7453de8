// Software prefetch that the compiler keeps.
//
// __builtin_prefetch has no side effects as far as GCC is concerned, so a loop whose body
// only prefetches (prefetch the lines of a block, prefetch the children of a node) is an
// empty loop and is deleted, and with a whole path inlined GCC 12 also dropped single
// prefetches (measured: wbtree's eadr insert 320 -> 452 ns without its leaf prefetch; every
// radix scan prefetch was absent from the binary). A volatile asm is never deleted.
#ifndef PMINDEX_PM_PREFETCH_H_
#define PMINDEX_PM_PREFETCH_H_

#include <cstddef>

namespace pmindex::pm {

// Requests the cache line holding p.
inline void PrefetchLine(const void* p) {
  asm volatile("prefetcht0 %0" : : "m"(*static_cast<const char*>(p)));
}

// Requests the cache lines of bytes [from, to) of the object at p, all at once.
inline void PrefetchLines(const void* p, size_t from, size_t to) {
  for (size_t off = from; off < to; off += 64) PrefetchLine(static_cast<const char*>(p) + off);
}

}  // namespace pmindex::pm

#endif  // PMINDEX_PM_PREFETCH_H_
