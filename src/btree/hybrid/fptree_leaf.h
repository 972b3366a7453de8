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
// Thread safety: natively concurrent. A writer holds the leaf lock through its persists, as
// in the paper's "selective concurrency". Readers, by default, wait while a leaf is locked
// and retry when its version moved (which is what makes FPTree collapse under skew): not the
// paper's reader, whose hardware transaction aborts on a locked leaf and re-traverses from
// the root; readers=retraverse does that (hybrid_tree.h, read_begin).
//
// Variants (variant.h): readers=retraverse, and split=native, the paper's split with its
// micro-log (below), in place of the hybrid trees' shared copy-on-write split.
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
#include "btree/hybrid/variant.h"
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

// FPTree's split micro-log (split=native): the paper's PCurrentLeaf and PNewLeaf, in the
// pool's root area at FPTreeLayout::kSplitLogOffset (BTreeRoot holds bytes 0..23).
//
//   off 0  current   u64  pool offset of the leaf being split, 0 = no split in flight
//   off 8  new_leaf  u64  pool offset of its new right sibling, 0 = not yet allocated
//
// One log: native splits take turns (HybridTree::split_mu_), see doc/fptree.md.
struct FPTreeSplitLog {
  uint64_t current;
  uint64_t new_leaf;
};
static_assert(sizeof(FPTreeSplitLog) == 16 && offsetof(FPTreeSplitLog, new_leaf) == 8);

struct FPTreeLayout {
  using Leaf = FPTreeLeaf;
  static constexpr const char* kName = "fptree";
  static constexpr IndexKind kKind = IndexKind{13};  // never reuse or renumber (doc/format.md)
  // Test-only crash bugs (pm/mutant.h) at this layout's mutation points.
  static std::vector<MutantInfo> Mutants() {
    return {{"fptree.bitmap_before_kv",
             "the bitmap bit is set and persisted before KV and fingerprint"},
            {"fptree.split_log_reset_before_link",
             "split=native: the micro-log is reset before the old leaf's next names the new "
             "one",
             "", "FPTreeVariantTest.NativeSplitMutantsAreCaught"},
            {"fptree.split_link_before_new_bitmap",
             "split=native: the new leaf is linked before its bitmap persists", "",
             "FPTreeVariantTest.NativeSplitMutantsAreCaught"}};
  }
  // readers=retraverse and split=native (variant.h); the split's log and steps are below.
  static constexpr HybridVariantSupport kVariants{.retraverse_readers = true,
                                                  .native_split = true};
  static constexpr bool kMicroLogSplit = true;
  using SplitLog = FPTreeSplitLog;
  static constexpr size_t kSplitLogOffset = 1024;  // in the root area, clear of BTreeRoot
  static constexpr const char* kDescription =
      "FPTree leaves (bitmap + 1-byte fingerprints, unsorted) under DRAM inner nodes";
  static constexpr const char* kConcurrency =
      "concurrent: optimistic inner nodes, leaf lock held through persists, readers retry";
  static constexpr size_t kCapacity = Leaf::kCapacity;
  static constexpr uint32_t kLayoutVersion = 2;  // 2: volatile words moved to line 0
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

  // kInRange (split=native, whose split keeps the old leaf): `base` is the pool's base, and a
  // leaf that a split shrank while this writer waited for its lock is left with kRetry.
  template <bool kInRange = false>
  [[gnu::always_inline]] static WriteResult Write(pm::PersistContext& pc, Leaf* l, Op op,
                                                 uint64_t key, uint64_t value,
                                                 const char* base = nullptr) {
    uint64_t held;  // the word as locked: Release stores without reading it
    if (!VersionLock::Lock(&l->version, kGen, &held)) return {Outcome::kRetry};
    if constexpr (kInRange) {
      if (!InRange(l, key, base)) {
        VersionLock::Release(&l->version, held, false);
        return {Outcome::kRetry};
      }
    }
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

  // ---- split=native: FPTree's split with its micro-log (the paper's SplitLeaf) -----------
  //
  // The old leaf stays and keeps its lower half; a new right sibling takes the upper half:
  //   1. log.current = the leaf, persist          2. log.new_leaf = the new block, persist
  //   3. copy the leaf's fingerprints and pairs into the new one (bitmap 0), persist
  //   4. new bitmap = the upper half's slots, persist
  //   5. old bitmap = the lower half's slots, persist
  //   6. old next = the new leaf, persist (the link)
  //   7. reset the log, persist
  // Crash argument: RecoverSplit rolls back before step 5 (the old leaf still whole, the new
  // block unreachable: the allocator's rebuild frees it) and finishes after it (step 4 made
  // the new leaf whole before the old one gave its half away), then resets the log.

  // True if `key` is still this leaf's (a native split may have moved it right). The
  // acquire pairs with step 6's release: the new leaf's low key is then visible.
  static bool InRange(const Leaf* l, uint64_t key, const char* base) {
    const uint64_t nx = LoadAcquire(l->next);
    return nx == 0 || key < Load(reinterpret_cast<const Leaf*>(base + nx)->low_key);
  }

  // Steps 1-7 on locked, full `l` with the free block `fresh` (`n` its address). Returns the
  // split key (the new leaf's low key).
  static uint64_t SplitInPlace(pm::PersistContext& pc, FPTreeSplitLog* log, Leaf* l,
                               uint64_t l_off, Leaf* n, uint64_t fresh) {
    Store(log->current, l_off);
    pc.persist(&log->current, 8);  // 1: a crash from here on is seen by recovery
    Store(log->new_leaf, fresh);
    pc.persist(&log->new_leaf, 8);  // 2: the block is named (rebuild frees it if unlinked)
    uint64_t keys[kCapacity];
    for (size_t i = 0; i < kCapacity; ++i) keys[i] = l->kv[i].key;
    std::nth_element(keys, keys + kCapacity / 2, keys + kCapacity);
    const uint64_t split_key = keys[kCapacity / 2];
    uint64_t upper = 0;
    for (size_t i = 0; i < kCapacity; ++i) upper |= uint64_t{l->kv[i].key >= split_key} << i;
    n->version = 0;
    n->prev = 0;
    std::memset(n->pad0, 0, sizeof(n->pad0));
    std::memset(n->pad1, 0, sizeof(n->pad1));
    n->bitmap = 0;
    n->next = l->next;
    n->low_key = split_key;
    std::memcpy(n->fp, l->fp, sizeof(n->fp));
    std::memcpy(n->kv, l->kv, sizeof(n->kv));
    pc.flush(&n->bitmap, sizeof(Leaf) - offsetof(Leaf, bitmap));
    pc.fence();  // 3: the copy (unlinked, bitmap 0)
    const bool late_bitmap = pm::mutant("fptree.split_link_before_new_bitmap");
    Store(n->bitmap, upper);
    if (!late_bitmap) pc.persist(&n->bitmap, 8);  // 4: the new leaf is whole
    Store(l->bitmap, ~upper);
    pc.persist(&l->bitmap, 8);  // 5: the old leaf gives its upper half away
    const bool early_reset = pm::mutant("fptree.split_log_reset_before_link");
    if (early_reset) ResetSplitLog(pc, log);
    StoreRelease(l->next, fresh);
    pc.persist(&l->next, 8);  // 6: the link
    if (late_bitmap) pc.persist(&n->bitmap, 8);
    if (!early_reset) ResetSplitLog(pc, log);  // 7: the split is done
    return split_key;
  }

  static void ResetSplitLog(pm::PersistContext& pc, FPTreeSplitLog* log) {
    Store(log->current, uint64_t{0});  // first: a torn reset that kept new_leaf is ignored
    Store(log->new_leaf, uint64_t{0});
    pc.persist(log, sizeof(*log));
  }

  // Recovery of an interrupted native split (before the chain walk; never allocates).
  // Crash argument: see the steps above; each action is idempotent, so a crash during
  // recovery repeats it.
  static Status RecoverSplit(pm::PersistContext& pc, FPTreeSplitLog* log, char* base,
                             uint64_t size) {
    const uint64_t c = log->current;
    const uint64_t n = log->new_leaf;
    if (c != 0 && n != 0) {  // current 0: no split in flight (a reset that tore)
      for (uint64_t o : {c, n}) {
        if (o % 64 != 0 || o < 4096 || o + sizeof(Leaf) > size || c == n) {
          return Status::Corruption("split log names leaf offset " + std::to_string(o));
        }
      }
      Leaf* l = reinterpret_cast<Leaf*>(base + c);
      if (l->bitmap != ~uint64_t{0} && l->next != n) {  // after step 5: finish
        l->next = n;
        pc.persist(&l->next, 8);
      }  // else before step 5 (roll back: the new block stays unreachable) or linked
    }
    if (c != 0 || n != 0) ResetSplitLog(pc, log);
    return Status::OK();
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
