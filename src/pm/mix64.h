// Mix64: the splitmix64 finalizer, a cheap bijective 64-bit mix. The one copy for everything
// that needs to scatter keys or derive seeds: the workbench's key scrambles, the crash
// campaign's and the crash tracker's seeds, the tests' key sources.
#ifndef PMINDEX_PM_MIX64_H_
#define PMINDEX_PM_MIX64_H_

#include <cstdint>

namespace pmindex::pm {

inline uint64_t Mix64(uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

}  // namespace pmindex::pm

#endif  // PMINDEX_PM_MIX64_H_
