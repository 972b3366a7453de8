// Calls f(node) with the concrete P-ART node type a tagged child word points at, and the
// block size of each node type.
#ifndef PMINDEX_RADIX_PART_PART_DISPATCH_H_
#define PMINDEX_RADIX_PART_PART_DISPATCH_H_

#include <cstddef>
#include <cstdint>

#include "radix/common/node_search.h"
#include "radix/part/node16.h"
#include "radix/part/node256.h"
#include "radix/part/node4.h"
#include "radix/part/node48.h"

namespace pmindex::radix::part {

// `mem` is the pool's base (Pool::base()); w a node word (tag 2..5).
template <typename F>
inline decltype(auto) Dispatch(const char* mem, uint64_t w, F&& f) {
  char* const p = const_cast<char*>(mem) + ChildOffset(w);
  switch (ChildTagOf(w)) {
    case kTagNode4:
      return f(reinterpret_cast<Node4*>(p));
    case kTagNode16:
      return f(reinterpret_cast<Node16*>(p));
    case kTagNode48:
      return f(reinterpret_cast<Node48*>(p));
    default:
      return f(reinterpret_cast<Node256*>(p));
  }
}

inline constexpr size_t NodeSize(uint64_t tag) {
  switch (tag) {
    case kTagNode4: return sizeof(Node4);
    case kTagNode16: return sizeof(Node16);
    case kTagNode48: return sizeof(Node48);
    default: return sizeof(Node256);
  }
}

// The type of a node holding `live` children: the smallest that fits them.
inline constexpr uint64_t TagFor(unsigned live) {
  return live <= 4 ? kTagNode4 : live <= 16 ? kTagNode16 : live <= 48 ? kTagNode48 : kTagNode256;
}

}  // namespace pmindex::radix::part

#endif  // PMINDEX_RADIX_PART_PART_DISPATCH_H_
