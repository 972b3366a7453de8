// Concurrency of the natively concurrent trees (rntree, rntree-ds, fptree) and the one-writer
// ones (nvtree, wbtree, wbtree-so: optimistic readers beside one writer), with more threads
// than cores: disjoint key ranges checked against a per-thread model; overlapping keys
// checked for per-key insert/remove balance, value provenance and sorted scans; lookups on
// reader threads checked against what the writers acknowledged (btree_concurrent_checks.h).
// Run under -DPMINDEX_SANITIZE=thread too (label tsan).
#include <gtest/gtest.h>

#include <memory>
#include <string>

#include "btree/btree_concurrent_checks.h"
#include "btree/btree_test_util.h"
#include "common/test_util.h"

namespace pmindex::testing {
namespace {

class BTreeConcurrentTest : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    auto idx = CreateIndex(GetParam(), dir_.file("pool"), BTreeOptions());
    ASSERT_TRUE(idx.ok()) << idx.status().ToString();
    index_ = std::move(idx.value());
  }
  TempDir dir_;
  std::unique_ptr<Index> index_;
};

TEST_P(BTreeConcurrentTest, DisjointRanges) { CheckDisjointRanges(*index_); }

TEST_P(BTreeConcurrentTest, OverlappingKeys) { CheckOverlappingKeys(*index_); }

// Readers on other threads than the writers (the one-writer layouts' optimistic readers).
TEST_P(BTreeConcurrentTest, AcknowledgedReads) { CheckAcknowledgedReads(*index_); }

INSTANTIATE_TEST_SUITE_P(All, BTreeConcurrentTest,
                         ::testing::Values("rntree", "rntree-ds", "fptree", "nvtree", "wbtree",
                                           "wbtree-so"),
                         [](const auto& info) {
                           std::string n = info.param;
                           for (char& c : n) {
                             if (c == '-') c = '_';
                           }
                           return n;
                         });

}  // namespace
}  // namespace pmindex::testing
