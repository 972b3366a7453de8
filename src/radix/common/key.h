// Key and value handling shared by the radix trees (ART, WORT, WOART; PFtree may use it).
//
// Keys are byte strings compared as unsigned bytes (memcmp order, a shorter key before any
// longer key it is a prefix of). 8-byte integer keys arrive big-endian (IntKey), so byte order
// is numeric order. A radix tree walks a key in *units*: bytes for a 256-way node (ART, WOART)
// or nibbles for a 16-way node (WORT). KeySpan<kBits> says how.
//
// Keys that are prefixes of other keys: a key of n bytes ends exactly at unit position
// units(n); every inner node keeps one extra "end" slot for the key that ends at the node's
// discriminating position (after its compressed prefix). No terminator byte is appended, so
// every byte value, including 0x00, is allowed in keys.
//
// Thread safety: pure functions.
#ifndef PMINDEX_RADIX_COMMON_KEY_H_
#define PMINDEX_RADIX_COMMON_KEY_H_

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>

#include "pmindex/status.h"

namespace pmindex::radix {

// Limits of the radix family (WORT, WOART, ART). A key of up to 1024 bytes keeps every unit
// position (2048 nibbles) in the 16-bit depth field of a node header; a value length fits the
// leaf's 1-byte length field.
inline constexpr size_t kMaxKeySize = 1024;
inline constexpr size_t kMaxValueSize = 255;

// InvalidArgument for an empty key, a key longer than kMaxKeySize or a value longer than
// kMaxValueSize; OK otherwise.
inline Status CheckKeyValue(std::string_view key, std::string_view value) {
  if (key.empty() || key.size() > kMaxKeySize) [[unlikely]]
    return Status::InvalidArgument(key.empty() ? "empty key" : "key longer than 1024 bytes");
  if (value.size() > kMaxValueSize) [[unlikely]]
    return Status::InvalidArgument("value longer than 255 bytes");
  return Status::OK();
}
inline bool KeyInRange(std::string_view key) {
  return !key.empty() && key.size() <= kMaxKeySize;
}

// How a tree of 2^kBits children per node splits a key into units.
template <int kBits>
struct KeySpan;

template <>
struct KeySpan<8> {
  static constexpr unsigned kFanout = 256;
  static constexpr size_t units(size_t bytes) { return bytes; }
  static uint8_t unit(const uint8_t* key, size_t i) { return key[i]; }
  // Unit i of an 8-byte key held as one big-endian word (i < 8).
  static uint8_t unit64(uint64_t be, uint32_t i) {
    return static_cast<uint8_t>(be >> (56 - 8 * i));
  }
};

template <>
struct KeySpan<4> {
  static constexpr unsigned kFanout = 16;
  static constexpr size_t units(size_t bytes) { return bytes * 2; }
  // High nibble first, so unit order is byte order.
  static uint8_t unit(const uint8_t* key, size_t i) {
    return (key[i >> 1] >> ((~i & 1) << 2)) & 0xF;
  }
  // Unit i of an 8-byte key held as one big-endian word (i < 16): one shift and one mask.
  static uint8_t unit64(uint64_t be, uint32_t i) {
    return static_cast<uint8_t>((be >> (60 - 4 * i)) & 0xF);
  }
};

// Number of leading units [from, limit) on which a and b agree (both must have >= limit
// units). Byte spans use memcmp-width compares.
template <int kBits>
inline size_t CommonUnits(const uint8_t* a, const uint8_t* b, size_t from, size_t limit) {
  using S = KeySpan<kBits>;
  size_t i = from;
  if constexpr (kBits == 8) {
    while (i + 8 <= limit) {
      uint64_t x, y;
      std::memcpy(&x, a + i, 8);
      std::memcpy(&y, b + i, 8);
      if (x != y) return i + (__builtin_ctzll(x ^ y) >> 3);
      i += 8;
    }
  }
  while (i < limit && S::unit(a, i) == S::unit(b, i)) ++i;
  return i;
}

inline const uint8_t* Bytes(std::string_view s) {
  return reinterpret_cast<const uint8_t*>(s.data());
}

// *out = the `n` bytes at `p`. A string that already has that size (a caller reusing one
// buffer for values of one size, as every 8-byte-value workload does) is overwritten in place
// without std::string's general replace path; an 8-byte value is one inline copy, not a call.
inline void CopyValue(const void* p, size_t n, std::string* out) {
  if (out->size() == n) {
    if (n == 8) {
      std::memcpy(out->data(), p, 8);
    } else {
      std::memcpy(out->data(), p, n);
    }
  } else {
    out->assign(static_cast<const char*>(p), n);
  }
}

// memcmp order on byte strings.
inline int CompareKeys(std::string_view a, std::string_view b) { return a.compare(b); }

}  // namespace pmindex::radix

#endif  // PMINDEX_RADIX_COMMON_KEY_H_
