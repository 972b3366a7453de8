// What every leaf layout of the hybrid B+tree shares: the entry type, the write protocol's
// outcomes, relaxed atomic access helpers and the leaf version word.
//
// The leaf version word (8 bytes inside each leaf, volatile: reset by recovery, never
// persisted on purpose) is a pm::VersionLock word (pm/version_lock.h) of the reset generation:
// locked while a writer owns the leaf, obsolete (and locked for good) once the leaf was
// replaced (split, compaction or unlink), its version bumped when a writer changes what
// readers may see. The inner nodes' words are the same.
//
// Readers of layouts whose writers change readable state under the lock (FPTree, RNTree,
// NV-Tree, wB+-Tree) wait while the lock bit is set and retry when the version moved.
// RNTree+DS readers ignore the lock bit: its writers bump the version only when the leaf is
// replaced.
#ifndef PMINDEX_BTREE_LEAF_COMMON_H_
#define PMINDEX_BTREE_LEAF_COMMON_H_

#include <immintrin.h>

#include <atomic>
#include <cstddef>
#include <cstdint>

#include "pm/prefetch.h"
#include "pm/racy.h"
#include "pm/version_lock.h"

namespace pmindex::btree {

struct Entry {
  uint64_t key;
  uint64_t value;
};
static_assert(sizeof(Entry) == 16);

enum class Op : uint8_t { kInsert, kUpdate, kUpsert, kRemove };

enum class Outcome : uint8_t {
  kDone,      // applied and durable; lock released
  kExists,    // insert of a present key; nothing changed; lock released
  kNotFound,  // update/remove of an absent key; nothing changed; lock released
  kRetry,     // the leaf was replaced meanwhile: restart from the root; lock released
  kFull,      // no room: the caller now HOLDS the leaf lock and must replace the leaf
};

struct WriteResult {
  Outcome outcome;
  bool now_empty = false;  // a remove left the leaf without live entries
  uint32_t live = UINT32_MAX;  // live entries the write left (UINT32_MAX: not reported)
};

// Racy field accesses: the one copy in pm/racy.h.
using pm::Load;
using pm::LoadAcquire;
using pm::Store;
using pm::StoreRelease;

inline void CpuRelax() { _mm_pause(); }

using pm::PrefetchLine;
using pm::PrefetchLines;
using pm::VersionLock;
// Leaf and inner-node words are reset by recovery (or live in DRAM).
inline constexpr uint32_t kGen = VersionLock::kResetGeneration;

}  // namespace pmindex::btree

#endif  // PMINDEX_BTREE_LEAF_COMMON_H_
