// TestList: a tiny persistent sorted linked list, for tests of the crash machinery only.
//
// It exists to prove that the crash tracker and the crash campaign can tell a correct
// persistent structure from a broken one. Two registrations share this code:
//
//   "testlist"         (kTestListKind)        correct
//   "testlist-broken"  (kTestListBrokenKind)  the node is not persisted before it is
//                                             linked (one flush+fence removed)
//
// and two mutants (pm/mutant.h) break the correct one on request:
//   testlist.skip_node_persist   same bug as testlist-broken
//   testlist.skip_link_persist   the link store is not persisted (acknowledged insert lost)
//
// Keys and values are exactly 8 bytes (IntKey big-endian keys, ordered numerically).
//
// Layout. The list head (pool offset of the first node, 0 = empty) is the first 8 bytes of
// the pool's root area. A node is one 64-byte block (one cache line):
//
//   offset size field
//      0     8  key   (numeric, native byte order)
//      8     8  value (the 8 value bytes as given)
//     16     8  next  (pool offset of the next node, 0 = end)
//     24    40  unused (zero)
//
// Crash argument. insert: the node is written and persisted, then linked by one 8-byte
// store into its predecessor's `next` (or the head), which is persisted: before the link
// is durable the node is unreachable (freed by the allocator rebuild), after it the node is
// complete. update: one 8-byte failure-atomic store of the value, persisted. remove: one
// 8-byte store unlinks the node, persisted; the block is freed only in DRAM.
//
// Thread safety: a reader-writer lock around every operation.
#ifndef PMINDEX_TESTS_REFERENCE_TEST_LIST_H_
#define PMINDEX_TESTS_REFERENCE_TEST_LIST_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <shared_mutex>

#include "pmindex/index.h"

namespace pmindex::reference {

struct ListNode {
  uint64_t key;
  uint64_t value;
  uint64_t next;
  uint8_t unused[40];
};
static_assert(sizeof(ListNode) == 64);
static_assert(offsetof(ListNode, next) == 16);

class TestList final : public Index {
 public:
  TestList(std::unique_ptr<Pool> pool, bool broken);
  ~TestList() override;

  const IndexTraits& traits() const override;
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
  // The `next` word that points at the first node with key >= k, and that node (or null).
  uint64_t* find(uint64_t k, ListNode** node);
  Status check_args(std::string_view key, std::string_view value) const;
  Status insert_locked(uint64_t k, std::string_view value, uint64_t* link, ListNode* at);
  uint64_t* head() const;
  // The node at `offset`, or null if the offset cannot be a node of this pool.
  ListNode* node_at(uint64_t offset) const;

  std::unique_ptr<Pool> pool_;
  bool broken_;
  std::shared_mutex mu_;
};

}  // namespace pmindex::reference

#endif  // PMINDEX_TESTS_REFERENCE_TEST_LIST_H_
