// Persistent instructions per operation, counted by the persist seam (adr mode, one thread):
// every insert that does not split costs exactly NV-Tree 2, wB+-Tree 4, wB+-Tree-SO 2,
// FPTree 3, RNTree 2 fences; a split (the insert included) costs 2 more at most.
#include <gtest/gtest.h>

#include <random>
#include <string>

#include "btree/btree_test_util.h"
#include "common/test_util.h"
#include "pm/persist.h"

namespace pmindex::testing {
namespace {

struct FenceCase {
  std::string name;
  uint64_t insert;  // per non-splitting insert
  uint64_t update;
  uint64_t remove;
};

class BTreeFenceTest : public ::testing::TestWithParam<FenceCase> {};

uint64_t Leaves(Index& index) { return index.stats().nodes[0].second; }

TEST_P(BTreeFenceTest, ExactFencesPerOperation) {
  const FenceCase& c = GetParam();
  TempDir dir;
  auto idx = CreateIndex(c.name, dir.file("pool"), BTreeOptions());
  ASSERT_TRUE(idx.ok()) << idx.status().ToString();
  Index& index = *idx.value();
  const uint64_t seed = TestSeed(99);
  SCOPED_TRACE(SeedTrace(seed));
  std::mt19937_64 rng(seed);
  std::vector<uint64_t> keys;
  for (int i = 0; i < 3000; ++i) {
    const uint64_t k = rng();
    keys.push_back(k);
    ASSERT_TRUE(index.insert(IntKey(k), IntValue(i)).ok());
  }
  uint64_t plain = 0, split = 0, total_fences = 0;
  for (int i = 0; i < 3000; ++i) {
    const uint64_t k = rng();
    const uint64_t leaves = Leaves(index);
    const PersistCounters before = index.pool()->persist_context().thread_counters();
    ASSERT_TRUE(index.insert(IntKey(k), IntValue(i)).ok());
    const uint64_t fences = (index.pool()->persist_context().thread_counters() - before).fences;
    total_fences += fences;
    if (Leaves(index) == leaves) {
      ASSERT_EQ(fences, c.insert) << "non-splitting insert " << i;
      ++plain;
    } else {
      // Split: 2 for the copy-on-write replacement, +1 if the allocator carved a chunk.
      ASSERT_LE(fences, 3u) << "splitting insert " << i;
      ++split;
    }
  }
  EXPECT_GT(plain, split);
  std::printf("%s: %.3f fences per insert (%lu plain, %lu splitting)\n", c.name.c_str(),
              static_cast<double>(total_fences) / 3000, static_cast<unsigned long>(plain),
              static_cast<unsigned long>(split));
  // Updates and removes of present keys (non-restructuring ones exactly).
  uint64_t upd_plain = 0, rem_plain = 0;
  for (int i = 0; i < 500; ++i) {
    const uint64_t leaves = Leaves(index);
    PersistCounters before = index.pool()->persist_context().thread_counters();
    ASSERT_TRUE(index.update(IntKey(keys[i]), IntValue(7)).ok());
    uint64_t fences = (index.pool()->persist_context().thread_counters() - before).fences;
    if (Leaves(index) == leaves && fences == c.update) ++upd_plain;
    before = index.pool()->persist_context().thread_counters();
    ASSERT_TRUE(index.remove(IntKey(keys[i + 1000])).ok());
    fences = (index.pool()->persist_context().thread_counters() - before).fences;
    if (fences == c.remove) ++rem_plain;
  }
  EXPECT_GT(upd_plain, 400u);
  EXPECT_GT(rem_plain, 400u);
  // Failed conditional writes write nothing.
  const PersistCounters before = index.pool()->persist_context().thread_counters();
  EXPECT_TRUE(index.insert(IntKey(keys[5]), IntValue(1)).IsAlreadyExists());
  EXPECT_TRUE(index.update(IntKey(keys[1000]), IntValue(1)).IsNotFound());
  EXPECT_TRUE(index.remove(IntKey(keys[1001])).IsNotFound());
  EXPECT_EQ((index.pool()->persist_context().thread_counters() - before).fences, 0u);
  EXPECT_TRUE(index.verify().ok());
}

INSTANTIATE_TEST_SUITE_P(All, BTreeFenceTest,
                         ::testing::Values(FenceCase{"nvtree", 2, 2, 2},
                                           FenceCase{"wbtree", 4, 4, 3},
                                           FenceCase{"wbtree-so", 2, 2, 1},
                                           FenceCase{"fptree", 3, 3, 1},
                                           FenceCase{"rntree", 2, 2, 1},
                                           FenceCase{"rntree-ds", 2, 2, 1}),
                         [](const auto& info) {
                           std::string n = info.param.name;
                           for (char& c : n) {
                             if (c == '-') c = '_';
                           }
                           return n;
                         });

}  // namespace
}  // namespace pmindex::testing
