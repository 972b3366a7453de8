// The crash machinery against the reference structures: it must catch the broken list
// within its first crash points and pass the correct one over at least 10,000 images.
#include <gtest/gtest.h>

#include "common/test_util.h"
#include "crashtest/campaign.h"

namespace pmindex::crashtest {
namespace {

using pmindex::testing::Scale;
using pmindex::testing::SeedTrace;
using pmindex::testing::TestSeed;

CampaignOptions ListOptions(const std::string& index, uint64_t ops, uint64_t seed) {
  CampaignOptions o;
  o.timeout_seconds = pmindex::testing::CampaignTimeout();
  o.index = index;
  o.ops = ops;
  o.seed = seed;
  o.pool_size = 4ull << 20;
  return o;
}

TEST(ReferenceCrashTest, CatchesTheBrokenListEarly) {
  const uint64_t seed = TestSeed(7);
  SCOPED_TRACE(SeedTrace(seed));
  CampaignResult r = RunAdrCampaign(ListOptions("testlist-broken", 100, seed));
  ASSERT_TRUE(r.error.ok()) << r.error.ToString();
  ASSERT_FALSE(r.failures.empty()) << FormatResult(r);
  // The first insert links an unpersisted node: its second fence already shows it.
  EXPECT_LE(r.failures[0].point, 10u) << FormatResult(r);
  EXPECT_NE(r.failures[0].replay.find("--replay-point"), std::string::npos);
}

TEST(ReferenceCrashTest, CorrectListPassesTenThousandImages) {
  const uint64_t seed = TestSeed(11);
  SCOPED_TRACE(SeedTrace(seed));
  CampaignOptions o = ListOptions("testlist", Scale(2400), seed);
  o.images = 8;
  o.torn = true;
  CampaignResult r = RunAdrCampaign(o);
  ASSERT_TRUE(r.error.ok()) << r.error.ToString();
  EXPECT_TRUE(r.failures.empty()) << FormatResult(r);
  EXPECT_GE(r.images, Scale(10000)) << FormatResult(r);
  std::printf("%s\n", FormatResult(r).c_str());
}

TEST(ReferenceCrashTest, EveryListMutantIsCaught) {
  PMINDEX_REQUIRE_MUTANTS();
  for (const char* mutant : {"testlist.skip_node_persist", "testlist.skip_link_persist"}) {
    SCOPED_TRACE(mutant);
    CampaignOptions o = ListOptions("testlist", 60, 3);
    o.mutant = mutant;
    CampaignResult r = RunAdrCampaign(o);
    ASSERT_TRUE(r.error.ok()) << r.error.ToString();
    EXPECT_FALSE(r.failures.empty()) << FormatResult(r);
  }
}

TEST(ReferenceCrashTest, AFailureReplaysFromItsPointAndImage) {
  CampaignOptions o = ListOptions("testlist-broken", 100, 5);
  CampaignResult first = RunAdrCampaign(o);
  ASSERT_FALSE(first.failures.empty());
  CampaignOptions replay = o;
  replay.only_point = first.failures[0].point;
  replay.only_image = first.failures[0].image;
  CampaignResult again = RunAdrCampaign(replay);
  ASSERT_EQ(again.failures.size(), 1u) << FormatResult(again);
  EXPECT_EQ(again.images, 1u);
  EXPECT_EQ(again.failures[0].message, first.failures[0].message);
  EXPECT_EQ(again.failures[0].operation, first.failures[0].operation);
}

TEST(ReferenceCrashTest, KillModelPassesTheCorrectList) {
  CampaignOptions o = ListOptions("testlist", 400, TestSeed(13));
  o.cycles = static_cast<uint32_t>(Scale(8));
  o.threads = 2;
  o.max_delay_ms = 20;
  CampaignResult r = RunKillCampaign(o);
  ASSERT_TRUE(r.error.ok()) << r.error.ToString();
  EXPECT_TRUE(r.failures.empty()) << FormatResult(r);
  EXPECT_EQ(r.points, o.cycles);
}

}  // namespace
}  // namespace pmindex::crashtest
