// Helpers shared by the hybrid B+tree tests.
#ifndef PMINDEX_TESTS_BTREE_BTREE_TEST_UTIL_H_
#define PMINDEX_TESTS_BTREE_BTREE_TEST_UTIL_H_

#include <cstdint>
#include <cstring>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "pmindex/index.h"

namespace pmindex::testing {

inline const std::vector<std::string>& BTreeNames() {
  static const std::vector<std::string> names = {"nvtree", "wbtree", "wbtree-so",
                                                 "fptree", "rntree", "rntree-ds"};
  return names;
}

inline Options BTreeOptions(uint64_t pool_size = 256ull << 20) {
  Options o;
  o.pool_size = pool_size;
  o.huge_pages = false;
  return o;
}

inline std::string V(uint64_t v) { return std::string(IntValue(v)); }
inline std::string K(uint64_t k) { return std::string(IntKey(k)); }

// Every pair of the index in scan order.
inline std::map<uint64_t, uint64_t> Contents(Index& index) {
  std::map<uint64_t, uint64_t> out;
  index.scan(IntKey(0), SIZE_MAX, [&](std::string_view k, std::string_view v) {
    out.emplace(IntKey::Decode(k), IntValue::Decode(v));
    return true;
  });
  return out;
}

}  // namespace pmindex::testing

#endif  // PMINDEX_TESTS_BTREE_BTREE_TEST_UTIL_H_
