// The volatile ART (Leis et al., ICDE 2013): the DRAM ceiling persistent radix trees are
// measured against, and a workbench baseline.
//
// Node4/16/48/256 with grow and shrink, path compression (up to 10 prefix bytes stored, the
// rest checked against a leaf, as the paper's hybrid scheme), lazy expansion, SIMD Node16
// search. Keys that are prefixes of other keys live in a node's end slot. A Node4 left with
// one entry is collapsed into its parent slot (prefixes merged).
//
// Invariants: every node has at least 2 entries (children + end leaf); Node4/16 keys are
// sorted; every leaf's key agrees with the path and compressed prefixes above it.
//
// Thread safety: optimistic lock coupling (Leis, Scheibner, Kemper, Neumann, "The ART of
// Practical Synchronization", DaMoN 2016). Every node has a pm::VersionLock word, and the
// root word has one of its own (root_lock_), so the root slot is handled as the slot of a
// node. Readers take no lock: they read a node's version (waiting while it is locked), read
// the node with atomic loads, check the parent's version after reading the child's (lock
// coupling), and check the version of the node holding the leaf after reading the leaf's
// value; a failed check, or an obsolete node, restarts the operation from the root. Writers
// descend the same way and turn the versions they read into locks (TryUpgrade) only where
// they change something: the node they add a child to or remove one from, the slot holder
// alone for a new leaf, a same-length value update in place, a lazy expansion; the parent
// and the node for a grow, a shrink or a prefix split (top-down; a failed upgrade releases
// what it took and restarts), and for a collapse also the remaining child, whose prefix
// grows (Lock: it is below two held locks). A replaced node is marked obsolete (it stays
// locked) and retired, like removed and replaced leaves, to the tree's pm::Epoch: every
// operation holds a guard, so nothing a thread may still read is freed. Scans walk in key
// order with a version check of every node before each child they enter or leaf they copy;
// a failed check resumes the walk after the last key collected (art_walk.cc). A scan is
// not a snapshot: each pair returned was in the tree while the scan ran, in key order.
// verify() and stats() expect no concurrent writers.
// Durability: none (DRAM).
#ifndef PMINDEX_RADIX_ART_ART_H_
#define PMINDEX_RADIX_ART_ART_H_

#include <atomic>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "pm/epoch.h"
#include "pm/version_lock.h"
#include "pmindex/index.h"
#include "radix/art/art_nodes.h"

namespace pmindex::radix {

class Art final : public Index, private pm::Reclaimer {
 public:
  Art();
  ~Art() override;

  static IndexRegistration Registration();

  const IndexTraits& traits() const override { return traits_; }
  Status insert(std::string_view key, std::string_view value) override;
  Status update(std::string_view key, std::string_view value) override;
  Status upsert(std::string_view key, std::string_view value) override;
  Status remove(std::string_view key) override;
  Status lookup(std::string_view key, std::string* value) override;
  size_t scan(std::string_view start, size_t max_count, ScanCallback fn) override;
  Status verify() override;
  IndexStats stats() override;

  // Operations restarted after a failed version check since the tree was made.
  uint64_t restarts() const { return restarts_.load(std::memory_order_relaxed); }

 private:
  enum class PutMode { kInsert, kUpdate, kUpsert };
  struct Totals;
  class ScanWalk;  // art_walk.cc
  // The lock word of the node (or of the root word) whose slot an operation read, and the
  // version it read there.
  struct Holder {
    uint64_t* word;
    uint64_t version;
  };
  // A step's outcome: a status, or nullopt: restart from the root.
  using Outcome = std::optional<Status>;

  Outcome LookupOnce(std::string_view key, std::string* value);
  Status Put(std::string_view key, std::string_view value, PutMode mode);
  Outcome PutOnce(std::string_view key, std::string_view value, PutMode mode);
  Outcome PutIntoEmpty(const Holder& h, art::Ref* slot, std::string_view key,
                       std::string_view value, PutMode mode);
  Outcome PutAtLeaf(const Holder& h, art::Ref* slot, art::Ref r, size_t depth,
                    std::string_view key, std::string_view value, PutMode mode);
  Outcome SplitPrefix(const Holder& h, art::Ref* slot, const Holder& nh, art::Node* n,
                      size_t depth, uint32_t match, std::string_view key,
                      std::string_view value, PutMode mode);
  Outcome AddLeaf(const Holder& h, art::Ref* slot, const Holder& nh, art::Node* n, uint8_t b,
                  std::string_view key, std::string_view value, PutMode mode);
  Outcome RemoveOnce(std::string_view key);
  Outcome RemoveFromNode(const Holder& gh, art::Ref* gslot, const Holder& nh, art::Node* n,
                         size_t ndepth, int byte, art::Ref leaf);
  bool Collapse(art::Node* n, int byte, size_t ndepth, art::Ref* replacement,
                art::Node** locked_child);

  static const art::Leaf* AnyLeaf(art::Ref r);
  static constexpr uint32_t kRestartMatch = UINT32_MAX;
  static uint32_t PrefixMatch(const art::Node* n, const uint8_t* k, size_t len, size_t depth);
  static void SetPrefix(art::Node* n, uint32_t len, const uint8_t* key, size_t depth);
  static void InsertChild(art::Node* n, uint8_t b, art::Ref child);
  static void RemoveChild(art::Node* n, uint8_t b);
  static art::Node* Rebuilt(const art::Node* n, art::NodeType t, int skip, int add,
                            art::Ref add_child);
  static void FreeTree(art::Ref r);

  // The version lock protocol over pm::VersionLock (DRAM words: kResetGeneration).
  // Inline: every level of every descent reads a version and checks its parent's.
  [[gnu::always_inline]] static bool ReadBegin(Holder* h) {
    const uint64_t w = __atomic_load_n(h->word, __ATOMIC_ACQUIRE);
    if ((w & (pm::VersionLock::kLocked | pm::VersionLock::kObsolete)) == 0) [[likely]] {
      h->version = w;  // DRAM words keep generation 0: the bits always count
      return true;
    }
    return pm::VersionLock::ReadBegin(h->word, pm::VersionLock::kResetGeneration, &h->version);
  }
  [[gnu::always_inline]] static bool Validate(const Holder& h) {
    return pm::VersionLock::ReadValidate(h.word, h.version);
  }
  static bool Upgrade(const Holder& h) { return pm::VersionLock::TryUpgrade(h.word, h.version); }
  static void Unlock(uint64_t* word, bool bump = true) {
    pm::VersionLock::Unlock(word, pm::VersionLock::kResetGeneration, bump);
  }
  Outcome Restart() {
    restarts_.fetch_add(1, std::memory_order_relaxed);
    return std::nullopt;
  }
  void Retire(art::Ref r) { epoch_.Retire(this, 0, reinterpret_cast<void*>(r & ~art::Ref{1})); }
  void Reclaim(uint64_t /*offset*/, void* block) override { std::free(block); }

  Status VerifyRef(art::Ref r, size_t depth, std::vector<uint8_t>& path, Totals& t) const;

  IndexTraits traits_;
  pm::Epoch epoch_;
  uint64_t root_lock_ = 0;  // pm::VersionLock word of the root slot
  art::Ref root_ = 0;
  std::atomic<uint64_t> restarts_{0};
};

}  // namespace pmindex::radix

#endif  // PMINDEX_RADIX_ART_ART_H_
