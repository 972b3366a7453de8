// Node-search helpers shared by the radix trees: SIMD search of a 16-byte key array (ART's
// Node16, WOART's bitmap Node16) and the tagged child word used by the persistent trees.
//
// Thread safety: pure functions.
#ifndef PMINDEX_RADIX_COMMON_NODE_SEARCH_H_
#define PMINDEX_RADIX_COMMON_NODE_SEARCH_H_

#include <emmintrin.h>
#include <smmintrin.h>

#include <cstdint>

namespace pmindex::radix {

// Bit i set iff keys[i] == byte (all 16 lanes; mask with the valid lanes yourself).
inline unsigned Match16(const uint8_t* keys, uint8_t byte) {
  const __m128i k = _mm_loadu_si128(reinterpret_cast<const __m128i*>(keys));
  const __m128i cmp = _mm_cmpeq_epi8(k, _mm_set1_epi8(static_cast<char>(byte)));
  return static_cast<unsigned>(_mm_movemask_epi8(cmp));
}

// Bit i set iff keys[i] < byte, unsigned (all 16 lanes).
inline unsigned Less16(const uint8_t* keys, uint8_t byte) {
  const __m128i flip = _mm_set1_epi8(static_cast<char>(0x80));
  const __m128i k = _mm_xor_si128(_mm_loadu_si128(reinterpret_cast<const __m128i*>(keys)), flip);
  const __m128i b = _mm_xor_si128(_mm_set1_epi8(static_cast<char>(byte)), flip);
  return static_cast<unsigned>(_mm_movemask_epi8(_mm_cmplt_epi8(k, b)));
}

// Bit i set iff bytes[i] != 0 (all 16 lanes): a Node48's index, 16 key bytes at a time, so a
// walk over its children branches once per child and once per 16 bytes instead of once per
// byte (a node of 30 children among 256 bytes mispredicts on most of them).
inline unsigned NonZero16(const uint8_t* bytes) {
  const __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(bytes));
  return ~static_cast<unsigned>(_mm_movemask_epi8(_mm_cmpeq_epi8(v, _mm_setzero_si128()))) &
         0xFFFFu;
}

// Bits 2i and 2i+1 set iff words[i] != 0, for 16 words (a WORT node's child slots): two
// words per compare, the compares packed to bytes, so a walk over the children branches
// once per child, not once per slot (take the even bits: word i is bit 2i).
inline uint32_t NonZeroWords16x2(const uint64_t* words) {
  const auto* p = reinterpret_cast<const __m128i*>(words);
  const __m128i z = _mm_setzero_si128();
  auto eq = [&](int i) { return _mm_cmpeq_epi64(_mm_loadu_si128(p + i), z); };
  // Each 64-bit compare lane is all ones or all zeros, so saturating packs keep it.
  const __m128i lo = _mm_packs_epi16(_mm_packs_epi32(eq(0), eq(1)), _mm_packs_epi32(eq(2), eq(3)));
  const __m128i hi = _mm_packs_epi16(_mm_packs_epi32(eq(4), eq(5)), _mm_packs_epi32(eq(6), eq(7)));
  const uint32_t zero = static_cast<uint32_t>(_mm_movemask_epi8(lo)) |
                        static_cast<uint32_t>(_mm_movemask_epi8(hi)) << 16;
  return ~zero;
}

// Index of `byte` among the first `count` keys of a 16-byte array, or -1.
inline int Find16(const uint8_t* keys, unsigned count, uint8_t byte) {
  const unsigned m = Match16(keys, byte) & ((1u << count) - 1);
  return m ? __builtin_ctz(m) : -1;
}

// Position at which `byte` would be inserted into the sorted first `count` keys.
inline unsigned LowerBound16(const uint8_t* keys, unsigned count, uint8_t byte) {
  return __builtin_popcount(Less16(keys, byte) & ((1u << count) - 1));
}

// A child reference of the persistent radix trees: one 8-byte word, written with one
// failure-atomic store. 0 = empty. Otherwise a pool offset (blocks are 64-byte aligned)
// whose low 3 bits say what it points at. Tag values are on-media format: never reuse one.
enum ChildTag : uint64_t {
  kTagLeaf = 1,     // a leaf block (key + value)
  kTagNode4 = 2,    // WOART Node4; WORT's only node type
  kTagNode16 = 3,   // WOART Node16
  kTagNode48 = 4,   // WOART Node48
  kTagNode256 = 5,  // WOART Node256 (ROART's Node4..256 use tags 2..5 too)
  kTagLeafArray = 6,  // ROART leaf array (radix/roart/roart_nodes.h)
};
inline constexpr uint64_t kTagMask = 7;
inline constexpr uint64_t ChildTagOf(uint64_t w) { return w & kTagMask; }
inline constexpr uint64_t ChildOffset(uint64_t w) { return w & ~kTagMask; }
inline constexpr uint64_t MakeChild(uint64_t offset, uint64_t tag) { return offset | tag; }
inline constexpr bool IsLeafChild(uint64_t w) { return (w & kTagMask) == kTagLeaf; }

}  // namespace pmindex::radix

#endif  // PMINDEX_RADIX_COMMON_NODE_SEARCH_H_
