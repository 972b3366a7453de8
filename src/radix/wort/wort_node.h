// WortNode: the only inner node of WORT, 16 children (4-bit span).
//
//   offset  size  field        cache line (node blocks are 64-byte aligned, 192-byte class)
//   0       8     header       line 0   PrefixHeader word: depth, prefix_len, prefix[5]
//   8       8     end          line 0   leaf of the key that ends at this node's position
//   16      128   child[16]    line 0: child[0..5], line 1: child[6..13], line 2: child[14..15]
//
// Every field is one 8-byte word changed with one failure-atomic store; a child word is 0
// (empty) or a tagged pool offset (node_search.h: kTagLeaf or kTagNode4 for a WortNode).
#ifndef PMINDEX_RADIX_WORT_WORT_NODE_H_
#define PMINDEX_RADIX_WORT_WORT_NODE_H_

#include <cstddef>
#include <cstdint>

namespace pmindex::radix {

struct WortNode {
  static constexpr unsigned kFanout = 16;
  uint64_t header;
  uint64_t end;
  uint64_t child[kFanout];
};
static_assert(sizeof(WortNode) == 144);
static_assert(offsetof(WortNode, end) == 8);
static_assert(offsetof(WortNode, child) == 16);

}  // namespace pmindex::radix

#endif  // PMINDEX_RADIX_WORT_WORT_NODE_H_
