// Calls f(node) with the concrete WOART node type a tagged child word points at.
#ifndef PMINDEX_RADIX_WOART_WOART_DISPATCH_H_
#define PMINDEX_RADIX_WOART_WOART_DISPATCH_H_

#include <utility>

#include "pmindex/pool.h"
#include "radix/common/node_search.h"
#include "radix/woart/node16.h"
#include "radix/woart/node256.h"
#include "radix/woart/node4.h"
#include "radix/woart/node48.h"

namespace pmindex::radix {

// `mem` is the pool's base (Pool::base()).
template <typename F>
inline decltype(auto) DispatchNode(const char* mem, uint64_t w, F&& f) {
  char* const p = const_cast<char*>(mem) + ChildOffset(w);
  switch (ChildTagOf(w)) {
    case kTagNode4:
      return f(reinterpret_cast<WoartNode4*>(p));
    case kTagNode16:
      return f(reinterpret_cast<WoartNode16*>(p));
    case kTagNode48:
      return f(reinterpret_cast<WoartNode48*>(p));
    default:
      return f(reinterpret_cast<WoartNode256*>(p));
  }
}

template <typename F>
inline decltype(auto) DispatchNode(const Pool& pool, uint64_t w, F&& f) {
  return DispatchNode(static_cast<const char*>(pool.base()), w, std::forward<F>(f));
}

inline constexpr size_t NodeSizeForTag(uint64_t tag) {
  switch (tag) {
    case kTagNode4: return sizeof(WoartNode4);
    case kTagNode16: return sizeof(WoartNode16);
    case kTagNode48: return sizeof(WoartNode48);
    default: return sizeof(WoartNode256);
  }
}

}  // namespace pmindex::radix

#endif  // PMINDEX_RADIX_WOART_WOART_DISPATCH_H_
