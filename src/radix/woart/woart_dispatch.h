// Calls f(node) with the concrete WOART node type a tagged child word points at.
#ifndef PMINDEX_RADIX_WOART_WOART_DISPATCH_H_
#define PMINDEX_RADIX_WOART_WOART_DISPATCH_H_

#include "pmindex/pool.h"
#include "radix/common/node_search.h"
#include "radix/woart/node16.h"
#include "radix/woart/node256.h"
#include "radix/woart/node4.h"
#include "radix/woart/node48.h"

namespace pmindex::radix {

template <typename F>
inline decltype(auto) DispatchNode(const Pool& pool, uint64_t w, F&& f) {
  const uint64_t off = ChildOffset(w);
  switch (ChildTagOf(w)) {
    case kTagNode4:
      return f(pool.at<WoartNode4>(off));
    case kTagNode16:
      return f(pool.at<WoartNode16>(off));
    case kTagNode48:
      return f(pool.at<WoartNode48>(off));
    default:
      return f(pool.at<WoartNode256>(off));
  }
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
