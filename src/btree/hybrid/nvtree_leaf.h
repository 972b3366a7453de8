// NV-Tree leaf (Yang et al., FAST 2015, as re-implemented in the RNTree paper): an
// append-only log of (key, value) entries, each an insert/update or a removal, and an 8-byte
// count that commits them. Primitive (Götze et al.): unsorted, append-only, counter commit.
//
// Layout (1152 bytes, 18 cache lines; allocator class 1280):
//
//   line 0   off  0  version     u64  volatile    lock / version word (leaf_common.h)
//            off  8  prev        u64  volatile    DRAM pointer to the left neighbour (hint)
//            off 16  live        u64  volatile    live keys (for unlinking empty leaves)
//            off 24  pad         40 B
//   line 1   off 64  next        u64  persistent  pool offset of the right neighbour
//            off 72  low_key     u64  persistent  lower bound of the key range (immutable)
//            off 80  count       u64  persistent  entries appended: the commit word
//            off 88  tombstones  u64  persistent  bit i: entry i removes its key
//            off 96  pad         32 B
//   line 2.. off128  entries[64] 16 B each: key, value
//
// The volatile words have a line of their own that is never flushed: on this machine clwb
// evicts the line it writes back, and beside the count they missed again at every unlock.
//
// Operations (2 persistent instructions each): insert, update and remove append entry i =
// count (a removal also sets tombstone bit i), persist it; then count = i + 1, persist it.
// Lookup scans from the newest entry backwards; the first entry with the key decides.
//
// Crash argument: entries at index >= count are ignored, and entry i (with its tombstone
// bit, written in the same step) is durable before count covers it; count is one 8-byte
// failure-atomic store, so a crash leaves either the old or the new count. Tombstone bits of
// entries below count are never written again (an entry is appended once); bits at or above
// count may be left over from an append a crash cut short, so every append writes its bit.
//
// A remove that finds the log full cannot append its tombstone: the tree compacts the leaf
// into a new one without the key instead (hybrid_tree.h replace(), from its reserve block
// when the pool is full). Crash-safe like a split: the compacted leaf is durable before one
// 8-byte store links it in place of the old, so a crash leaves the key present or removed.
//
// Thread safety: concurrent writers (hybrid_tree.h; NV-Tree's paper is single-threaded): a
// writer holds the leaf's version word locked from its first read of the leaf (the scan for
// the key) through its append's persists and its `live` count, and bumps it on release; so
// writers of one leaf take turns and writers of different leaves run in parallel. Readers
// load count, tombstones and entries with relaxed atomics (writers store them so), clamp the
// count and validate the version after reading.
#ifndef PMINDEX_BTREE_NVTREE_LEAF_H_
#define PMINDEX_BTREE_NVTREE_LEAF_H_

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

struct NVTreeLeaf {
  static constexpr size_t kCapacity = 64;
  uint64_t version;
  uint64_t prev;
  uint64_t live;
  uint64_t pad0[5];
  uint64_t next;
  uint64_t low_key;
  uint64_t count;
  uint64_t tombstones;
  uint64_t pad1[4];
  Entry entries[kCapacity];
};
static_assert(sizeof(NVTreeLeaf) == 1152);
static_assert(offsetof(NVTreeLeaf, version) == 0 && offsetof(NVTreeLeaf, live) == 16);
static_assert(offsetof(NVTreeLeaf, next) == 64 && offsetof(NVTreeLeaf, count) == 80);
static_assert(offsetof(NVTreeLeaf, tombstones) == 88 && offsetof(NVTreeLeaf, entries) == 128);

struct NVTreeLayout {
  using Leaf = NVTreeLeaf;
  static constexpr const char* kName = "nvtree";
  static constexpr IndexKind kKind = IndexKind{10};  // never reuse or renumber (doc/format.md)
  // Test-only crash bugs (pm/mutant.h) at this layout's mutation points.
  static std::vector<MutantInfo> Mutants() {
    return {{"nvtree.skip_entry_persist",
             "the appended entry is not flushed before `count` covers it"},
            {"nvtree.basic_skip_entry_persist",
             "writes=basic: the blindly appended entry is not flushed before `count` covers it",
             "", "NVTreeBasicCrashTest.MutantsAreCaught"},
            {"nvtree.pm_inner_skip_node_persist",
             "inner=pm: a new inner node is linked into its parent before it is persisted", "",
             "PmInnerPersistTest.MutantIsCaught"}};
  }
  static constexpr const char* kDescription =
      "NV-Tree leaves (append-only log + 8-byte count) under DRAM inner nodes";
  static constexpr const char* kConcurrency =
      "concurrent (FPTree-style, not the paper's single thread): leaf lock held through "
      "persists, optimistic readers retry";
  static constexpr size_t kCapacity = Leaf::kCapacity;
  static constexpr uint32_t kLayoutVersion = 2;  // 2: volatile words moved to line 0
  static constexpr bool kReadersWaitForWriters = true;
  static constexpr HybridVariantSupport kVariants{.basic_writes = true};

  // `live` of a leaf written by writes=basic, which does not know whether a key is new.
  static constexpr uint64_t kLiveUnknown = UINT64_MAX;
  static uint32_t LiveHint(const Leaf* l) {
    return l->live == kLiveUnknown ? kCapacity : static_cast<uint32_t>(l->live);
  }

  // Appends entry j = count (a removal when `tomb`) and commits it: the entry and its
  // tombstone bit are durable before count = j + 1 covers them (one fence), then count is
  // persisted. The caller holds the lock and has checked that the log has room.
  [[gnu::always_inline]] static void Append(pm::PersistContext& pc, Leaf* l, uint64_t key,
                                            uint64_t value, bool tomb_it, const char* mutant) {
    const uint64_t j = l->count;
    Store(l->entries[j].key, key);  // beyond count, but a reader that overlapped may look
    Store(l->entries[j].value, value);
    if (!pm::mutant(mutant)) pc.flush(&l->entries[j], sizeof(Entry));
    // Bit j may be stale from an append a crash cut short: always write it for this entry.
    const uint64_t bit = uint64_t{1} << j;
    const uint64_t tomb = tomb_it ? l->tombstones | bit : l->tombstones & ~bit;
    if (tomb != l->tombstones) {
      Store(l->tombstones, tomb);
      pc.flush(&l->tombstones, 8);
    }
    pc.fence();       // entry durable before the count covers it
    Store(l->count, j + 1);  // commit
    pc.persist(&l->count, 8);
  }

  // Newest entry for `key` below count: its index, or -1.
  static size_t Count(const Leaf* l) { return std::min<uint64_t>(Load(l->count), kCapacity); }
  static int Newest(const Leaf* l, uint64_t key) {
    for (int i = static_cast<int>(Count(l)) - 1; i >= 0; --i) {
      if (Load(l->entries[i].key) == key) return i;
    }
    return -1;
  }

  static void Init(pm::PersistContext& pc, Leaf* l, uint64_t low_key, uint64_t next, const Entry* e, size_t n) {
    l->next = next;
    l->low_key = low_key;
    l->count = n;
    l->tombstones = 0;
    l->version = 0;
    l->prev = 0;
    l->live = n;
    std::memset(l->pad0, 0, sizeof(l->pad0));
    std::memset(l->pad1, 0, sizeof(l->pad1));
    std::copy(e, e + n, l->entries);
    // Line 0 is volatile (recovery resets it); the caller fences.
    pc.flush(&l->next, offsetof(Leaf, entries) - offsetof(Leaf, next) + n * sizeof(Entry));
  }

  // Lines a lookup reads, requested together when the leaf is reached.
  static void Prefetch(const Leaf* l) { PrefetchLines(l, 64, sizeof(Leaf)); }

  static bool Find(const Leaf* l, uint64_t key, uint64_t* value) {
    const int i = Newest(l, key);
    if (i < 0 || (Load(l->tombstones) >> i & 1)) return false;
    *value = Load(l->entries[i].value);
    return true;
  }

  static size_t CollectSorted(const Leaf* l, uint64_t from, Entry* out) {
    // Newest entry per key wins: sort (key, -index), keep each key's first, drop removals.
    struct Item {
      uint64_t key;
      int idx;
    };
    Item items[kCapacity];
    size_t m = 0;
    const size_t count = Count(l);
    for (size_t i = 0; i < count; ++i) {
      const uint64_t k = Load(l->entries[i].key);
      if (k >= from) items[m++] = {k, static_cast<int>(i)};
    }
    std::sort(items, items + m, [](const Item& a, const Item& b) {
      return a.key != b.key ? a.key < b.key : a.idx > b.idx;
    });
    size_t n = 0;
    const uint64_t tombstones = Load(l->tombstones);
    for (size_t i = 0; i < m; ++i) {
      if (i > 0 && items[i].key == items[i - 1].key) continue;
      if (tombstones >> items[i].idx & 1) continue;
      out[n++] = Entry{items[i].key, Load(l->entries[items[i].idx].value)};
    }
    return n;
  }

  static size_t LiveCount(const Leaf* l) { return l->live; }

  [[gnu::always_inline]] static WriteResult Write(pm::PersistContext& pc, Leaf* l, Op op,
                                                 uint64_t key, uint64_t value) {
    uint64_t held;  // the word as locked: Release stores without reading it
    if (!VersionLock::Lock(&l->version, kGen, &held)) return {Outcome::kRetry};
    const int i = Newest(l, key);
    const bool present = i >= 0 && !(l->tombstones >> i & 1);
    if (op == Op::kInsert && present) {
      VersionLock::Release(&l->version, held, false);
      return {Outcome::kExists};
    }
    if ((op == Op::kUpdate || op == Op::kRemove) && !present) {
      VersionLock::Release(&l->version, held, false);
      return {Outcome::kNotFound};
    }
    if (l->count == kCapacity) return {Outcome::kFull};
    Append(pc, l, key, op == Op::kRemove ? 0 : value, op == Op::kRemove,
           "nvtree.skip_entry_persist");
    if (l->live != kLiveUnknown) {
      if (op == Op::kRemove) {
        --l->live;
      } else if (!present) {
        ++l->live;
      }
    }
    // Read under the lock: once it is released, another writer may change `live`.
    const WriteResult done{Outcome::kDone, l->live == 0, LiveHint(l)};
    VersionLock::Release(&l->version, held, true);
    return done;
  }

  // writes=basic (variant.h): NV-Tree's basic variant, without conditional write. An insert,
  // update or upsert appends its entry without scanning the log for the key (the newest
  // entry wins on lookup, as in every NV-Tree log), so all three are upserts: insert of a
  // present key overwrites it, update of an absent key adds it. Without the scan the leaf
  // cannot know whether the key is new: `live` becomes kLiveUnknown until recovery (or a
  // compaction) counts it again, and the tree neither merges nor unlinks such a leaf.
  // Crash argument: the same append and count commit as Write.
  [[gnu::always_inline]] static WriteResult WriteBlind(pm::PersistContext& pc, Leaf* l,
                                                      uint64_t key, uint64_t value) {
    uint64_t held;
    if (!VersionLock::Lock(&l->version, kGen, &held)) return {Outcome::kRetry};
    if (l->count == kCapacity) return {Outcome::kFull};
    Append(pc, l, key, value, false, "nvtree.basic_skip_entry_persist");
    l->live = kLiveUnknown;
    VersionLock::Release(&l->version, held, true);
    return {Outcome::kDone, false, kCapacity};
  }

  // Resets volatile fields and checks the commit word.
  static Status Recover(pm::PersistContext& pc, Leaf* l) {
    if (l->count > kCapacity) return Status::Corruption("count " + std::to_string(l->count));
    l->prev = 0;
    Entry buf[kCapacity];
    l->live = CollectSorted(l, 0, buf);
    return Status::OK();
  }

  static Status Verify(const Leaf* l) {
    if (l->count > kCapacity) return Status::Corruption("count " + std::to_string(l->count));
    Entry buf[kCapacity];
    if (l->live != kLiveUnknown && CollectSorted(l, 0, buf) != l->live) {
      return Status::Corruption("live count is stale");
    }
    return Status::OK();
  }
};

}  // namespace pmindex::btree

#endif  // PMINDEX_BTREE_NVTREE_LEAF_H_
