// FPTree with variable-size keys (Oukid et al., SIGMOD 2016, "variable-size keys"): the
// FPTree leaf (bitmap commit word, one-byte fingerprints probed first, unsorted KV slots),
// whose slots hold a persistent pointer (pool offset) to the key, stored out of line in a
// pool block of its own, instead of the key. The fingerprint is a hash of the whole key; a
// probe reads the out-of-line key only for a slot whose fingerprint matches (the probe is
// FPTreeLayout::Matches, fptree_leaf.h, shared with the integer-key FPTree).
//
// Leaf layout (1152 bytes, 18 cache lines; allocator class 1280):
//
//   line 0   off  0  bitmap   u64  persistent  bit i: kv[i] live (the commit word)
//            off  8  next     u64  persistent  pool offset of the right neighbour
//            off 16  pad      48 B
//   line 1   off 64  fp[64]   u8   persistent  fingerprint of kv[i]'s key (if bit i set)
//   line 2.. off128  kv[64]   16 B each: key_ref (KeyRef below), value (8 bytes, little end.)
//
// KeyRef (8 bytes): bits 0..55 the pool offset of the key's KeyBlock (offsets are below
// 2^56), bits 56..63 the value's length (0..8: values of 0..8 bytes, kept in the word).
//
// KeyBlock (a pool block of at least 8 + n bytes; immutable once published):
//   off 0  length  u64  n, 1..kMaxKeySize
//   off 8  bytes   n    the key
// (the layout of the value store's out-of-line value block, src/core/value_store.cc)
//
// The tree: the leaves form a singly linked list from the root area's head (BTreeRoot,
// hybrid_tree.h, with this index's kind). Leaves hold no persistent low key: the DRAM
// inner structure (an ordered map from each leaf's lower bound, an owning copy of a key, to
// the leaf) is rebuilt at recovery from the chain, each leaf's bound its smallest key (the
// head's the empty key). A leaf's keys lie between its bound and the next leaf's, and after
// a crash the smallest key of a leaf is still above every key of the leaf before it, so the
// rebuilt bounds route every key to the leaf that holds it.
//
// Crash arguments (the bitmap, one 8-byte store, is each leaf's only commit):
//  - insert: the key block (length and bytes), then kv[j] and fp[j], are durable before
//    bit j is set; a crash before the bitmap store leaves the key block unreachable, and the
//    allocator rebuild at the next open frees it (visit_blocks reports key blocks of live
//    entries only).
//  - update: the new value goes to a free slot that references the same key block, and one
//    store sets its bit and clears the old one: one live entry references the block before
//    and after.
//  - remove: the bit is cleared and persisted before the key block is freed; a crash before
//    the free leaves the block unreachable, freed by the rebuild.
//  - split, merge, unlink: copy-on-write as in hybrid_tree.h: the new leaves (referencing the
//    same key blocks, plus a new one for a pending insert, persisted first) are durable
//    before one 8-byte store swings the predecessor's next (or the head); before it the old
//    leaves reference the key blocks, after it the new ones: each block is reached once.
//  - recovery unlinks an empty leaf other than the head (a crash between a remove and the
//    unlink leaves one) with one persisted 8-byte store.
//
// Thread safety: one writer at a time behind one pm::RwLock (readers shared), as the
// library's NV-Tree and wB+-Tree; the paper's selective concurrency (HTM for the inner
// nodes, leaf locks) is not built for this variant. A writer holds the lock exclusively,
// so no reader can hold a key block it frees: it frees at once, without an epoch.
#ifndef PMINDEX_BTREE_HYBRID_FPTREE_VAR_H_
#define PMINDEX_BTREE_HYBRID_FPTREE_VAR_H_

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "btree/hybrid/hybrid_tree.h"
#include "pm/persist.h"
#include "pm/rw_lock.h"
#include "pmindex/index.h"

namespace pmindex::btree {

struct FPTreeVarLeaf {
  static constexpr size_t kCapacity = 64;
  struct Slot {
    uint64_t key_ref;  // KeyRef
    uint64_t value;
  };
  uint64_t bitmap;
  uint64_t next;
  uint64_t pad[6];
  uint8_t fp[kCapacity];
  Slot kv[kCapacity];
};
static_assert(sizeof(FPTreeVarLeaf) == 1152 && alignof(FPTreeVarLeaf) == 8);
static_assert(offsetof(FPTreeVarLeaf, bitmap) == 0 && offsetof(FPTreeVarLeaf, next) == 8);
static_assert(offsetof(FPTreeVarLeaf, fp) == 64 && offsetof(FPTreeVarLeaf, kv) == 128);
static_assert(sizeof(FPTreeVarLeaf::Slot) == 16);

struct KeyBlock {
  uint64_t length;
  char bytes[8];  // length bytes in all; the block is as long as they need
};
static_assert(offsetof(KeyBlock, length) == 0 && offsetof(KeyBlock, bytes) == 8);
inline constexpr size_t kKeyBlockHeader = offsetof(KeyBlock, bytes);

class FPTreeVar final : public Index {
 public:
  using Leaf = FPTreeVarLeaf;
  static constexpr size_t kCap = Leaf::kCapacity;
  static constexpr IndexKind kKind = IndexKind{16};  // never reuse or renumber (doc/format.md)
  static constexpr uint32_t kLayoutVersion = 1;
  static constexpr size_t kMaxKeySize = 4096;
  static constexpr uint64_t kOffsetMask = (uint64_t{1} << 56) - 1;

  static IndexTraits Traits();
  static std::vector<MutantInfo> Mutants();
  static Result<std::unique_ptr<Index>> Attach(std::unique_ptr<Pool> pool, bool fresh);
  // The one-byte fingerprint of a key: a hash of all its bytes.
  static uint8_t Fingerprint(std::string_view key);

  ~FPTreeVar() override { close().IgnoreError(); }
  const IndexTraits& traits() const override;
  Status insert(std::string_view key, std::string_view value) override {
    return write(Op::kInsert, key, value);
  }
  Status update(std::string_view key, std::string_view value) override {
    return write(Op::kUpdate, key, value);
  }
  Status upsert(std::string_view key, std::string_view value) override {
    return write(Op::kUpsert, key, value);
  }
  Status remove(std::string_view key) override { return write(Op::kRemove, key, {}); }
  Status lookup(std::string_view key, std::string* value) override;
  size_t scan(std::string_view start, size_t max_count, ScanCallback fn) override;
  Status verify() override;
  IndexStats stats() override;
  Status recover() override;
  Status visit_blocks(BlockVisitor& visitor) override;
  Pool* pool() override { return pool_.get(); }
  Status close() override;

 private:
  // A live entry as splits and scans sort them. `prefix` (the 8 key bytes after the prefix
  // the leaf's keys share, zero padded, big-endian) orders most pairs without comparing
  // the out-of-line keys.
  struct Item {
    std::string_view key;
    uint64_t key_ref;
    uint64_t value;
    uint8_t fp;
    uint64_t prefix = 0;
  };
  using Bounds = std::map<std::string, uint64_t, std::less<>>;  // lower bound -> leaf offset

  explicit FPTreeVar(std::unique_ptr<Pool> pool);
  Leaf* at(uint64_t off) const { return reinterpret_cast<Leaf*>(base_ + off); }
  uint64_t off(const Leaf* l) const {
    return static_cast<uint64_t>(reinterpret_cast<const char*>(l) - base_);
  }
  std::string_view key_at(uint64_t key_ref) const {
    const auto* b = reinterpret_cast<const KeyBlock*>(base_ + (key_ref & kOffsetMask));
    return {b->bytes, b->length};
  }
  // The slot of `key` among the live ones of `l`, or -1 (keys read on fingerprint matches).
  int find_slot(const Leaf* l, uint64_t bitmap, std::string_view key, uint8_t fp) const;
  Bounds::iterator leaf_for(std::string_view key);
  size_t collect_sorted(const Leaf* l, std::string_view from, Item* out) const;

  Status write(Op op, std::string_view key, std::string_view value);
  Status write_locked(Op op, std::string_view key, uint64_t value, uint8_t vlen);
  Status create_first_leaf();
  // A key block for `key`, flushed (the caller fences), in *ref (value length 0).
  // OutOfSpace leaves nothing.
  Status new_key_block(std::string_view key, bool flush, uint64_t* ref);
  Status remove_at(Bounds::iterator it, Leaf* l, int slot);
  // Replaces the full leaf by one or two holding its entries and the pending write.
  Status replace(Bounds::iterator it, std::string_view key, uint64_t value, uint8_t vlen,
                 int slot);
  void init_leaf(Leaf* l, const Item* items, size_t n, uint64_t next);
  // Swings the link to `it`'s leaf (predecessor's next or the head) to `to`, persisted.
  void relink(Bounds::iterator it, uint64_t to);
  void try_merge(Bounds::iterator it);
  void unlink_empty(Bounds::iterator it);
  Status recover_leaf(const Leaf* l, uint64_t o) const;
  Status verify_leaf(const Leaf* l, const std::string& where, std::string_view low,
                     std::string_view high, bool last, std::vector<uint64_t>* refs) const;

  std::unique_ptr<Pool> pool_;
  pm::PersistContext* pc_;
  char* base_;
  BTreeRoot* root_;
  Bounds bounds_;  // the DRAM inner structure: every leaf of the chain, in chain order
  pm::RwLock rw_;
};

IndexRegistration FPTreeVarRegistration();

}  // namespace pmindex::btree

#endif  // PMINDEX_BTREE_HYBRID_FPTREE_VAR_H_
