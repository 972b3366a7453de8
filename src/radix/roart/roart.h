// ROART (Ma et al., "ROART: Range-query Optimized Persistent ART", FAST 2021) on a pmindex
// pool, registered as "roart" (pool kind 24). Layouts: roart_nodes.h; the paper against the
// code: doc/roart.md.
//
// An ART whose lower levels are compacted: up to 64 leaves of a subtree sit unsorted in one
// leaf array (pointers with 2-byte fingerprints; room for 4 to 64, doubled by copy when full)
// instead of inner nodes. A slot of an inner
// node holds a leaf, a leaf array or a node. A second key under a slot that holds a leaf
// makes a leaf array of the two (compaction); a full leaf array splits into a node at its
// depth whose children are leaves (one key) or leaf arrays (more) by the next key byte that
// tells its keys apart; a remove that leaves one key in a leaf array puts that leaf back in
// its place (the inverse of compaction). The root is a Node256 at depth 0 that never changes
// identity (its offset is the pool root). Nodes grow (4 -> 16 -> 48 -> 256) by copy; they
// never shrink. A remove that would leave a node (not the root) empty unlinks it instead, so
// every reachable leaf array and node below the root holds a key (what the one ordered scan,
// radix/common/radix_scan.h, relies on).
//
// Keys: byte strings of 1..1024 bytes (integers big-endian); values 0..255 bytes.
//
// Thread safety: fully concurrent, ROWEX-style as P-ART: writers lock (pm::VersionLock, in
// the pool generation, never flushed) the node or leaf array they change, plus the node above
// it when they replace it (growth, leaf-array split, prefix split), always top-down; a remove
// that unlinks locks the whole path from the root. Readers (lookups, scans) never lock and
// never retry: every change a reader can meet is one atomic store, or a copy published by one
// store in the parent after which the original is frozen (marked obsolete under its lock).
// Replaced blocks are freed through the pool's epoch (pm/epoch.h). A scan is not a snapshot:
// it returns every key present throughout it, in order, and any subset of keys written
// meanwhile.
//
// Crash argument (durable linearizability): every operation commits with one persisted 8-byte
// store made while holding the lock of what it changes, after everything it makes reachable
// was persisted: a leaf-array entry or node entry (insert, remove, compaction, split,
// growth, unlink), a leaf's value word (an update of <= 8 bytes to the same length), or the
// parent's entry in a prefix split. The prefix split's second store (the old node's shorter
// prefix word) is not ordered with the commit (minimally ordered split): a crash between them
// leaves a prefix word whose depth is smaller than the depth the node is reached at, which
// traversal reads around (PrefixAt) and recover() rewrites.
#ifndef PMINDEX_RADIX_ROART_ROART_H_
#define PMINDEX_RADIX_ROART_ROART_H_

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "pm/alloc.h"
#include "pm/epoch.h"
#include "pm/persist.h"
#include "pm/version_lock.h"
#include "pmindex/index.h"
#include "radix/roart/roart_nodes.h"

namespace pmindex::roart {

class Roart final : public Index {
 public:
  static Result<std::unique_ptr<Index>> Attach(std::unique_ptr<Pool> pool, bool fresh);
  static const IndexTraits& Traits();
  // How the registry makes a ROART (listed in src/radix/registrations.cc).
  static IndexRegistration Registration();
  static std::vector<MutantInfo> Mutants();

  ~Roart() override;

  const IndexTraits& traits() const override { return Traits(); }
  Status insert(std::string_view key, std::string_view value) override;
  Status update(std::string_view key, std::string_view value) override;
  Status upsert(std::string_view key, std::string_view value) override;
  Status remove(std::string_view key) override;
  Status lookup(std::string_view key, std::string* value) override;
  size_t scan(std::string_view start, size_t max_count, ScanCallback fn) override;
  Status verify() override;
  IndexStats stats() override;
  Status recover() override;
  Status visit_blocks(BlockVisitor& visitor) override;
  Pool* pool() override { return pool_.get(); }
  Status close() override;

 private:
  enum class Op { kInsert, kUpdate, kUpsert, kRemove };
  // One attempt of a write: done (with its status) or restart from the root.
  struct Attempt {
    bool restart;
    Status status;
  };
  static Attempt Done(Status s) { return {false, std::move(s)}; }
  static Attempt Restart() { return {true, Status::OK()}; }
  // Where a write's descent stands: `node`, reached at `depth`, and the node above it that
  // holds `node_child` (its child word) for `parent_byte` (parent nullptr: node is the root).
  struct Path {
    NodeHeader* parent;
    uint8_t parent_byte;
    uint64_t node_child;
    NodeHeader* node;
    uint32_t depth;
  };

  explicit Roart(std::unique_ptr<Pool> pool);

  template <typename T>
  T* at(uint64_t child) const {
    return reinterpret_cast<T*>(base_ + OffsetOf(child));
  }
  pm::PersistContext& pc() const { return pool_->persist_context(); }
  NodeHeader* root() const { return root_.load(std::memory_order_acquire); }
  // The root, made (persisted, then published with set_root) if there is none.
  Result<NodeHeader*> EnsureRoot();
  bool Lock(uint64_t* word) { return pm::VersionLock::LockInline(word, gen_); }
  void Unlock(uint64_t* word) { pm::VersionLock::Unlock(word, gen_); }
  void Obsolete(uint64_t* word) { pm::VersionLock::MarkObsolete(word, gen_); }

  // ---- writes (roart.cc) ----
  Status Write(std::string_view key, std::string_view value, Op op);
  Attempt WriteOnce(std::string_view key, std::string_view value, Op op);
  // The key ends at the node's position: its end word.
  Attempt WriteEnd(const Path& p, std::string_view key, std::string_view value, Op op);
  // Byte b of p.node has no child: a new leaf in place, or a grown copy of the node.
  Attempt InsertIntoEmpty(const Path& p, uint8_t b, std::string_view key, std::string_view value);
  Attempt Grow(const Path& p, uint8_t b, uint64_t leaf_child);
  // Byte b of p.node holds a leaf: update, remove, or compaction into a leaf array.
  Attempt WriteAtLeaf(const Path& p, uint8_t b, uint64_t leaf_child, std::string_view key,
                      std::string_view value, Op op);
  Attempt WriteToArray(const Path& p, uint8_t b, uint64_t array_child, std::string_view key,
                       std::string_view value, Op op);
  // Removes `key` from a leaf array of two under byte b of p.node: the other leaf replaces it.
  Attempt Demote(const Path& p, uint8_t b, uint64_t array_child, std::string_view key);
  Attempt SplitArray(const Path& p, uint8_t b, uint64_t array_child, std::string_view key,
                     std::string_view value);
  // Builds the subtree that replaces a full leaf array at `depth`: a node over leaves and leaf
  // arrays (flushed, not fenced). Blocks made are appended to *made.
  Result<uint64_t> BuildSplit(std::vector<uint64_t>& entries, uint32_t depth,
                              std::vector<uint64_t>* made);
  Attempt SplitPrefix(const Path& p, size_t match, std::string_view key, std::string_view value);
  // A remove that empties its leaf array or node: the path from the root locked, the highest
  // subtree left without keys unlinked by one store.
  Attempt RemoveUnlinking(std::string_view key);
  // One level of a locked path: the node and the child it holds for the key (its end word,
  // or the entry of `byte`).
  struct Level {
    NodeHeader* node;
    bool end;
    uint8_t byte;
    uint64_t child;
  };
  // With every node of `path` (and la, the leaf array at its end, if any) locked: removes the
  // key, unlinking what it leaves empty; unlocks all. NotFound if the key is gone.
  Status UnlinkLocked(std::string_view key, const std::vector<Level>& path, LeafArray* la);
  // Replaces the leaf `*slot` names (an entry made by make_entry(new leaf)) by one with
  // `value`: its value word in place when it allows, else a new leaf. Caller holds the lock.
  template <typename MakeEntry>
  Status UpdateLeaf(uint64_t* slot, radix::PmLeaf* leaf, std::string_view value,
                    MakeEntry&& make_entry);
  // A persisted leaf (a new block), as its offset.
  Result<uint64_t> NewLeaf(std::string_view key, std::string_view value);
  radix::PmLeaf* LeafAt(uint64_t off) const {
    return reinterpret_cast<radix::PmLeaf*>(base_ + off);
  }
  // Index of `key` among the entries of la (fingerprint fp), or -1.
  // The slot of `key` in the array, or -1; *entry (if given) the entry word that matched: a
  // lock-free reader must use that word, since the slot may be rewritten after the match.
  bool LockSlotAndArray(NodeHeader* n, uint8_t b, uint64_t array_child, uint64_t** slot,
                        LeafArray** la);
  int FindInArray(const LeafArray* la, std::string_view key, uint16_t fp,
                  uint64_t* entry = nullptr) const;
  void Retire(uint64_t off) { alloc_->retire(OffsetOf(off)); }

  // ---- walks (roart_maint.cc) ----
  class ScanAccess;
  Status CheckNode(uint64_t child, uint32_t depth, std::string* path, bool repair, size_t* keys);
  Status CheckArray(uint64_t child, uint32_t depth, const std::string& path, bool repair,
                    size_t* keys);
  Status CheckLeaf(uint64_t off, uint32_t depth, const std::string& path, size_t* keys);
  Status CheckNodeShape(NodeHeader* n, uint64_t child, uint32_t depth, bool repair);
  Status CheckNodeEntries(NodeHeader* n, uint64_t child, bool repair);
  template <typename Fn>
  void Walk(uint64_t child, Fn&& fn) const;
  Status Check(bool repair);

  std::unique_ptr<Pool> pool_;
  char* base_ = nullptr;
  pm::Allocator* alloc_ = nullptr;
  uint32_t gen_ = 0;
  std::atomic<NodeHeader*> root_{nullptr};
  std::mutex root_mu_;  // EnsureRoot
};

}  // namespace pmindex::roart

#endif  // PMINDEX_RADIX_ROART_ROART_H_
