// PFtree leaf arrays: key-value pairs stored inline behind a 2-byte entry header, with the
// auxiliary metadata (positions, fingerprints, sorted order) kept only in DRAM.
//
// Block layout (one allocation, 512 B .. 8 KiB; the data area fills the rest):
//   line 0:  0 lock      8  VersionLock word (generation | version | obsolete | locked)
//            8 type      1  NodeType::kLeafArray
//            9 reserved  1
//           10 depth     2  every key shares key[0..depth) with the path to this leaf
//           12 capacity  4  bytes of the data area
//           16 aux       8  DRAM LeafAux* - a cache, valid only if aux_gen is the current
//           24 aux_gen   4  generation (rebuilt by recover(), never flushed)
//           28 reserved 36
//   64..:   data area, entries back to back, each 2-byte aligned:
//             [hdr: bit 15 valid | bits 14..6 key length (1..511) | bits 5..0 value length]
//             [key bytes][value bytes][pad to even]
//           The first header that is 0 ends the data area. A header with key length 0
//           and the valid bit clear is padding of 2, 4 or 6 bytes (its value-length field,
//           header included): it puts the 8-byte value of the entry after it on an 8-byte
//           boundary, so the value can be overwritten in place. Appends and rebuilds place
//           every 8-byte value (with an even key length) so: an entry of an 8-byte key and
//           value takes 24 bytes with its padding.
//
// Crash argument (insert = append): the key and value bytes, followed by a zero header
// (the terminator of the next position), are written and persisted first; then the 2-byte
// header is stored (one aligned store, never straddling a cache line) and persisted. The
// header is the commit: a crash before it leaves a 0 header, which recovery reads as the end
// of the data area, so a torn entry is never seen and its bytes are overwritten by the next
// append. An entry after padding has its header position zeroed and persisted with the body
// (past the end, the block may hold old bytes), and the padding is stored with the header
// at the commit: a crash keeps the padding before a zero header, or the header after the old
// end, never padding before old bytes. Remove clears the valid bit (one 2-byte store). Update appends the new version and
// then clears the old one; a crash in between leaves two valid versions, and recovery keeps
// the later one (appends only move forward between rebuilds) and clears the earlier. An
// update of an 8-byte value by an 8-byte value that sits on an 8-byte boundary is one
// aligned 8-byte store, persisted (failure-atomic: a crash leaves the old or the new value);
// an entry with an 8-byte value is appended aligned (after padding, written and persisted
// with the body, the entry's header position zeroed with it) so that its updates are in
// place. Nothing else changes in place: compaction, growth and splits build new blocks (their
// padding is written with the block, which is persisted before it is published).
//
// Concurrency: writers hold the leaf's lock; readers read under a version (VersionLock).
// Entry bytes and the DRAM arrays below `count` never change after publication (count is
// released after them), so readers race only on the atomic 2-byte headers.
#ifndef PMINDEX_RADIX_PFTREE_LEAF_ARRAY_H_
#define PMINDEX_RADIX_PFTREE_LEAF_ARRAY_H_

#include <emmintrin.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

#include "pm/epoch.h"
#include "pm/persist.h"
#include "pm/prefetch.h"
#include "pmindex/status.h"
#include "radix/common/fingerprint.h"
#include "radix/common/key.h"

namespace pmindex::pftree {

inline constexpr size_t kMaxKeySize = 511;
inline constexpr size_t kMaxValueSize = 63;
// What a pool may hold: leaf arrays of up to 8 KiB and 512 entries (the bound of the DRAM
// arrays), which recovery, lookups and scans accept; pools written before the largest leaf
// array this build creates was halved hold such leaves.
inline constexpr uint32_t kMaxEntries = 512;
inline constexpr size_t kLeafHeaderSize = 64;
inline constexpr size_t kMinLeafBlock = 512;
inline constexpr size_t kMaxLeafBlock = 8192;
// What this build writes: at most 256 entries (a probe scans at most ~250 fingerprints) in
// blocks of up to 8 KiB. (4 KiB blocks, one page each, made lookups faster still, but a full
// pool then could not reuse the space of removed keys: space_reuse_test re-inserted 127 of
// 36,000.) A larger leaf of an older pool is split or rebuilt within these limits when it
// next fills.
inline constexpr uint32_t kLargestEntries = 256;  // what this build writes (LargestLeaf)
struct LargestLeaf {
  uint32_t entries = kLargestEntries;
  size_t block = 8192;
  size_t data() const { return block - kLeafHeaderSize; }
};
// The limits new leaf arrays are written with.
const LargestLeaf& Largest();
// Tests only, before any tree writes: the older builds' limits ({512, 8192}) write the pools
// those builds wrote. Clamped to what a pool may hold.
void SetLargestLeafForTesting(LargestLeaf limits);

inline constexpr uint16_t kEntryValid = 0x8000;

struct LeafHeader {
  uint64_t lock;
  uint8_t type;
  uint8_t reserved0;
  uint16_t depth;
  uint32_t capacity;
  uint64_t aux;
  uint32_t aux_gen;
  uint8_t reserved[36];
};
static_assert(sizeof(LeafHeader) == kLeafHeaderSize);
static_assert(offsetof(LeafHeader, depth) == 10 && offsetof(LeafHeader, capacity) == 12);
static_assert(offsetof(LeafHeader, aux) == 16 && offsetof(LeafHeader, aux_gen) == 24);

// The key order of entries [0, covers) of one leaf array: pos()[i] is the data-area offset
// of the i-th smallest key (offsets, not entry indexes, so a scan reads an entry without a
// second load through LeafAux::pos). Dead entries stay in it (readers check the valid bit); a
// key's old and new version are adjacent in either order. Immutable once published in
// LeafAux::order, so any reader may build one from the immutable published entries, whatever
// writers do.
struct LeafOrder {
  uint32_t covers;
  uint32_t bytes;  // of this allocation
  uint16_t* pos() { return reinterpret_cast<uint16_t*>(this + 1); }
};
void FreeOrder(LeafOrder* order);

// DRAM metadata of one leaf array, one allocation sized for about capacity / 16 entries
// (and at least twice the entries the leaf starts with; at most kMaxEntries). A leaf whose
// slots run out before its data area is rebuilt like a full one. Entries [0, count) are published;
// pos/fp of a published entry never change. Entries [0, sorted_n) are in ascending key order
// (the leaf was built sorted); later ones were appended. `order`, if set, is the key order of
// a longer published prefix, built lazily by scans (KeyOrder) so appends stay O(1); a
// replaced order is freed through epochs, the current one with the aux. used/live are the
// writer's.
struct LeafAux {
  std::atomic<uint32_t> count{0};
  uint32_t used = 0;         // bytes of the data area in use
  uint32_t live = 0;         // valid entries
  uint32_t sorted_n = 0;     // immutable after build
  uint32_t max_entries = 0;  // length of pos/fp
  uint32_t bytes = 0;        // of this allocation
  uint16_t* fp = nullptr;    // fingerprints (+16 so vector loads past count stay in bounds)
  uint16_t* pos = nullptr;   // data-area offset of each entry
  std::atomic<LeafOrder*> order{nullptr};
};
LeafAux* NewAux(uint32_t capacity, uint32_t entries);
void FreeAux(LeafAux* aux);  // and its current order

inline char* LeafData(LeafHeader* l) { return reinterpret_cast<char*>(l) + kLeafHeaderSize; }
inline LeafAux* AuxOf(LeafHeader* l) { return reinterpret_cast<LeafAux*>(l->aux); }

constexpr uint16_t MakeEntryHeader(size_t klen, size_t vlen) {
  return static_cast<uint16_t>(kEntryValid | (klen << 6) | vlen);
}
inline size_t EntryKeyLen(uint16_t h) { return (h >> 6) & 0x1FF; }
inline size_t EntryValueLen(uint16_t h) { return h & 0x3F; }
inline size_t EntrySize(size_t klen, size_t vlen) { return (2 + klen + vlen + 1) & ~size_t{1}; }
inline bool IsPadding(uint16_t h) { return h != 0 && (h & kEntryValid) == 0 && EntryKeyLen(h) == 0; }
// Every entry with an 8-byte value and an even key length is written with its value on an
// 8-byte boundary, so that updating it is one aligned store (UpdateInPlace): AlignPad is the
// padding (0, 2, 4 or 6 bytes) that goes before such an entry at data offset pos (the data
// area starts 8-byte aligned), 0 for any other entry.
inline bool Alignable(size_t klen, size_t vlen) { return vlen == 8 && klen % 2 == 0; }
inline uint32_t AlignPad(uint32_t pos, size_t klen, size_t vlen) {
  return Alignable(klen, vlen) ? static_cast<uint32_t>((8 - (pos + 2 + klen) % 8) % 8) : 0;
}
inline constexpr size_t kMaxAlignPad = 6;
static_assert(kLeafHeaderSize % 8 == 0, "AlignPad assumes an 8-byte aligned data area");
// Bytes the record with header h takes in the data area (an entry or padding).
inline size_t RecordSize(uint16_t h) {
  return IsPadding(h) ? EntryValueLen(h) : EntrySize(EntryKeyLen(h), EntryValueLen(h));
}

inline uint16_t LoadEntryHeader(LeafHeader* l, uint32_t pos) {
  return std::atomic_ref<uint16_t>(*reinterpret_cast<uint16_t*>(LeafData(l) + pos))
      .load(std::memory_order_acquire);
}
inline std::string_view EntryKey(LeafHeader* l, uint32_t pos, uint16_t h) {
  return {LeafData(l) + pos + 2, EntryKeyLen(h)};
}
inline std::string_view EntryValue(LeafHeader* l, uint32_t pos, uint16_t h) {
  return {LeafData(l) + pos + 2 + EntryKeyLen(h), EntryValueLen(h)};
}
// An 8-byte value on an 8-byte boundary: updated in place (UpdateInPlace).
inline uint64_t* InPlaceValue(LeafHeader* l, uint32_t pos, uint16_t h) {
  char* v = LeafData(l) + pos + 2 + EntryKeyLen(h);
  return EntryValueLen(h) == 8 && reinterpret_cast<uintptr_t>(v) % 8 == 0
             ? reinterpret_cast<uint64_t*>(v)
             : nullptr;
}
// Copies entry pos's value for a reader (which validates the leaf's version afterwards); an
// in-place value is read with one atomic load, as a writer may be storing it.
inline void CopyEntryValue(LeafHeader* l, uint32_t pos, uint16_t h, std::string* out) {
  if (uint64_t* w = InPlaceValue(l, pos, h)) {
    const uint64_t v = std::atomic_ref<uint64_t>(*w).load(std::memory_order_relaxed);
    radix::CopyValue(&v, 8, out);
    return;
  }
  std::string_view v = EntryValue(l, pos, h);
  radix::CopyValue(v.data(), v.size(), out);
}

// The key's 2-byte fingerprint (a hash; DRAM only, recomputed by recovery). Two bytes, not
// the paper's one: a probe of ~200 entries then reads an entry that only shares the
// fingerprint about once in 300 probes, not once in 1-3 (each such read is a line in PM).
// Inline: every operation computes one.
inline uint16_t Fingerprint(std::string_view key) { return radix::Fingerprint16(key); }

// Prefetches, so the misses of one access overlap instead of following each other:
// PrefetchLeaf when a child reference names a leaf array (its header line, which holds the
// lock and the aux pointer; the entry sought may be anywhere in up to 8 KiB, so data lines
// are not requested on a guess); PrefetchAux once the aux pointer is read: the struct, the
// fingerprints and the positions of a largest leaf array (256 entries: the allocation
// NewAux makes for it), so the position a match reads has been requested with the
// fingerprints.
inline constexpr size_t kAuxPrefetchBytes =
    ((sizeof(LeafAux) + 15) & ~size_t{15}) + 2 * (kLargestEntries + 16) + 2 * kLargestEntries;
inline void PrefetchLeaf(const LeafHeader* l) { pm::PrefetchLine(l); }
inline void PrefetchAux(const LeafAux* aux) { pm::PrefetchLines(aux, 0, kAuxPrefetchBytes); }

namespace detail {
// Entry pos's key bytes equal `key` (of the same length): the memcmp of a key that is not 8
// bytes, out of line so that FindEntry's callers do not save registers around a call.
bool EntryKeyBytesEqual(LeafHeader* l, uint32_t pos, std::string_view key);
}  // namespace detail

// Entry pos is valid and holds `key`.
[[gnu::always_inline]] inline bool EntryMatches(LeafHeader* l, uint32_t pos, std::string_view key) {
  const uint16_t h = LoadEntryHeader(l, pos);
  if ((h & 0xFFC0) != (kEntryValid | key.size() << 6)) return false;  // valid, same length
  if (key.size() == 8) {  // integer keys: one word compare
    uint64_t a, b;
    std::memcpy(&a, LeafData(l) + pos + 2, 8);
    std::memcpy(&b, key.data(), 8);
    return a == b;
  }
  return detail::EntryKeyBytesEqual(l, pos, key);
}

// Index (< n) of the newest valid entry with `key`, or -1: the fingerprints are compared 16
// at a time (SSE, two vectors of eight), newest first, and only a matching one's entry is
// read. Inline, with the
// fingerprint and position arrays in registers: every point operation probes once.
[[gnu::always_inline]] inline int FindEntry(LeafHeader* l, const LeafAux* aux, uint32_t n,
                                            std::string_view key, uint16_t fp) {
  if (n == 0) return -1;
  const uint16_t* const fps = aux->fp;
  const uint16_t* const pos = aux->pos;
#ifdef PMINDEX_TSAN
  // Scalar: the vector loads below read fingerprints past `count`, which a writer may be
  // storing (harmless, masked out, but a reported race).
  for (int i = static_cast<int>(n) - 1; i >= 0; --i)
    if (fps[i] == fp && EntryMatches(l, pos[i], key)) return i;
  return -1;
#else
  const __m128i needle = _mm_set1_epi16(static_cast<short>(fp));
  auto matches = [&](int base) {  // bit i: fingerprint base + i matches
    const __m128i lo = _mm_load_si128(reinterpret_cast<const __m128i*>(fps + base));
    const __m128i hi = _mm_load_si128(reinterpret_cast<const __m128i*>(fps + base + 8));
    const __m128i eq = _mm_packs_epi16(_mm_cmpeq_epi16(lo, needle), _mm_cmpeq_epi16(hi, needle));
    return static_cast<unsigned>(_mm_movemask_epi8(eq));
  };
  // The newest group first, its fingerprints at and past n masked out.
  int base = static_cast<int>((n - 1) & ~15u);
  unsigned mask = matches(base) & ((2u << ((n - 1) & 15u)) - 1);
  for (;;) {
    while (mask != 0) {
      const int bit = 31 - __builtin_clz(mask);  // newest first
      if (EntryMatches(l, pos[base + bit], key)) return base + bit;
      mask ^= 1u << bit;
    }
    base -= 16;
    if (base < 0) return -1;
    mask = matches(base);
  }
#endif
}

// Appends and commits key -> value. Caller holds the lock. False (nothing written) if the
// data area or the entry arrays are full.
// An 8-byte value (with an even key length) is placed on an 8-byte boundary after padding.
bool AppendEntry(pm::PersistContext& pc, LeafHeader* l, LeafAux* aux, std::string_view key, std::string_view value,
                 uint16_t fp);
// Overwrites entry idx's value in place with one aligned 8-byte store, persisted (the
// commit). False (nothing written) unless both values are 8 bytes and the old one is on an
// 8-byte boundary. Caller holds the lock.
bool UpdateInPlace(pm::PersistContext& pc, LeafHeader* l, LeafAux* aux, uint32_t idx,
                   std::string_view value);
// Clears entry idx's valid bit and persists it. Caller holds the lock.
void InvalidateEntry(pm::PersistContext& pc, LeafHeader* l, LeafAux* aux, uint32_t idx);

// a < b in byte order. Compares the first 8 bytes as one big-endian word when both keys have
// them (every integer key), so rebuild sorts and scans rarely call memcmp.
inline bool KeyLess(std::string_view a, std::string_view b) {
  if (a.size() >= 8 && b.size() >= 8) {
    uint64_t x, y;
    std::memcpy(&x, a.data(), 8);
    std::memcpy(&y, b.data(), 8);
    if (x != y) return __builtin_bswap64(x) < __builtin_bswap64(y);
  }
  return a < b;
}

// A key-value pair to be written into a new leaf array (views into PM or the caller), with
// its fingerprint (carried over from the old leaf's DRAM metadata on a rebuild).
struct LeafItem {
  std::string_view key;
  std::string_view value;
  uint16_t fp;
};
inline size_t ItemsBytes(const std::vector<LeafItem>& items, size_t b, size_t e) {
  size_t s = 0;
  // At most: the padding depends on where an entry lands (for 8-byte keys and values it is
  // 6 bytes before every entry but the first, so the bound is nearly exact).
  for (size_t i = b; i < e; ++i) {
    const size_t k = items[i].key.size(), v = items[i].value.size();
    s += EntrySize(k, v) + (Alignable(k, v) ? kMaxAlignPad : 0);
  }
  return s;
}
// Block size for a new leaf holding `bytes` of entries, with room to grow (3/8 more, then the size class).
size_t LeafBlockSizeFor(size_t bytes);
// How a new block is made durable before a reference publishes it: flushed and fenced, or
// only flushed when the caller fences once for several blocks, or not at all (a test
// mutant).
enum class BlockPersist { kPersist, kFlushOnly, kSkip };
// Writes items[b, e) (sorted) into the block at `leaf` of `block_size` bytes and makes its
// aux. Does not publish it.
void WriteLeaf(pm::PersistContext& pc, LeafHeader* leaf, size_t block_size, uint16_t depth, uint32_t gen,
               const std::vector<LeafItem>& items, size_t b, size_t e, BlockPersist how);

// Rebuilds the DRAM metadata of a leaf by scanning its data area (recovery). With `repair`
// (the pool's seam), clears the earlier of two valid versions of a key (an interrupted
// update); with nullptr only counts them. Returns nullptr and sets *error if the data area is
// malformed.
LeafAux* ScanLeaf(LeafHeader* l, pm::PersistContext* repair, std::string* error);

// Indexes of the valid entries among [0, n) in ascending key order, sorted from scratch
// (verify's independent reference; scans use KeyOrder).
void SortedEntries(LeafHeader* l, const LeafAux* aux, uint32_t n, std::vector<uint32_t>* out);

// The key order of the published entries [0, *n) (dead ones included) as their data-area
// offsets, for a reader inside a guard of `epoch` (the pool's); valid until the guard ends.
// O(1) when the cached order (or the leaf's sorted run, whose offsets are aux->pos) covers *n,
// which it then may raise to the entries the cached order covers. Otherwise the appended
// entries it lacks are sorted and merged into a new order that is published for later scans
// (k log k + k log m key comparisons and one O(m) copy for k new entries).
const uint16_t* KeyOrder(LeafHeader* l, LeafAux* aux, uint32_t* n, pm::Epoch& epoch);
// Frees every replaced order retired in `epoch` now (index close: no reader remains).
void DrainOrders(pm::Epoch& epoch);

// First position in order[0, n) (data-area offsets in key order) whose key is >= key (> key
// if `after`).
uint32_t LowerBound(LeafHeader* l, const uint16_t* order, uint32_t n, std::string_view key,
                    bool after = false);

// Empty if aux's cached order is a key-ordered permutation of the entries it covers, else
// what is wrong (verify).
std::string CheckOrder(LeafHeader* l, LeafAux* aux);

}  // namespace pmindex::pftree

#endif  // PMINDEX_RADIX_PFTREE_LEAF_ARRAY_H_
