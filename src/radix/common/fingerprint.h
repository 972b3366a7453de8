// The 2-byte key fingerprint of the radix trees' leaf arrays (PFtree keeps it in DRAM,
// ROART in the persistent entry word beside the leaf's offset): a hash of the whole key, so a
// probe reads the key of an entry only when the fingerprints agree.
//
// Its value is part of ROART's on-media format (doc/format.md): never change the function.
//
// Thread safety: a pure function.
#ifndef PMINDEX_RADIX_COMMON_FINGERPRINT_H_
#define PMINDEX_RADIX_COMMON_FINGERPRINT_H_

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string_view>

namespace pmindex::radix {

// Inline: every operation of a leaf-array tree computes one.
inline uint16_t Fingerprint16(std::string_view key) {
  uint64_t h = 0x9E3779B97F4A7C15ull ^ key.size();
  const char* p = key.data();
  size_t n = key.size();
  while (n >= 8) {
    uint64_t w;
    std::memcpy(&w, p, 8);
    h = (h ^ w) * 0xFF51AFD7ED558CCDull;
    p += 8;
    n -= 8;
  }
  if (n > 0) {
    uint64_t w = 0;
    std::memcpy(&w, p, n);
    h = (h ^ w) * 0xFF51AFD7ED558CCDull;
  }
  h ^= h >> 32;
  h ^= h >> 16;
  return static_cast<uint16_t>(h);
}

}  // namespace pmindex::radix

#endif  // PMINDEX_RADIX_COMMON_FINGERPRINT_H_
