// Dash's bucket compares, inline in every path that reads a bucket (the reads in dash.cc,
// the writers' locate in dash_insert.cc, verify): a lookup's instructions decide how many
// lookups the CPU overlaps (doc/dash.md, "Third pass"), so none of these is a call.
//
// What they read racily, the caller's version validation checks (readers) or the bucket
// lock makes stable (writers), as for every other word of a bucket.
#ifndef PMINDEX_HASH_DASH_BUCKET_PROBE_H_
#define PMINDEX_HASH_DASH_BUCKET_PROBE_H_

#include <cstdint>
#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include "hash/dash/layout.h"

namespace pmindex::hash::dash {

#ifndef PMINDEX_TSAN
// Bit i set where byte i of x is zero (exact: no borrow crosses bytes).
inline uint32_t ZeroBytes(uint64_t x) {
  constexpr uint64_t kLow7 = 0x7F7F7F7F7F7F7F7Full;
  const uint64_t high = ~(((x & kLow7) + kLow7) | x | kLow7);  // 0x80 in each zero byte
  return static_cast<uint32_t>(((high >> 7) * 0x0102040810204080ull) >> 56);
}
#endif

// Slots of b whose alloc bit is set and whose fingerprint is fp. With SSE2 (without TSan):
// fp[0..13] and the next two bytes in one 16-byte load, compared at once (5 instructions
// where the 8-byte SWAR compare below takes about 30); what it reads racily, the caller's
// version validation checks, as for every other word of the bucket.
[[gnu::always_inline]] inline uint32_t Candidates(const Bucket* b, uint8_t fp) {
#if !defined(PMINDEX_TSAN) && defined(__SSE2__)
  const __m128i fps = _mm_loadu_si128(reinterpret_cast<const __m128i*>(b->fp));
  const uint32_t match = static_cast<uint32_t>(
      _mm_movemask_epi8(_mm_cmpeq_epi8(fps, _mm_set1_epi8(static_cast<char>(fp)))));
  return match & Load(b->bitmap) & kAllocMask;
#elif !defined(PMINDEX_TSAN)
  // The metadata's words 1-3 (bitmap and fp[0..1], fp[2..9], fp[10..13]) compared 8 bytes at
  // a time.
  using Word = uint64_t __attribute__((may_alias));
  const Word* w = reinterpret_cast<const Word*>(b);
  const uint64_t pattern = 0x0101010101010101ull * fp;
  const uint64_t w1 = Load(w[1]);
  const uint32_t match = (ZeroBytes(w1 ^ pattern) >> 6) | (ZeroBytes(Load(w[2]) ^ pattern) << 2) |
                         ((ZeroBytes(Load(w[3]) ^ pattern) & 0xF) << 10);
  return match & static_cast<uint32_t>(w1) & kAllocMask;
#else  // byte loads: the writers' stores are bytes and words (TSan checks sizes)
  uint32_t match = 0;
  for (uint32_t bm = Load(b->bitmap) & kAllocMask; bm != 0; bm &= bm - 1) {
    const int i = __builtin_ctz(bm);
    if (Load(b->fp[i]) == fp) match |= 1u << i;
  }
  return match;
#endif
}

// The slot of b whose key word `match` accepts (fingerprint fp), or -1. Integer keys:
// IntMatch (the word is the key); keys=bytes: the word is a KeyRecord's offset and the
// match reads the record (dash.h, BytesMatch).
template <class Match>
[[gnu::always_inline]] inline int ProbeBucket(const Bucket* b, const Match& match, uint8_t fp) {
  for (uint32_t m = Candidates(b, fp); m != 0; m &= m - 1) {
    const int i = __builtin_ctz(m);
    if (match(Load(b->slot[i].key))) return i;
  }
  return -1;
}

// Integer keys: the slot's key word is the key.
struct IntMatch {
  uint64_t key;
  [[gnu::always_inline]] bool operator()(uint64_t word) const { return word == key; }
};

// The stash buckets that overflow entries of `b` point to for fingerprint fp; `member`: the
// entries of keys homed at the previous bucket.
inline uint32_t OverflowTargets(const Bucket* b, uint8_t fp, bool member) {
  const uint32_t valid = (Load(b->bitmap) >> kOverflowShift) & 0xF;
  if (valid == 0) return 0;
  const uint32_t mem = Load(b->ovf_member);
#ifndef PMINDEX_TSAN
  // The four overflow fingerprints (bytes 28-31) compared in one word; matches are rare.
  using Word = uint32_t __attribute__((may_alias));
  const uint32_t fps = Load(*reinterpret_cast<const Word*>(b->ovf_fp));
  uint32_t match = ZeroBytes(uint64_t{fps ^ (0x01010101u * fp)}) & valid & (member ? mem : ~mem);
  if (match == 0) return 0;
  const uint32_t stash = Load(b->ovf_stash);
  uint32_t targets = 0;
  for (; match != 0; match &= match - 1)
    targets |= 1u << ((stash >> (2 * __builtin_ctz(match))) & 3);
  return targets;
#else  // byte loads: the writers' stores are bytes (TSan checks sizes)
  const uint32_t stash = Load(b->ovf_stash);
  uint32_t targets = 0;
  for (uint32_t e = 0; e < kOverflowFps; ++e) {
    if (((valid >> e) & 1) && ((mem >> e) & 1) == member && Load(b->ovf_fp[e]) == fp)
      targets |= 1u << ((stash >> (2 * e)) & 3);
  }
  return targets;
#endif
}

// False when no key of home b0 with fingerprint fp can be in the stash: neither fp's class bit
// (layout.h, kOvfHomedMask) nor kOvfCounted is set. One test of the line a lookup has already
// read; the stash probe is a call only when it passes.
[[gnu::always_inline]] inline bool MayHaveStashKeys(const Bucket* b0, uint8_t fp) {
  return (Load(b0->ovf_member) & (HomedBit(fp) | kOvfCounted)) != 0;
}
}  // namespace pmindex::hash::dash

#endif  // PMINDEX_HASH_DASH_BUCKET_PROBE_H_
