// FPTree leaf (Oukid et al., SIGMOD 2016): unsorted KV slots, an 8-byte bitmap of the used
// ones, and one-byte fingerprints (a hash of each key) that lookups probe first, 16 at a
// time with SSE2. Primitives (Götze et al.): unsorted + bitmap commit + hashing.
//
// Layout (1216 bytes, 19 cache lines; allocator class 1280):
//
//   line 0   off  0  version  u64  volatile    lock / version word
//            off  8  prev     u64  volatile    DRAM pointer to the left neighbour (hint)
//            off 16  pad      48 B
//   line 1   off 64  bitmap   u64  persistent  bit i: kv[i] live (the commit word)
//            off 72  next     u64  persistent  pool offset of the right neighbour
//            off 80  low_key  u64  persistent  lower bound of the key range (immutable)
//            off 88  pad      40 B
//   line 2   off128  fp[64]   u8   persistent  fingerprint of kv[i] (meaningful if bit i set)
//   line 3.. off192  kv[64]   16 B each
//
// The version word has a line of its own that is never flushed: on this machine clwb evicts
// the line it writes back, and a version word beside the bitmap made every unlock, right
// after the bitmap's persist, miss again.
//
// Insert (3 persistent instructions, the RNTree paper's count): write kv[j] into a free slot,
// persist; write fp[j], persist; set bit j with one 8-byte store, persist. Update writes the
// new pair to a free slot the same way and swaps the bits (set j, clear i) in one store.
// Remove clears the bit (1).
//
// Crash argument: the bitmap is the only commit and is one 8-byte store; kv[j] and fp[j] are
// durable before bit j is set, and a set bit's slot is never written.
//
// Thread safety: natively concurrent as in the paper's "selective concurrency": a writer
// holds the leaf lock through its persists; optimistic readers wait while a leaf is locked
// and retry when its version moved (which is what makes FPTree collapse under skew).
#ifndef PMINDEX_BTREE_FPTREE_LEAF_H_
#define PMINDEX_BTREE_FPTREE_LEAF_H_

#include <emmintrin.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "btree/hybrid/leaf_common.h"
#include "pm/mutant.h"
#include "pm/persist.h"
#include "pmindex/index.h"
#include "pmindex/pool.h"
#include "pmindex/status.h"

namespace pmindex::btree {

struct FPTreeLeaf {
  static constexpr size_t kCapacity = 64;
  uint64_t version;
  uint64_t prev;
  uint64_t pad0[6];
  uint64_t bitmap;
  uint64_t next;
  uint64_t low_key;
  uint64_t pad1[5];
  uint8_t fp[kCapacity];
  Entry kv[kCapacity];
};
static_assert(sizeof(FPTreeLeaf) == 1216);
static_assert(offsetof(FPTreeLeaf, version) == 0 && offsetof(FPTreeLeaf, bitmap) == 64);
static_assert(offsetof(FPTreeLeaf, low_key) == 80);
static_assert(offsetof(FPTreeLeaf, fp) == 128 && offsetof(FPTreeLeaf, kv) == 192);

struct FPTreeLayout {
  using Leaf = FPTreeLeaf;
  static constexpr const char* kName = "fptree";
  static constexpr IndexKind kKind = IndexKind{13};  // never reuse or renumber (doc/format.md)
  // Test-only crash bugs (pm/mutant.h) at this layout's mutation points.
  static std::vector<MutantInfo> Mutants() {
    return {{"fptree.bitmap_before_kv",
             "the bitmap bit is set and persisted before KV and fingerprint"}};
  }
  static constexpr const char* kDescription =
      "FPTree leaves (bitmap + 1-byte fingerprints, unsorted) under DRAM inner nodes";
  static constexpr const char* kConcurrency =
      "concurrent: optimistic inner nodes, leaf lock held through persists, readers retry";
  static constexpr size_t kCapacity = Leaf::kCapacity;
  static constexpr uint32_t kLayoutVersion = 2;  // 2: volatile words moved to line 0
  static constexpr bool kConcurrent = true;
  static constexpr bool kReadersWaitForWriters = true;

  static uint8_t Fingerprint(uint64_t key) {
    return static_cast<uint8_t>((key * 0x9E3779B97F4A7C15ull) >> 56);
  }

  // Bit i set: fp[i] == f (atomic 8-byte loads, then SSE2 compares). Any leaf with a
  // 64-byte, 8-byte aligned fp array (also fptree_var.h's).
  template <typename AnyLeaf>
  static uint64_t Matches(const AnyLeaf* l, uint8_t f) {
    static_assert(sizeof(l->fp) == 64 && alignof(AnyLeaf) >= 8 && offsetof(AnyLeaf, fp) % 8 == 0);
    const uint64_t* w = reinterpret_cast<const uint64_t*>(l->fp);
    const __m128i needle = _mm_set1_epi8(static_cast<char>(f));
    uint64_t mask = 0;
    for (int q = 0; q < 4; ++q) {
      const __m128i v = _mm_set_epi64x(static_cast<long long>(Load(w[2 * q + 1])),
                                       static_cast<long long>(Load(w[2 * q])));
      mask |= static_cast<uint64_t>(static_cast<uint16_t>(
                  _mm_movemask_epi8(_mm_cmpeq_epi8(v, needle))))
              << (16 * q);
    }
    return mask;
  }

  // Slot of `key` among the live ones, or -1.
  static int Slot(const Leaf* l, uint64_t bitmap, uint64_t key) {
    for (uint64_t m = Matches(l, Fingerprint(key)) & bitmap; m != 0; m &= m - 1) {
      const int i = __builtin_ctzll(m);
      if (Load(l->kv[i].key) == key) return i;
    }
    return -1;
  }

  static void Init(pm::PersistContext& pc, Leaf* l, uint64_t low_key, uint64_t next, const Entry* e, size_t n) {
    l->bitmap = n == 64 ? ~uint64_t{0} : (uint64_t{1} << n) - 1;
    l->next = next;
    l->low_key = low_key;
    l->version = 0;
    l->prev = 0;
    std::memset(l->pad0, 0, sizeof(l->pad0));
    std::memset(l->pad1, 0, sizeof(l->pad1));
    std::memset(l->fp, 0, sizeof(l->fp));
    for (size_t i = 0; i < n; ++i) {
      l->fp[i] = Fingerprint(e[i].key);
      l->kv[i] = e[i];
    }
    pc.flush(&l->bitmap, offsetof(Leaf, kv) - offsetof(Leaf, bitmap) + n * sizeof(Entry));
    // (line 0 is volatile: recovery resets it; the caller fences)
  }

  // The bitmap and fingerprint lines; the one KV line a match needs is known only after the
  // probe.
  static void Prefetch(const Leaf* l) {
    PrefetchLine(&l->bitmap);
    PrefetchLine(l->fp);
  }

  static bool Find(const Leaf* l, uint64_t key, uint64_t* value) {
    const int i = Slot(l, Load(l->bitmap), key);
    if (i < 0) return false;
    *value = Load(l->kv[i].value);
    return true;
  }

  static size_t CollectSorted(const Leaf* l, uint64_t from, Entry* out) {
    size_t n = 0;
    for (uint64_t m = Load(l->bitmap); m != 0; m &= m - 1) {
      const int i = __builtin_ctzll(m);
      const uint64_t k = Load(l->kv[i].key);
      if (k >= from) out[n++] = Entry{k, Load(l->kv[i].value)};
    }
    std::sort(out, out + n, [](const Entry& a, const Entry& b) { return a.key < b.key; });
    return n;
  }

  static size_t LiveCount(const Leaf* l) { return __builtin_popcountll(Load(l->bitmap)); }

  [[gnu::always_inline]] static WriteResult Write(pm::PersistContext& pc, Leaf* l, Op op,
                                                 uint64_t key, uint64_t value) {
    uint64_t held;  // the word as locked: Release stores without reading it
    if (!VersionLock::Lock(&l->version, kGen, &held)) return {Outcome::kRetry};
    uint64_t bitmap = l->bitmap;
    const int i = Slot(l, bitmap, key);
    if (op == Op::kInsert && i >= 0) {
      VersionLock::Release(&l->version, held, false);
      return {Outcome::kExists};
    }
    if ((op == Op::kUpdate || op == Op::kRemove) && i < 0) {
      VersionLock::Release(&l->version, held, false);
      return {Outcome::kNotFound};
    }
    if (op == Op::kRemove) {
      bitmap &= ~(uint64_t{1} << i);
    } else {
      if (bitmap == ~uint64_t{0}) return {Outcome::kFull};
      const int j = __builtin_ctzll(~bitmap);
      const bool reorder = pm::mutant("fptree.bitmap_before_kv");
      uint64_t next_bitmap = bitmap | uint64_t{1} << j;
      if (i >= 0) next_bitmap &= ~(uint64_t{1} << i);
      if (reorder) {  // the bug: commit first, then the data
        Store(l->bitmap, next_bitmap);
        pc.persist(&l->bitmap, 8);
      }
      Store(l->kv[j].key, key);
      Store(l->kv[j].value, value);
      pc.persist(&l->kv[j], sizeof(Entry));  // pair durable before its fingerprint
      Store(l->fp[j], Fingerprint(key));
      pc.persist(&l->fp[j], 1);  // and both before the bitmap names them
      if (reorder) {
        VersionLock::Release(&l->version, held, true);
        return {Outcome::kDone};
      }
      bitmap = next_bitmap;
    }
    Store(l->bitmap, bitmap);  // commit: one 8-byte store
    pc.persist(&l->bitmap, 8);
    VersionLock::Release(&l->version, held, true);
    return {Outcome::kDone, bitmap == 0, static_cast<uint32_t>(__builtin_popcountll(bitmap))};
  }

  static Status Recover(pm::PersistContext& pc, Leaf* l) {
    l->prev = 0;
    return Verify(l);
  }

  static Status Verify(const Leaf* l) {
    for (uint64_t m = l->bitmap; m != 0; m &= m - 1) {
      const int i = __builtin_ctzll(m);
      if (l->fp[i] != Fingerprint(l->kv[i].key)) {
        return Status::Corruption("fingerprint of slot " + std::to_string(i) + " is wrong");
      }
      for (uint64_t r = m & (m - 1); r != 0; r &= r - 1) {
        if (l->kv[__builtin_ctzll(r)].key == l->kv[i].key) {
          return Status::Corruption("key " + std::to_string(l->kv[i].key) + " twice");
        }
      }
    }
    return Status::OK();
  }
};

}  // namespace pmindex::btree

#endif  // PMINDEX_BTREE_FPTREE_LEAF_H_
