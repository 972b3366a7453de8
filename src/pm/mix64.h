// Mix64: the splitmix64 finalizer, a cheap bijective 64-bit mix. The one copy for everything
// that needs to scatter keys or derive seeds: the workbench's key scrambles, the crash
// campaign's and the crash tracker's seeds, the tests' key sources.
#ifndef PMINDEX_PM_MIX64_H_
#define PMINDEX_PM_MIX64_H_

#include <cstddef>
#include <cstdint>
#include <cstring>

namespace pmindex::pm {

inline uint64_t Mix64(uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

// A 64-bit hash of n bytes: Mix64 chained over the 8-byte words (the last one zero-padded),
// seeded with the length. The byte-key hash (FPTreeVar's fingerprint is its top byte; Dash's
// variable-length-key mode derives its KeyHash from it).
inline uint64_t Mix64Bytes(const void* p, size_t n) {
  const auto* c = static_cast<const unsigned char*>(p);
  uint64_t h = 0x9E3779B97F4A7C15ull ^ n;
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    uint64_t w;
    std::memcpy(&w, c + i, 8);
    h = Mix64(h ^ w);
  }
  if (i < n) {
    uint64_t w = 0;
    std::memcpy(&w, c + i, n - i);
    h = Mix64(h ^ w);
  }
  return h;
}

}  // namespace pmindex::pm

#endif  // PMINDEX_PM_MIX64_H_
