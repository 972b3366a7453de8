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
// Thread safety: a writer-preferring reader-writer lock (RwLock): many readers or one writer.
// Durability: none (DRAM).
#ifndef PMINDEX_RADIX_ART_ART_H_
#define PMINDEX_RADIX_ART_ART_H_

#include <memory>
#include <shared_mutex>
#include <string>
#include <vector>

#include "pm/rw_lock.h"
#include "pmindex/index.h"
#include "radix/art/art_nodes.h"

namespace pmindex::radix {

class Art final : public Index {
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

 private:
  enum class PutMode { kInsert, kUpdate, kUpsert };
  struct ScanAccess;  // RadixScan's view of the nodes
  struct Totals;

  Status Put(std::string_view key, std::string_view value, PutMode mode);
  static const art::Leaf* AnyLeaf(art::Ref r);
  static uint32_t PrefixMatch(const art::Node* n, const uint8_t* k, size_t len, size_t depth);
  static void SetPrefix(art::Node* n, uint32_t len, const uint8_t* key, size_t depth);
  static void AddChild(art::Ref* ref, art::Node* n, uint8_t b, art::Ref child);
  static void RemoveChild(art::Node* n, uint8_t b);
  static void Fixup(art::Ref* ref, art::Node* n, size_t depth);
  static void FreeTree(art::Ref r);

  Status VerifyRef(art::Ref r, size_t depth, std::vector<uint8_t>& path, Totals& t) const;

  IndexTraits traits_;
  pm::RwLock mu_;  // writer-preferring
  art::Ref root_ = 0;
};

}  // namespace pmindex::radix

#endif  // PMINDEX_RADIX_ART_ART_H_
