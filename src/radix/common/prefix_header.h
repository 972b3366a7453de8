// The 8-byte node header of the persistent radix trees (WORT, WOART): depth, compressed
// prefix length and the first bytes of the compressed prefix, rewritten with ONE
// failure-atomic 8-byte store (Lee et al., WORT, FAST 2017).
//
//   word bits   field        meaning
//   0..11       depth        units (nibbles for WORT, bytes for WOART) of the key consumed
//                            above this node, i.e. the unit position of its first prefix unit
//   12..23      prefix_len   units in the compressed prefix (may exceed kStoredPrefix; the
//                            rest is read from any leaf below the node)
//   24..63      prefix[5]    the first min(prefix_len, 5) prefix units, one unit per byte
// 12 bits hold every unit position of a kMaxKeySize key (2048 nibbles).
//
// The node's discriminating position is depth + prefix_len: its children are chosen by the
// key unit there, and a key whose unit count equals it sits in the node's end slot.
//
// Lazy repair: a path-compression split hangs the node under a new parent and then rewrites
// its header. A crash between the two leaves a header whose depth is smaller than the depth
// at which traversal reaches the node. The discriminating position never changes in a split,
// so the correct header is depth' = reached depth, prefix_len' = depth + prefix_len - depth',
// prefix' = units [depth', depth' + 5) of any leaf key below the node (Repaired()).
#ifndef PMINDEX_RADIX_COMMON_PREFIX_HEADER_H_
#define PMINDEX_RADIX_COMMON_PREFIX_HEADER_H_

#include <algorithm>
#include <atomic>
#include <cassert>
#include <cstdint>

#include "radix/common/key.h"

namespace pmindex::radix {

inline constexpr unsigned kStoredPrefix = 5;
static_assert(2 * kMaxKeySize < 4096, "unit positions must fit 12 bits");

struct PrefixHeader {
  uint32_t depth = 0;
  uint32_t prefix_len = 0;
  uint8_t prefix[kStoredPrefix] = {};

  uint32_t pos() const { return depth + prefix_len; }
  // The same fields straight from a header word, without decoding the prefix units (the
  // lookup path needs only these).
  static uint32_t DepthOf(uint64_t w) { return static_cast<uint32_t>(w & 0xFFF); }
  static uint32_t PosOf(uint64_t w) {
    return static_cast<uint32_t>((w & 0xFFF) + ((w >> 12) & 0xFFF));
  }
  // Depth and prefix length as one number: equal to the depth the node is reached at iff
  // the header is not stale and the prefix is empty (positions are < 4096).
  static uint32_t DepthAndLenOf(uint64_t w) { return static_cast<uint32_t>(w & 0xFFFFFF); }
  unsigned stored() const { return std::min<uint32_t>(prefix_len, kStoredPrefix); }

  static PrefixHeader Decode(uint64_t w) {
    PrefixHeader h;
    h.depth = static_cast<uint32_t>(w & 0xFFF);
    h.prefix_len = static_cast<uint32_t>((w >> 12) & 0xFFF);
    for (unsigned i = 0; i < kStoredPrefix; ++i)
      h.prefix[i] = static_cast<uint8_t>(w >> (24 + 8 * i));
    return h;
  }
  uint64_t Encode() const {
    uint64_t w = (depth & 0xFFF) | (uint64_t{prefix_len & 0xFFF} << 12);
    for (unsigned i = 0; i < stored(); ++i) w |= uint64_t{prefix[i]} << (24 + 8 * i);
    return w;
  }

  // Header of a node whose prefix is units [depth, depth + len) of `key`.
  template <int kBits>
  static PrefixHeader Make(uint32_t depth, uint32_t len, const uint8_t* key) {
    PrefixHeader h;
    h.depth = depth;
    h.prefix_len = len;
    for (unsigned i = 0; i < h.stored(); ++i) h.prefix[i] = KeySpan<kBits>::unit(key, depth + i);
    return h;
  }

  // The header a stale node reached at `actual_depth` must have (see file comment);
  // `leaf_key` is any key stored below the node. Requires pos() >= actual_depth.
  template <int kBits>
  PrefixHeader Repaired(uint32_t actual_depth, const uint8_t* leaf_key) const {
    assert(pos() >= actual_depth);
    return Make<kBits>(actual_depth, pos() - actual_depth, leaf_key);
  }
};

// The header word, like every word a lock-free lookup reads, is read and written with
// atomics: readers (lookups, and scans under the shared lock) may repair concurrently with
// each other and with the writer, and all of them write the same value.
inline uint64_t LoadWord(const uint64_t* w) {
  return std::atomic_ref<uint64_t>(*const_cast<uint64_t*>(w)).load(std::memory_order_acquire);
}
inline void StoreWord(uint64_t* w, uint64_t v) {
  std::atomic_ref<uint64_t>(*w).store(v, std::memory_order_release);
}

}  // namespace pmindex::radix

#endif  // PMINDEX_RADIX_COMMON_PREFIX_HEADER_H_
