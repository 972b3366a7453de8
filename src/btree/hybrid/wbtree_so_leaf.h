// wB+-Tree-SO leaf ("slot-only", Chen and Jin, VLDB 2015): the slot array is one 8-byte word
// (count + 7 one-byte kv indexes in key order), so it is written with one failure-atomic
// store and needs no valid bit; the price is 7 entries per leaf. Primitives (Götze et al.):
// indirection in an atomic word. KV slots not named by the word are free.
//
// Layout (160 bytes, 3 cache lines; allocator class 192):
//
//   line 0   off  0  next     u64  persistent  pool offset of the right neighbour
//            off  8  low_key  u64  persistent  lower bound of the key range (immutable)
//            off 16  slots    u64  persistent  byte 0 count, bytes 1..7 kv indexes: commit word
//            off 24  version  u64  volatile    lock / version word
//            off 32  prev     u64  volatile    DRAM pointer to the left neighbour (hint)
//            off 40  pad      u64
//            off 48  kv[0]    16 B
//   line 1-2 off 64  kv[1..6] 16 B each
//
// The lock word shares line 0 with the slot word, which every write persists, and a flush
// may evict the line: the writer releases the lock without reading the word
// (VersionLock::Release).
//
// Insert and update (2 persistent instructions): write kv[j] (a slot the word does not name),
// persist; store the new slot word, persist. Remove: the slot word only (1).
//
// Crash argument: the slot word is the only commit and is one 8-byte store; kv[j] is durable
// before the word names it and slots the word names are never overwritten.
//
// Thread safety: concurrent writers (hybrid_tree.h; wB+-Tree's paper is single-threaded): a
// writer holds the leaf's version word locked from its read of the slot word through the
// KV's and the slot word's persists and bumps it on release, so writers of one leaf take
// turns and writers of different leaves run in parallel. Readers load the slot word and the
// KVs with relaxed atomics (writers store them so) and validate the version after reading.
#ifndef PMINDEX_BTREE_WBTREE_SO_LEAF_H_
#define PMINDEX_BTREE_WBTREE_SO_LEAF_H_

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "btree/hybrid/leaf_common.h"
#include "pm/mutant.h"
#include "pm/persist.h"
#include "pmindex/index.h"
#include "pmindex/pool.h"
#include "pmindex/status.h"

namespace pmindex::btree {

struct WBTreeSOLeaf {
  static constexpr size_t kCapacity = 7;
  uint64_t next;
  uint64_t low_key;
  uint64_t slots;
  uint64_t version;
  uint64_t prev;
  uint64_t pad;
  Entry kv[kCapacity];
};
static_assert(sizeof(WBTreeSOLeaf) == 160);
static_assert(offsetof(WBTreeSOLeaf, slots) == 16 && offsetof(WBTreeSOLeaf, version) == 24);
static_assert(offsetof(WBTreeSOLeaf, kv) == 48);

struct WBTreeSOLayout {
  using Leaf = WBTreeSOLeaf;
  static constexpr const char* kName = "wbtree-so";
  static constexpr IndexKind kKind = IndexKind{12};  // never reuse or renumber (doc/format.md)
  // Test-only crash bugs (pm/mutant.h) at this layout's mutation points.
  static std::vector<MutantInfo> Mutants() {
    return {{"wbtree-so.skip_kv_persist",
             "the KV is not persisted before the slot word names it"}};
  }
  static constexpr const char* kDescription =
      "wB+-Tree-SO leaves (8-byte atomic slot word, 7 entries) under DRAM inner nodes";
  static constexpr const char* kConcurrency =
      "concurrent (FPTree-style, not the paper's single thread): leaf lock held through "
      "persists, optimistic readers retry";
  static constexpr size_t kCapacity = Leaf::kCapacity;
  static constexpr uint32_t kLayoutVersion = 1;
  static constexpr bool kReadersWaitForWriters = true;

  // Clamped: a reader never indexes past the word, whatever it loaded.
  static size_t Count(uint64_t w) { return std::min<size_t>(w & 0xff, kCapacity); }
  static size_t Slot(uint64_t w, size_t p) { return (w >> (8 * (p + 1))) & 0xff; }  // p 0-based
  static uint64_t Make(const uint8_t* idx, size_t n) {
    uint64_t w = n;
    for (size_t p = 0; p < n; ++p) w |= uint64_t{idx[p]} << (8 * (p + 1));
    return w;
  }

  static size_t LowerBound(const Leaf* l, uint64_t w, uint64_t key) {
    size_t p = 0;
    const size_t n = Count(w);
    while (p < n && Load(l->kv[Slot(w, p)].key) < key) ++p;  // 7 entries: linear beats binary
    return p;
  }

  static void Init(pm::PersistContext& pc, Leaf* l, uint64_t low_key, uint64_t next, const Entry* e, size_t n) {
    l->next = next;
    l->low_key = low_key;
    const uint8_t idx[7] = {0, 1, 2, 3, 4, 5, 6};
    l->slots = Make(idx, n);
    l->version = 0;
    l->prev = 0;
    l->pad = 0;
    std::copy(e, e + n, l->kv);
    pc.flush(l, offsetof(Leaf, kv) + n * sizeof(Entry));  // caller fences
  }

  static void Prefetch(const Leaf* l) { PrefetchLines(l, 64, 192); }

  static bool Find(const Leaf* l, uint64_t key, uint64_t* value) {
    const uint64_t w = Load(l->slots);
    const size_t p = LowerBound(l, w, key);
    if (p == Count(w) || Load(l->kv[Slot(w, p)].key) != key) return false;
    *value = Load(l->kv[Slot(w, p)].value);
    return true;
  }

  static size_t CollectSorted(const Leaf* l, uint64_t from, Entry* out) {
    const uint64_t w = Load(l->slots);
    size_t n = 0;
    for (size_t p = LowerBound(l, w, from); p < Count(w); ++p) {
      const Entry& e = l->kv[Slot(w, p)];
      out[n++] = Entry{Load(e.key), Load(e.value)};
    }
    return n;
  }

  static size_t LiveCount(const Leaf* l) { return Count(Load(l->slots)); }

  [[gnu::always_inline]] static WriteResult Write(pm::PersistContext& pc, Leaf* l, Op op,
                                                 uint64_t key, uint64_t value) {
    uint64_t held;  // the word as locked: Release stores without reading it
    if (!VersionLock::Lock(&l->version, kGen, &held)) return {Outcome::kRetry};
    const uint64_t w = l->slots;
    const size_t n = Count(w);
    const size_t p = LowerBound(l, w, key);
    const bool present = p < n && l->kv[Slot(w, p)].key == key;
    if (op == Op::kInsert && present) {
      VersionLock::Release(&l->version, held, false);
      return {Outcome::kExists};
    }
    if ((op == Op::kUpdate || op == Op::kRemove) && !present) {
      VersionLock::Release(&l->version, held, false);
      return {Outcome::kNotFound};
    }
    uint8_t idx[kCapacity + 1];
    uint32_t used = 0;
    for (size_t q = 0; q < n; ++q) {
      idx[q] = static_cast<uint8_t>(Slot(w, q));
      used |= 1u << idx[q];
    }
    size_t m = n;
    if (op == Op::kRemove) {
      std::copy(idx + p + 1, idx + n, idx + p);
      --m;
    } else {
      const uint32_t free = ~used & ((1u << kCapacity) - 1);
      if (free == 0) return {Outcome::kFull};
      const uint8_t j = static_cast<uint8_t>(__builtin_ctz(free));
      Store(l->kv[j].key, key);  // a free slot, but a reader that overlapped may look
      Store(l->kv[j].value, value);
      if (!pm::mutant("wbtree-so.skip_kv_persist")) pc.persist(&l->kv[j], sizeof(Entry));
      if (present) {
        idx[p] = j;
      } else {
        std::copy_backward(idx + p, idx + n, idx + n + 1);
        idx[p] = j;
        ++m;
      }
    }
    Store(l->slots, Make(idx, m));  // commit: one 8-byte store
    pc.persist(&l->slots, 8);
    VersionLock::Release(&l->version, held, true);
    return {Outcome::kDone, m == 0, static_cast<uint32_t>(m)};
  }

  static Status Recover(pm::PersistContext& pc, Leaf* l) {
    l->prev = 0;
    return Verify(l);
  }

  static Status Verify(const Leaf* l) {
    const uint64_t w = l->slots;
    const size_t n = Count(w);
    if (n > kCapacity) return Status::Corruption("slot count " + std::to_string(n));
    uint32_t seen = 0;
    for (size_t p = 0; p < n; ++p) {
      const size_t i = Slot(w, p);
      if (i >= kCapacity || (seen >> i & 1)) return Status::Corruption("bad slot index");
      seen |= 1u << i;
      if (p > 0 && l->kv[Slot(w, p - 1)].key >= l->kv[i].key) {
        return Status::Corruption("slot word out of key order");
      }
    }
    for (size_t p = n + 1; p < 8; ++p) {
      if ((w >> (8 * p)) & 0xff) return Status::Corruption("slot word has stray bytes");
    }
    return Status::OK();
  }
};

}  // namespace pmindex::btree

#endif  // PMINDEX_BTREE_WBTREE_SO_LEAF_H_
