// The generic crash campaign (crashtest/) against every hybrid B+tree: simulated power
// failures at the fences of a workload with splits, updates and removes (RNTree also with
// torn slot lines), SIGKILL cycles, and every mutant of doc/btree.md caught.
//   default run: a few hundred operations per tree, every fence;
//   LABELS long (btree_crash_long_test): 2,000 operations at every fence, 50+ kill cycles.
#include <gtest/gtest.h>

#include <cstdlib>
#include <string>

#include "btree/btree_test_util.h"
#include "common/test_util.h"
#include "crashtest/campaign.h"

namespace pmindex::crashtest {
namespace {

using pmindex::testing::BTreeNames;
using pmindex::testing::Scale;
using pmindex::testing::SeedTrace;
using pmindex::testing::TestSeed;

bool Long() { return std::getenv("PMINDEX_BTREE_LONG") != nullptr; }

std::string TestName(const std::string& n) {
  std::string s = n;
  for (char& c : s) {
    if (c == '-') c = '_';
  }
  return s;
}

CampaignOptions Base(const std::string& index, uint64_t ops, uint64_t seed) {
  CampaignOptions o;
  o.timeout_seconds = pmindex::testing::CampaignTimeout();
  o.index = index;
  o.ops = ops;
  o.seed = seed;
  o.pool_size = 8ull << 20;
  return o;
}

class BTreeCrashTest : public ::testing::TestWithParam<std::string> {};

TEST_P(BTreeCrashTest, AdrEveryFence) {
  const uint64_t seed = TestSeed(21);
  SCOPED_TRACE(SeedTrace(seed));
  CampaignOptions o = Base(GetParam(), Long() ? 2000 : Scale(250), seed);
  o.images = Long() ? 4 : 2;
  o.torn = GetParam().rfind("rntree", 0) == 0;  // slot lines must survive tearing
  o.continuation_ops = 100;
  CampaignResult r = RunAdrCampaign(o);
  ASSERT_TRUE(r.error.ok()) << r.error.ToString();
  EXPECT_TRUE(r.failures.empty()) << FormatResult(r);
  std::printf("%s\n", FormatResult(r).c_str());
}

TEST_P(BTreeCrashTest, KillCycles) {
  const uint64_t seed = TestSeed(31);
  SCOPED_TRACE(SeedTrace(seed));
  CampaignOptions o = Base(GetParam(), 4000, seed);
  o.pool_size = 32ull << 20;
  o.cycles = Long() ? 200 : static_cast<uint32_t>(Scale(50));
  o.threads = 4;  // every hybrid layout runs concurrent writers
  o.max_delay_ms = 20;
  CampaignResult r = RunKillCampaign(o);
  ASSERT_TRUE(r.error.ok()) << r.error.ToString();
  EXPECT_TRUE(r.failures.empty()) << FormatResult(r);
  std::printf("%s\n", FormatResult(r).c_str());
}

INSTANTIATE_TEST_SUITE_P(All, BTreeCrashTest, ::testing::ValuesIn(BTreeNames()),
                         [](const auto& info) { return TestName(info.param); });

struct MutantCase {
  std::string index;
  std::string mutant;
  bool torn;
};

class BTreeMutantTest : public ::testing::TestWithParam<MutantCase> {};

TEST_P(BTreeMutantTest, IsCaught) {
  PMINDEX_REQUIRE_MUTANTS();
  const MutantCase& c = GetParam();
  CampaignOptions o = Base(c.index, 200, 5);
  o.mutant = c.mutant;
  o.torn = c.torn;
  o.continuation_every = 1;
  CampaignResult r = RunAdrCampaign(o);
  ASSERT_TRUE(r.error.ok()) << r.error.ToString();
  EXPECT_FALSE(r.failures.empty()) << c.mutant << " was not caught\n" << FormatResult(r);
}

INSTANTIATE_TEST_SUITE_P(
    All, BTreeMutantTest,
    ::testing::Values(MutantCase{"nvtree", "nvtree.skip_entry_persist", false},
                      MutantCase{"wbtree", "wbtree.skip_kv_persist", false},
                      MutantCase{"wbtree", "wbtree.skip_valid_clear", true},
                      MutantCase{"wbtree-so", "wbtree-so.skip_kv_persist", false},
                      MutantCase{"fptree", "fptree.bitmap_before_kv", false},
                      MutantCase{"rntree", "rntree.skip_kv_persist", false},
                      MutantCase{"rntree-ds", "rntree.skip_kv_persist", false},
                      MutantCase{"rntree", "rntree.single_slot_line", true},
                      MutantCase{"rntree", "rntree.skip_slot_persist", false},
                      MutantCase{"rntree-ds", "rntree.skip_slot_persist", false}),
    [](const auto& info) {
      std::string m = info.param.index + "_" + info.param.mutant;
      for (char& c : m) {
        if (c == '-' || c == '.') c = '_';
      }
      return m;
    });

}  // namespace
}  // namespace pmindex::crashtest
