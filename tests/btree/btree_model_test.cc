// Model tests for every hybrid B+tree layout: random insert/update/upsert/remove/lookup/scan
// against std::map in lockstep (ModelChecker; integer keys as their big-endian bytes),
// verify() after every batch, enough keys to split (and compact, and unlink empty leaves)
// many times, a reopen in the middle.
#include <gtest/gtest.h>

#include <map>
#include <random>
#include <string>
#include <vector>

#include "btree/btree_test_util.h"
#include "common/model_checker.h"
#include "common/test_util.h"

namespace pmindex::testing {
namespace {

class BTreeModelTest : public ::testing::TestWithParam<std::string> {
 protected:
  // Creates the index under test in the checker.
  void Create(ModelChecker& checker) {
    ASSERT_NO_FATAL_FAILURE(checker.create(GetParam(), dir_.file("pool"), BTreeOptions()));
  }

  TempDir dir_;
};

// verify(), contents and 30 bounded scans from integer starts across the key space.
void CheckAll(ModelChecker& checker, std::mt19937_64& rng, uint64_t key_space) {
  std::vector<std::string> starts;
  for (int s = 0; s < 30; ++s) starts.push_back(K(rng() % (key_space + 2)));
  ASSERT_NO_FATAL_FAILURE(checker.check_all(starts, &rng, 150));
}

TEST_P(BTreeModelTest, RandomOperations) {
  ModelChecker checker(TestSeed(4242));
  ASSERT_NO_FATAL_FAILURE(Create(checker));
  std::mt19937_64 rng(checker.seed());
  const uint64_t key_space = Scale(40000);
  const uint64_t ops = Scale(240000);
  const uint64_t batch = ops / 12;
  for (uint64_t i = 0; i < ops; ++i) {
    // Grow first (many splits), then churn, then shrink (compactions, empty leaves).
    const unsigned bias = i < ops / 3 ? 8 : (i < 2 * ops / 3 ? 2 : 0);
    if (i >= 2 * ops / 3 && rng() % 3 == 0) {
      auto it = checker.model().lower_bound(K(rng() % key_space));
      if (it != checker.model().end()) {
        const std::string key = it->first;
        ASSERT_NO_FATAL_FAILURE(checker.remove(key));
      }
      continue;
    }
    uint64_t k = rng() % key_space;
    if (rng() % 1000 == 0) k = rng() % 2 ? 0 : UINT64_MAX;
    const OpMix mix{.insert = 1 + bias, .update = 1, .upsert = 1, .remove = 2, .lookup = 1};
    ASSERT_NO_FATAL_FAILURE(checker.random_op(rng, K(k), V(rng()), mix));
    if ((i + 1) % batch == 0) {
      ASSERT_NO_FATAL_FAILURE(CheckAll(checker, rng, key_space));
      if ((i + 1) == ops / 2) {
        ASSERT_NO_FATAL_FAILURE(checker.reopen());
      }
    }
  }
  ASSERT_NO_FATAL_FAILURE(CheckAll(checker, rng, key_space));
  ASSERT_NO_FATAL_FAILURE(checker.reopen());
  ASSERT_NO_FATAL_FAILURE(CheckAll(checker, rng, key_space));
}

TEST_P(BTreeModelTest, SequentialGrowAndDrain) {
  ModelChecker checker(7);
  ASSERT_NO_FATAL_FAILURE(Create(checker));
  std::mt19937_64 rng(checker.seed());
  const uint64_t n = Scale(30000);
  for (uint64_t k = 1; k <= n; ++k) ASSERT_NO_FATAL_FAILURE(checker.insert(K(k * 3), V(k)));
  ASSERT_NO_FATAL_FAILURE(CheckAll(checker, rng, 3 * n));
  const uint64_t leaves_full = checker.index().stats().nodes[0].second;
  // Drain all but every 97th key: empty leaves are unlinked, so the chain shrinks.
  for (uint64_t k = 1; k <= n; ++k) {
    if (k % 97 == 0) continue;
    ASSERT_NO_FATAL_FAILURE(checker.remove(K(k * 3)));
  }
  ASSERT_NO_FATAL_FAILURE(CheckAll(checker, rng, 3 * n));
  const uint64_t leaves_drained = checker.index().stats().nodes[0].second;
  EXPECT_LT(leaves_drained, leaves_full);
  // Updates in place of the survivors churn append-only logs (compaction).
  for (int round = 0; round < 100; ++round) {
    const ModelChecker::Model survivors = checker.model();
    for (const auto& [k, v] : survivors)
      ASSERT_NO_FATAL_FAILURE(checker.update(k, V(IntValue::Decode(v) * 31 + 1)));
  }
  ASSERT_NO_FATAL_FAILURE(CheckAll(checker, rng, 3 * n));
  ASSERT_NO_FATAL_FAILURE(checker.reopen());
  ASSERT_NO_FATAL_FAILURE(CheckAll(checker, rng, 3 * n));
}

TEST_P(BTreeModelTest, RejectsOtherSizes) {
  ModelChecker checker(0);
  ASSERT_NO_FATAL_FAILURE(Create(checker));
  Index& index = checker.index();
  EXPECT_TRUE(index.insert("short", IntValue(1)).IsInvalidArgument());
  EXPECT_TRUE(index.insert(IntKey(1), "a value longer than 8").IsInvalidArgument());
  EXPECT_TRUE(index.insert(IntKey(1), "").IsInvalidArgument());
  EXPECT_TRUE(index.upsert("123456789", IntValue(1)).IsInvalidArgument());
  EXPECT_TRUE(index.remove("").IsInvalidArgument());
  EXPECT_TRUE(index.update(IntKey(1), IntValue(1)).IsNotFound());
  EXPECT_TRUE(index.remove(IntKey(1)).IsNotFound());
  std::string v;
  EXPECT_FALSE(index.lookup(IntKey(1), &v).ok());
  EXPECT_EQ(index.scan(IntKey(0), 10, [](std::string_view, std::string_view) { return true; }),
            0u);
  // Starts of other lengths order bytewise against the 8-byte keys.
  ASSERT_TRUE(index.insert(IntKey(0x0100000000000000ull), IntValue(1)).ok());
  ASSERT_TRUE(index.insert(IntKey(0x0100000000000005ull), IntValue(2)).ok());
  auto count = [&](std::string_view start) {
    return index.scan(start, 10, [](std::string_view, std::string_view) { return true; });
  };
  EXPECT_EQ(count(""), 2u);
  EXPECT_EQ(count(std::string_view("\x01", 1)), 2u);
  EXPECT_EQ(count(std::string("\x01\0\0\0\0\0\0\0\0", 9)), 1u);
  EXPECT_EQ(count("\x02"), 0u);
  ASSERT_TRUE(index.remove(IntKey(0x0100000000000000ull)).ok());
  ASSERT_TRUE(index.remove(IntKey(0x0100000000000005ull)).ok());
  EXPECT_TRUE(index.verify().ok());
}

// A full pool returns OutOfSpace, stays consistent, and takes inserts again after removes.
TEST_P(BTreeModelTest, OutOfSpaceThenRecovers) {
  const std::string small = dir_.file("small");
  auto idx = CreateIndex(GetParam(), small, BTreeOptions(4ull << 20));
  ASSERT_TRUE(idx.ok()) << idx.status().ToString();
  Index& index = *idx.value();
  std::mt19937_64 rng(3);
  std::map<uint64_t, uint64_t> model;
  Status s;
  for (uint64_t i = 0; i < 10000000; ++i) {
    const uint64_t k = rng();
    s = index.insert(IntKey(k), IntValue(i));
    if (!s.ok()) break;
    model[k] = i;
  }
  ASSERT_TRUE(s.IsOutOfSpace()) << s.ToString();
  ASSERT_TRUE(index.verify().ok());
  ASSERT_EQ(Contents(index), model);
  // Remove every other key in order: whole leaves empty out and are unlinked.
  size_t n = 0;
  for (auto it = model.begin(); it != model.end();) {
    if (n++ % 4 != 0) {
      Status r = index.remove(IntKey(it->first));
      // NV-Tree appends a removal entry: in a full leaf that needs a compacted copy, which a
      // full pool cannot give (documented); the key then stays.
      if (GetParam() == "nvtree" && r.IsOutOfSpace()) {
        ++it;
        continue;
      }
      ASSERT_TRUE(r.ok()) << r.ToString();
      it = model.erase(it);
    } else {
      ++it;
    }
  }
  uint64_t inserted = 0;
  for (int i = 0; i < 1000; ++i) {
    const uint64_t k = rng();
    if (index.insert(IntKey(k), IntValue(i)).ok()) {
      model[k] = i;
      ++inserted;
    }
  }
  if (GetParam() != "nvtree") { EXPECT_GT(inserted, 500u); }
  ASSERT_TRUE(index.verify().ok());
  ASSERT_EQ(Contents(index), model);
}

INSTANTIATE_TEST_SUITE_P(All, BTreeModelTest, ::testing::ValuesIn(BTreeNames()),
                         [](const auto& info) {
                           std::string n = info.param;
                           for (char& c : n) {
                             if (c == '-') c = '_';
                           }
                           return n;
                         });

}  // namespace
}  // namespace pmindex::testing
