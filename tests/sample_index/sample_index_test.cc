// An index added in a folder of its own under tests/ is in the registry of every test
// program, with its kind, mutant and scenario, and the crash campaign runs it and catches its
// mutant (the registry-driven suites - tests/core/api_test.cc, every_index_model_test.cc,
// tests/crash/campaign_test.cc - run it beside the library's indexes).
#include <gtest/gtest.h>

#include <algorithm>

#include "common/test_util.h"
#include "crashtest/campaign.h"
#include "crashtest/scenarios.h"
#include "pmindex/index.h"

namespace pmindex {
namespace {

TEST(SampleIndex, IsRegisteredWithItsKindMutantAndScenario) {
  const std::vector<std::string> names = RegisteredIndexNames();
  ASSERT_NE(std::find(names.begin(), names.end(), "test-slotpages"), names.end());
  const IndexRegistration* reg = FindIndex("test-slotpages");
  ASSERT_NE(reg, nullptr);
  EXPECT_TRUE(reg->test_only);
  EXPECT_GE(static_cast<uint32_t>(reg->traits.kind), kFirstTestIndexKind);
  EXPECT_EQ(FindIndex(reg->traits.kind), reg);
  ASSERT_EQ(reg->mutants.size(), 1u);
  EXPECT_EQ(FindMutant("test-slotpages.state_before_pair"), &reg->mutants[0]);
  ASSERT_EQ(reg->crash_scenarios.size(), 1u);
  const crashtest::Scenario* scenario = crashtest::FindScenario(reg->crash_scenarios[0]);
  ASSERT_NE(scenario, nullptr);
  EXPECT_TRUE(crashtest::ScenarioApplies(*scenario, *reg));
}

crashtest::CampaignOptions Campaign(uint64_t seed) {
  crashtest::CampaignOptions o;
  o.index = "test-slotpages";
  o.seed = seed;
  o.ops = testing::Scale(150);
  o.pool_size = 8ull << 20;
  o.timeout_seconds = testing::CampaignTimeout();
  return o;
}

TEST(SampleIndex, CrashCampaignPassesOnItsScenario) {
  crashtest::CampaignOptions o = Campaign(testing::TestSeed(3));
  o.scenario = FindIndex("test-slotpages")->crash_scenarios[0];
  o.points = testing::Scale(60);
  const crashtest::CampaignResult r = crashtest::RunAdrCampaign(o);
  ASSERT_TRUE(r.error.ok()) << r.error.ToString();
  EXPECT_GT(r.images, 0u);
  EXPECT_TRUE(r.failures.empty()) << crashtest::FormatResult(r);
}

TEST(SampleIndex, CrashCampaignCatchesItsMutant) {
  PMINDEX_REQUIRE_MUTANTS();
  crashtest::CampaignOptions o = Campaign(testing::TestSeed(4));
  o.mutant = "test-slotpages.state_before_pair";
  const crashtest::CampaignResult r = crashtest::RunAdrCampaign(o);
  ASSERT_TRUE(r.error.ok()) << r.error.ToString();
  EXPECT_FALSE(r.failures.empty()) << "the campaign missed the mutant\n"
                                   << crashtest::FormatResult(r);
}

}  // namespace
}  // namespace pmindex
