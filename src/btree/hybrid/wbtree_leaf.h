// wB+-Tree leaf (Chen and Jin, VLDB 2015): an unsorted array of KV slots with a bitmap of the
// used ones, and a slot array of 1-byte indexes in key order (slots[0] = count) for binary
// search. The slot array is a cache line, larger than the 8-byte failure-atomic store, so it
// is guarded by a valid bit in the bitmap word. Primitives (Götze et al.): indirection
// (slot array) + bitmap, valid-bit commit.
//
// Layout (1136 bytes, 18 cache lines; allocator class 1280):
//
//   line 0   off  0  next       u64  persistent  pool offset of the right neighbour
//            off  8  low_key    u64  persistent  lower bound of the key range (immutable)
//            off 16  bitmap     u64  persistent  bits 0..62: kv[i] in use; bit 63: slots valid
//            off 24  version    u64  volatile    lock / version word
//            off 32  prev       u64  volatile    DRAM pointer to the left neighbour (hint)
//            off 40  pad        24 B
//   line 1   off 64  slots[64]  u8   persistent  slots[0] = count, slots[1..count] = kv index
//   line 2.. off128  kv[63]     16 B each
//
// The lock word shares line 0 with the bitmap, which every write persists, and a flush may
// evict the line: the writer releases the lock without reading the word
// (VersionLock::Release) and reads nothing of a line after persisting it.
//
// Insert (4 persistent instructions): write kv[j] (a free slot), persist; clear the valid
// bit, persist; rewrite the slot array, persist; set bit j and the valid bit in one 8-byte
// store, persist. Update is the same with bit i cleared in the last store; remove skips the
// kv write (3).
//
// Crash argument: while the valid bit is set the slot array matches the bitmap (it is only
// rewritten while the bit is clear, and the bit is set again by the same store that makes
// the bitmap match the new array). If a crash leaves it clear, recovery rebuilds the slot
// array from the bitmap's entries sorted by key, i.e. the state before the interrupted
// operation's last store (the bitmap word is that store). kv[j] is durable before the bitmap
// names it.
//
// Thread safety: concurrent writers (hybrid_tree.h; wB+-Tree's paper is single-threaded): a
// writer holds the leaf's version word locked from its first read of the leaf to its last
// store (KV, bitmap, slot array, each persisted) and bumps it on release, so writers of one
// leaf take turns, writers of different leaves run in parallel, and a reader that overlapped
// a change fails its validation and reads again. Readers load the slot array and the KVs
// with relaxed atomics (writers store them so) and never leave the leaf on a torn read: the
// count is clamped and every slot byte a writer ever stores names a KV slot.
#ifndef PMINDEX_BTREE_WBTREE_LEAF_H_
#define PMINDEX_BTREE_WBTREE_LEAF_H_

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

struct WBTreeLeaf {
  static constexpr size_t kCapacity = 63;
  static constexpr uint64_t kValid = uint64_t{1} << 63;
  static constexpr uint64_t kSlotMask = kValid - 1;
  uint64_t next;
  uint64_t low_key;
  uint64_t bitmap;
  uint64_t version;
  uint64_t prev;
  uint64_t pad[3];
  uint8_t slots[64];
  Entry kv[kCapacity];
};
static_assert(sizeof(WBTreeLeaf) == 1136);
static_assert(offsetof(WBTreeLeaf, bitmap) == 16 && offsetof(WBTreeLeaf, version) == 24);
static_assert(offsetof(WBTreeLeaf, slots) == 64 && offsetof(WBTreeLeaf, kv) == 128);

struct WBTreeLayout {
  using Leaf = WBTreeLeaf;
  static constexpr const char* kName = "wbtree";
  static constexpr IndexKind kKind = IndexKind{11};  // never reuse or renumber (doc/format.md)
  // Test-only crash bugs (pm/mutant.h) at this layout's mutation points.
  static std::vector<MutantInfo> Mutants() {
    return {{"wbtree.skip_kv_persist",
             "the KV is not persisted before the bitmap names it"},
            {"wbtree.skip_valid_clear",
             "the slot array is rewritten without clearing the valid bit"}};
  }
  static constexpr const char* kDescription =
      "wB+-Tree leaves (bitmap + 64-byte slot array behind a valid bit) under DRAM inner nodes";
  static constexpr const char* kConcurrency =
      "concurrent (FPTree-style, not the paper's single thread): leaf lock held through "
      "persists, optimistic readers retry";
  static constexpr size_t kCapacity = Leaf::kCapacity;
  static constexpr uint32_t kLayoutVersion = 1;
  static constexpr uint64_t kValid = Leaf::kValid;
  static constexpr uint64_t kSlotMask = Leaf::kSlotMask;
  static constexpr bool kReadersWaitForWriters = true;

  // Position in slots[1..count] of the first key >= key (1-based), branch-free binary search.
  // Readers may race a writer (then validate): the count is clamped, slot bytes index kv.
  static size_t Count(const Leaf* l) { return std::min<size_t>(Load(l->slots[0]), kCapacity); }
  static uint64_t KeyAt(const Leaf* l, size_t p) { return Load(l->kv[Load(l->slots[p])].key); }
  static size_t LowerBound(const Leaf* l, uint64_t key) {
    size_t n = Count(l);
    if (n == 0) return 1;
    size_t base = 1;
    while (n > 1) {
      const size_t half = n / 2;
      base = KeyAt(l, base + half) < key ? base + half : base;
      n -= half;
    }
    return base + (KeyAt(l, base) < key);
  }

  static void Init(pm::PersistContext& pc, Leaf* l, uint64_t low_key, uint64_t next, const Entry* e, size_t n) {
    l->next = next;
    l->low_key = low_key;
    l->bitmap = kValid | ((n == 64 ? 0 : uint64_t{1} << n) - 1);
    l->version = 0;
    l->prev = 0;
    std::memset(l->pad, 0, sizeof(l->pad));
    std::memset(l->slots, 0, sizeof(l->slots));
    l->slots[0] = static_cast<uint8_t>(n);
    for (size_t i = 0; i < n; ++i) l->slots[i + 1] = static_cast<uint8_t>(i);
    std::copy(e, e + n, l->kv);
    pc.flush(l, offsetof(Leaf, kv) + n * sizeof(Entry));  // caller fences
  }

  // Lines a lookup reads (slot array, the KV lines the binary search probes), together.
  static void Prefetch(const Leaf* l) { PrefetchLines(l, 64, sizeof(Leaf)); }

  static bool Find(const Leaf* l, uint64_t key, uint64_t* value) {
    const size_t p = LowerBound(l, key);
    if (p > Count(l)) return false;
    const Entry& e = l->kv[Load(l->slots[p])];
    if (Load(e.key) != key) return false;
    *value = Load(e.value);
    return true;
  }

  static size_t CollectSorted(const Leaf* l, uint64_t from, Entry* out) {
    size_t n = 0;
    const size_t count = Count(l);
    for (size_t p = from == 0 ? 1 : LowerBound(l, from); p <= count; ++p) {
      const Entry& e = l->kv[Load(l->slots[p])];
      out[n++] = Entry{Load(e.key), Load(e.value)};
    }
    return n;
  }

  static size_t LiveCount(const Leaf* l) { return Count(l); }

  // Rewrites the slot array behind a cleared valid bit; `bitmap` is the word that then
  // commits it (with the valid bit).
  static void CommitSlots(pm::PersistContext& pc, Leaf* l, const uint8_t* slots, uint64_t bitmap) {
    if (!pm::mutant("wbtree.skip_valid_clear")) {
      l->bitmap &= ~kValid;
      pc.persist(&l->bitmap, 8);  // array invalid before it is torn
    }
    // Eight 8-byte stores that readers may race (they load bytes; the version word tells).
    static_assert(offsetof(Leaf, slots) % 8 == 0);
    auto* words = reinterpret_cast<uint64_t*>(l->slots);
    for (size_t w = 0; w < 8; ++w) {
      uint64_t word;
      std::memcpy(&word, slots + 8 * w, 8);
      Store(words[w], word);
    }
    pc.persist(l->slots, 64);
    l->bitmap = bitmap | kValid;  // commit
    pc.persist(&l->bitmap, 8);
  }

  [[gnu::always_inline]] static WriteResult Write(pm::PersistContext& pc, Leaf* l, Op op,
                                                 uint64_t key, uint64_t value) {
    uint64_t held;  // the word as locked: Release stores without reading it
    if (!VersionLock::Lock(&l->version, kGen, &held)) return {Outcome::kRetry};
    const size_t count = l->slots[0];
    const size_t p = LowerBound(l, key);
    const bool present = p <= count && l->kv[l->slots[p]].key == key;
    if (op == Op::kInsert && present) {
      VersionLock::Release(&l->version, held, false);
      return {Outcome::kExists};
    }
    if ((op == Op::kUpdate || op == Op::kRemove) && !present) {
      VersionLock::Release(&l->version, held, false);
      return {Outcome::kNotFound};
    }
    uint8_t slots[64];
    std::memcpy(slots, l->slots, 64);
    uint64_t bitmap = l->bitmap & kSlotMask;
    if (op == Op::kRemove) {
      bitmap &= ~(uint64_t{1} << slots[p]);
      std::memmove(slots + p, slots + p + 1, count - p);
      slots[count] = 0;
      slots[0] = static_cast<uint8_t>(count - 1);
    } else {
      const uint64_t free = ~bitmap & kSlotMask;
      if (free == 0) return {Outcome::kFull};
      const uint8_t j = static_cast<uint8_t>(__builtin_ctzll(free));
      Store(l->kv[j].key, key);  // a free slot, but a reader that overlapped may look
      Store(l->kv[j].value, value);
      if (!pm::mutant("wbtree.skip_kv_persist")) pc.persist(&l->kv[j], sizeof(Entry));
      bitmap |= uint64_t{1} << j;
      if (present) {
        bitmap &= ~(uint64_t{1} << slots[p]);
        slots[p] = j;
      } else {
        std::memmove(slots + p + 1, slots + p, count + 1 - p);
        slots[p] = j;
        slots[0] = static_cast<uint8_t>(count + 1);
      }
    }
    CommitSlots(pc, l, slots, bitmap);
    VersionLock::Release(&l->version, held, true);
    // The count from the local copy: the leaf's slot line was just written back, and a
    // flush may have evicted it (a read would wait for memory).
    return {Outcome::kDone, slots[0] == 0, slots[0]};
  }

  // Rebuilds an invalid slot array from the bitmap; checks a valid one.
  static Status Recover(pm::PersistContext& pc, Leaf* l) {
    l->prev = 0;
    if (!(l->bitmap & kValid)) {
      uint8_t slots[64] = {};
      size_t n = 0;
      for (uint64_t b = l->bitmap & kSlotMask; b != 0; b &= b - 1) {
        slots[++n] = static_cast<uint8_t>(__builtin_ctzll(b));
      }
      std::sort(slots + 1, slots + 1 + n,
                [l](uint8_t a, uint8_t b) { return l->kv[a].key < l->kv[b].key; });
      slots[0] = static_cast<uint8_t>(n);
      std::memcpy(l->slots, slots, 64);
      pc.persist(l->slots, 64);
      l->bitmap |= kValid;
      pc.persist(&l->bitmap, 8);
    }
    return Verify(l);
  }

  static Status Verify(const Leaf* l) {
    if (!(l->bitmap & kValid)) return Status::Corruption("slot array not valid");
    const size_t n = l->slots[0];
    if (n > kCapacity) return Status::Corruption("slot count " + std::to_string(n));
    uint64_t seen = 0;
    for (size_t p = 1; p <= n; ++p) {
      const uint8_t i = l->slots[p];
      if (i >= kCapacity || (seen >> i & 1)) return Status::Corruption("bad slot index");
      seen |= uint64_t{1} << i;
      if (p > 1 && l->kv[l->slots[p - 1]].key >= l->kv[i].key) {
        return Status::Corruption("slot array out of key order");
      }
    }
    if (seen != (l->bitmap & kSlotMask)) {
      return Status::Corruption("slot array does not match the bitmap");
    }
    return Status::OK();
  }
};

}  // namespace pmindex::btree

#endif  // PMINDEX_BTREE_WBTREE_LEAF_H_
