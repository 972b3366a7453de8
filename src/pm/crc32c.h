// CRC32C (Castagnoli), computed with the SSE4.2 crc32 instruction (the build targets
// x86-64-v2, which has it). Written here rather than taken from a library because it sits on
// hot paths (RNTree's slot lines checksum every insert) where a call into a shared library
// per 64 bytes would cost more than the instruction itself; Debian ships no crc32c package.
#ifndef PMINDEX_PM_CRC32C_H_
#define PMINDEX_PM_CRC32C_H_

#include <nmmintrin.h>

#include <cstddef>
#include <cstdint>
#include <cstring>

namespace pmindex::pm {

// Extends `crc` (0 to start) with n bytes at p.
inline uint32_t crc32c_extend(uint32_t crc, const void* p, size_t n) {
  auto* b = static_cast<const unsigned char*>(p);
  uint64_t c = ~crc;
  while (n >= 8) {
    uint64_t w;
    std::memcpy(&w, b, 8);
    c = _mm_crc32_u64(c, w);
    b += 8;
    n -= 8;
  }
  uint32_t c32 = static_cast<uint32_t>(c);
  if (n >= 4) {  // same CRC as four byte steps, one dependent instruction instead of four
    uint32_t w;
    std::memcpy(&w, b, 4);
    c32 = _mm_crc32_u32(c32, w);
    b += 4;
    n -= 4;
  }
  while (n > 0) {
    c32 = _mm_crc32_u8(c32, *b++);
    --n;
  }
  return ~c32;
}

inline uint32_t crc32c(const void* p, size_t n) { return crc32c_extend(0, p, n); }

}  // namespace pmindex::pm

#endif  // PMINDEX_PM_CRC32C_H_
