// WORT and WOART under the crash campaign (crashtest/campaign.h): crash at fences of a
// seeded workload under the ADR model (images recovered and checked), SIGKILL cycles, and
// every radix mutant must be caught. A short run here; the full campaign is the crash
// engineer's.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <string>

#include "common/test_util.h"
#include "crashtest/campaign.h"

namespace pmindex::testing {
namespace {

crashtest::CampaignOptions Base(const std::string& index, uint64_t seed) {
  crashtest::CampaignOptions o;
  o.timeout_seconds = pmindex::testing::CampaignTimeout();
  o.index = index;
  o.seed = TestSeed(seed);
  o.ops = Scale(400);
  o.points = Scale(150);
  o.images = 2;
  o.continuation_every = 8;
  return o;
}

class RadixCrashTest : public ::testing::TestWithParam<std::string> {};

TEST_P(RadixCrashTest, AdrCampaignPasses) {
  crashtest::CampaignOptions o = Base(GetParam(), 11);
  SCOPED_TRACE(SeedTrace(o.seed));
  crashtest::CampaignResult r = crashtest::RunAdrCampaign(o);
  EXPECT_TRUE(r.passed()) << crashtest::FormatResult(r);
  EXPECT_GT(r.images, 0u);
  std::printf("%s\n", crashtest::FormatResult(r).c_str());
}

TEST_P(RadixCrashTest, KillCampaignPasses) {
  crashtest::CampaignOptions o = Base(GetParam(), 12);
  o.cycles = static_cast<uint32_t>(Scale(12));
  o.threads = 2;
  crashtest::CampaignResult r = crashtest::RunKillCampaign(o);
  EXPECT_TRUE(r.passed()) << crashtest::FormatResult(r);
}

// The acceptance run (LABELS long via radix_crash_long_test): crash at every fence of a
// 2,000-operation workload, and 50 SIGKILL cycles.
TEST_P(RadixCrashTest, FullCampaign) {
  if (std::getenv("PMINDEX_RADIX_FULL_CAMPAIGN") == nullptr) GTEST_SKIP() << "long test";
  crashtest::CampaignOptions o = Base(GetParam(), 21);
  o.ops = 2000;
  o.points = 0;
  o.images = 4;
  crashtest::CampaignResult r = crashtest::RunAdrCampaign(o);
  std::printf("%s\n", crashtest::FormatResult(r).c_str());
  EXPECT_TRUE(r.passed()) << crashtest::FormatResult(r);
  o.cycles = 50;
  o.threads = 2;
  crashtest::CampaignResult k = crashtest::RunKillCampaign(o);
  std::printf("%s\n", crashtest::FormatResult(k).c_str());
  EXPECT_TRUE(k.passed()) << crashtest::FormatResult(k);
}

INSTANTIATE_TEST_SUITE_P(Radix, RadixCrashTest, ::testing::Values("wort", "woart", "part", "roart"));

class RadixMutantTest : public ::testing::TestWithParam<std::string> {};

TEST_P(RadixMutantTest, CampaignCatchesMutant) {
  PMINDEX_REQUIRE_MUTANTS();
  const std::string mutant = GetParam();
  crashtest::CampaignOptions o = Base(mutant.substr(0, mutant.find('.')), 13);
  o.mutant = mutant;
  o.points = 0;  // every fence
  crashtest::CampaignResult r = crashtest::RunAdrCampaign(o);
  EXPECT_TRUE(r.error.ok()) << r.error.ToString();
  EXPECT_FALSE(r.failures.empty()) << mutant << " survived: " << crashtest::FormatResult(r);
  if (!r.failures.empty()) std::printf("%s caught: %s\n", mutant.c_str(), r.failures[0].message.c_str());
}

INSTANTIATE_TEST_SUITE_P(Radix, RadixMutantTest,
                         ::testing::Values("wort.skip_leaf_persist",
                                           "wort.split_skip_parent_persist",
                                           "woart.skip_leaf_persist",
                                           "woart.header_and_child_two_stores",
                                           "part.count_before_entry", "part.skip_node_persist",
                                           "part.skip_leaf_persist",
                                           "roart.skip_leaf_persist",
                                           "roart.skip_entry_persist"),
                         [](const auto& info) {
                           std::string n = info.param;
                           for (char& c : n)
                             if (c == '.') c = '_';
                           return n;
                         });

}  // namespace
}  // namespace pmindex::testing
