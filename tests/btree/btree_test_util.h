// Helpers shared by the hybrid B+tree tests.
#ifndef PMINDEX_TESTS_BTREE_BTREE_TEST_UTIL_H_
#define PMINDEX_TESTS_BTREE_BTREE_TEST_UTIL_H_

#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <map>
#include <memory>
#include <random>
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

// Every pair of the index in scan order. The scan's keys must strictly increase: a key
// returned twice or out of order, which the map would hide, is a failure (ADD_FAILURE, once
// per call).
inline std::map<uint64_t, uint64_t> Contents(Index& index) {
  std::map<uint64_t, uint64_t> out;
  uint64_t last = 0;
  size_t n = 0;
  bool reported = false;
  index.scan(IntKey(0), SIZE_MAX, [&](std::string_view k, std::string_view v) {
    const uint64_t key = IntKey::Decode(k);
    if (n > 0 && key <= last && !reported) {
      ADD_FAILURE() << "scan entry " << n << ": key " << key << " after " << last
                    << (key == last ? " (a duplicate)" : " (out of order)");
      reported = true;
    }
    out.emplace(key, IntValue::Decode(v));
    last = key;
    ++n;
    return true;
  });
  EXPECT_EQ(n, out.size()) << "the scan returned keys more than once";
  return out;
}

// Random inserts, updates, upserts and removes of keys below 2n, applied to `model` as the
// index acknowledges them (the model is the caller's, kept across reopens and crashes).
inline void RandomWrites(Index& index, uint64_t seed, uint64_t n,
                         std::map<uint64_t, uint64_t>* model) {
  std::mt19937_64 rng(seed);
  for (uint64_t i = 0; i < n; ++i) {
    const uint64_t k = rng() % (n * 2);
    const uint64_t v = rng();
    const bool present = model->count(k) != 0;
    switch (rng() % 5) {
      case 0: {
        const Status s = index.remove(IntKey(k));
        EXPECT_EQ(s.ok(), present) << "remove " << k << ": " << s.ToString();
        model->erase(k);
        break;
      }
      case 1: {
        const Status s = index.update(IntKey(k), IntValue(v));
        EXPECT_EQ(s.ok(), present) << "update " << k << ": " << s.ToString();
        if (present) (*model)[k] = v;
        break;
      }
      default:
        EXPECT_TRUE(index.upsert(IntKey(k), IntValue(v)).ok());
        (*model)[k] = v;
    }
  }
}

// The recovery check: verify() passes, a full scan (strictly increasing, Contents) equals
// `model`, and every model key is found with its value.
inline void ExpectSameContents(Index& index, const std::map<uint64_t, uint64_t>& model) {
  Status v = index.verify();
  ASSERT_TRUE(v.ok()) << v.ToString();
  ASSERT_EQ(Contents(index), model);
  std::string got;
  for (const auto& [k, val] : model) {
    ASSERT_TRUE(index.lookup(IntKey(k), &got).ok()) << "lost key " << k;
    ASSERT_EQ(IntValue::Decode(got), val) << "key " << k;
  }
}

}  // namespace pmindex::testing

#endif  // PMINDEX_TESTS_BTREE_BTREE_TEST_UTIL_H_
