// Node256: one child word per key byte; adding or removing a child is one 8-byte store.
//
//   offset  size  field        (2080 bytes, 33 lines)
//   0       24    NodeBase     line 0
//   24      8     reserved     0
//   32      2048  child[256]   lines 0..32
//
// Crash argument (Add): the leaf (flushed by the caller) is fenced before the child word
// that links it is stored and persisted.
#ifndef PMINDEX_RADIX_PART_NODE256_H_
#define PMINDEX_RADIX_PART_NODE256_H_

#include <cstddef>
#include <cstdint>

#include "pm/persist.h"
#include "pm/prefetch.h"
#include "radix/common/pm_tree_util.h"
#include "radix/part/part_node.h"

namespace pmindex::radix::part {

struct Node256 {
  static constexpr unsigned kCapacity = 256;
  static constexpr uint64_t kTag = kTagNode256;
  NodeBase base;
  uint64_t reserved;
  uint64_t child[kCapacity];

  uint64_t Load(uint8_t b) const { return LoadWord(&child[b]); }
  uint64_t* Find(uint8_t b) { return child[b] != 0 ? &child[b] : nullptr; }
  bool HasRoom() const { return true; }
  unsigned Live() const {
    unsigned n = 0;
    for (unsigned b = 0; b < kCapacity; ++b) n += LoadWord(&child[b]) != 0;
    return n;
  }
  uint64_t Any() const {
    for (unsigned b = 0; b < kCapacity; ++b)
      if (const uint64_t c = LoadWord(&child[b])) return c;
    return 0;
  }
  template <typename F>
  bool ForEach(unsigned first, F&& f) const {
    for (unsigned b = first; b < kCapacity; ++b) {
      const uint64_t c = LoadWord(&child[b]);
      if (c != 0 && !f(static_cast<uint8_t>(b), c)) return false;
    }
    return true;
  }
  void PrefetchChildren() const { pm::PrefetchLines(this, 0, sizeof(*this)); }

  void BuildAdd(uint8_t b, uint64_t word) { child[b] = word; }
  // The leaf the caller flushed is fenced, then the child word committed. 2 fences.
  void Add(pm::PersistContext& pc, uint8_t b, uint64_t word) {
    pc.fence();
    CommitWord(pc, &child[b], word);
  }
  void Remove(pm::PersistContext& pc, uint8_t b) { CommitWord(pc, &child[b], 0); }
  const char* Check() const { return nullptr; }
};
static_assert(sizeof(Node256) == 2080);
static_assert(offsetof(Node256, child) == 32);

}  // namespace pmindex::radix::part

#endif  // PMINDEX_RADIX_PART_NODE256_H_
