// Small pieces shared by the persistent radix trees (WORT, WOART): the root child word,
// leaf allocation and the failure-atomic value update.
//
// Thread safety: callers hold the tree's writer lock for every function that writes; every
// store into a published block is atomic, for the lock-free lookups.
#ifndef PMINDEX_RADIX_COMMON_PM_TREE_UTIL_H_
#define PMINDEX_RADIX_COMMON_PM_TREE_UTIL_H_

#include <cstdint>
#include <string_view>

#include "pm/alloc.h"
#include "pm/mutant.h"
#include "pm/persist.h"
#include "pmindex/pool.h"
#include "radix/common/node_search.h"
#include "radix/common/pm_leaf.h"
#include "radix/common/prefix_header.h"

namespace pmindex::radix {

// The tree's root child word: the first 8 bytes of the pool's root area (zeroed at pool
// creation: a fresh pool is an empty tree).
inline uint64_t* RootSlot(Pool& pool) { return reinterpret_cast<uint64_t*>(pool.root_area()); }

// The root area's second word holds kEmptyTreeMark while the tree is empty by design (new,
// or its last key removed), so that a root word of 0 in a tree that was not empty (a
// damaged pool) is told apart from an empty tree instead of being opened as one, which would
// free every block at the allocator rebuild.
//
//   root area offset 0  root child word
//             offset 8  empty mark: kEmptyTreeMark or 0
//
// Crash argument: the mark is set (persisted) before the root word is cleared and cleared
// after the root word became non-zero, so whenever the root word is 0 the mark is set. A
// non-zero root word makes the mark irrelevant.
inline constexpr uint64_t kEmptyTreeMark = 0x7974706d45656572ull;  // "reeEmpty"
inline uint64_t* EmptyMarkSlot(Pool& pool) { return RootSlot(pool) + 1; }
inline void MarkEmpty(Pool& pool) {
  uint64_t* mark = EmptyMarkSlot(pool);
  if (*mark == kEmptyTreeMark) return;
  StoreWord(mark, kEmptyTreeMark);
  pool.persist_context().persist(mark, 8);
}
inline void ClearEmptyMark(Pool& pool) {
  uint64_t* mark = EmptyMarkSlot(pool);
  if (*mark == 0 || *RootSlot(pool) == 0) return;
  StoreWord(mark, 0);
  pool.persist_context().persist(mark, 8);
}
// At attach: a fresh pool is marked empty; an existing one whose root word is 0 must be
// marked empty, unless no chunk is carved (nothing could be lost: a pool made before the
// mark existed, or one whose creation was interrupted - atomic creation hides those).
inline Status CheckRootWord(Pool& pool, bool fresh, const char* name) {
  if (fresh) {
    MarkEmpty(pool);
    return Status::OK();
  }
  if (*RootSlot(pool) != 0 || *EmptyMarkSlot(pool) == kEmptyTreeMark) return Status::OK();
  const uint64_t carved = pool.allocator().carved_chunks();
  if (carved == 0) return Status::OK();
  return Status::Corruption(pool.path() + ": " + name +
                            " root word is 0 but the tree was not empty (" +
                            std::to_string(carved) + " chunks carved): its root is lost");
}

// True if child word `w` can be followed without leaving the pool: a known tag, a 64-byte
// aligned offset past the pool header, `extent` bytes of node inside the pool, and for a
// leaf its recorded lengths inside the pool and the limits. Used by verify() and the block
// visitor, which must survive arbitrarily corrupted pools.
inline bool ValidChildWord(const Pool& pool, uint64_t w, uint64_t max_tag, size_t extent) {
  const uint64_t off = ChildOffset(w);
  const uint64_t tag = ChildTagOf(w);
  if (tag < kTagLeaf || tag > max_tag || off % 64 != 0 || off < 4096 || off + 64 > pool.size())
    return false;
  if (tag != kTagLeaf) return off + extent <= pool.size();
  const PmLeaf* l = pool.at<PmLeaf>(off);
  return l->key_len != 0 && l->key_len <= kMaxKeySize && off + l->size() <= pool.size();
}

// Allocates and fills (does not persist) a leaf; *word gets its tagged child word.
inline Result<PmLeaf*> NewLeaf(Pool& pool, std::string_view key, std::string_view value,
                               uint64_t* word) {
  Result<uint64_t> off = pool.allocator().allocate(PmLeaf::SizeFor(key.size(), value.size()));
  if (!off.ok()) return off.status();
  *word = MakeChild(*off, kTagLeaf);
  return PmLeaf::Init(pool.at<void>(*off), key, value);
}

// Publishes `word` in `slot` with one 8-byte store and persists it: the commit point of
// every structural change of WORT and WOART.
inline void CommitWord(pm::PersistContext& pc, uint64_t* slot, uint64_t word) {
  StoreWord(slot, word);
  pc.persist(slot, 8);
}

// Replaces the value of the leaf linked from `slot`. Same length <= 8 bytes: one atomic
// 8-byte store into the value word (1 fence; a concurrent lookup reads the word with one
// atomic load, so it gets the old or the new value). Otherwise a new leaf is persisted,
// swapped in with one 8-byte store and the old leaf retired after that store is durable
// (unreachable; lookups that reached it before the swap may still read it), 2 fences.
inline Status ReplaceLeafValue(Pool& pool, uint64_t* slot, PmLeaf* leaf, std::string_view value,
                               const char* skip_leaf_persist_mutant) {
  if (value.size() == leaf->value_len && value.size() <= 8) {
    CommitWord(pool.persist_context(), &leaf->value_word, PmLeaf::PackSmallValue(value));
    return Status::OK();
  }
  uint64_t word;
  Result<PmLeaf*> fresh = NewLeaf(pool, leaf->key(), value, &word);
  if (!fresh.ok()) return fresh.status();
  pm::PersistContext& pc = pool.persist_context();
  if (!pm::mutant(skip_leaf_persist_mutant)) pc.flush(*fresh, (*fresh)->size());
  pc.fence();
  const uint64_t old = *slot;
  CommitWord(pc, slot, word);
  pool.allocator().retire(ChildOffset(old));
  return Status::OK();
}

}  // namespace pmindex::radix

#endif  // PMINDEX_RADIX_COMMON_PM_TREE_UTIL_H_
