// PFtree under the crash campaign (crashtest/campaign.h): ADR crash images at sampled fences
// recover to the acknowledged state, and each test-only mutant is caught. The full campaigns
// (every fence of 2,000 operations, 50 SIGKILL cycles with 4 threads) are labelled long.
#include <gtest/gtest.h>

#include <cstdlib>
#include <cstdio>

#include "common/test_util.h"
#include "crashtest/campaign.h"

namespace pmindex::testing {
namespace {

crashtest::CampaignOptions Base(uint64_t ops, uint64_t points) {
  crashtest::CampaignOptions o;
  o.timeout_seconds = CampaignTimeout();
  o.index = "pftree";
  o.ops = ops;
  o.points = points;
  o.seed = TestSeed(5);
  o.images = 2;
  o.continuation_every = 8;
  if (std::getenv("PFTREE_CRASH_VERBOSE"))
    o.log = [](const std::string& line) { std::fprintf(stderr, "%s\n", line.c_str()); };
  return o;
}

bool Long() { return std::getenv("PFTREE_CRASH_FULL") != nullptr; }

// Runs an ADR campaign that must pass (every image recovers to the acknowledged state).
crashtest::CampaignResult ExpectRecovers(const crashtest::CampaignOptions& o) {
  auto r = crashtest::RunAdrCampaign(o);
  SCOPED_TRACE(crashtest::FormatResult(r));
  EXPECT_TRUE(r.error.ok()) << r.error.ToString();
  EXPECT_TRUE(r.passed()) << (r.failures.empty() ? "" : r.failures[0].message + "\n  replay: " +
                                                             r.failures[0].replay);
  return r;
}

// Runs an ADR campaign with o.mutant that must fail: the campaign catches the mutant.
void ExpectCaught(const crashtest::CampaignOptions& o, const char* what) {
  auto r = crashtest::RunAdrCampaign(o);
  SCOPED_TRACE(crashtest::FormatResult(r));
  ASSERT_TRUE(r.error.ok()) << r.error.ToString();
  EXPECT_FALSE(r.passed()) << what << " survived the campaign";
}

TEST(PFTreeCrashTest, AdrImagesRecover) {
  auto o = Base(Long() ? 2000 : Scale(600), Long() ? 0 : Scale(300));
  EXPECT_GT(ExpectRecovers(o).images, 0u);
}

class PFTreeMutantTest : public ::testing::TestWithParam<const char*> {};

TEST_P(PFTreeMutantTest, IsCaught) {
  PMINDEX_REQUIRE_MUTANTS();
  auto o = Base(Scale(600), 0);
  o.mutant = GetParam();
  o.continuation_every = 64;
  auto r = crashtest::RunAdrCampaign(o);
  SCOPED_TRACE(crashtest::FormatResult(r));
  ASSERT_TRUE(r.error.ok()) << r.error.ToString();
  EXPECT_FALSE(r.passed()) << "mutant " << GetParam() << " survived the campaign";
  if (!r.failures.empty()) std::printf("%s caught: %s\n", GetParam(), r.failures[0].message.c_str());
}

INSTANTIATE_TEST_SUITE_P(Mutants, PFTreeMutantTest,
                         ::testing::Values("pftree.header_before_kv", "pftree.skip_entry_persist",
                                           "pftree.skip_split_persist", "pftree.rebuild_pad_unwritten"),
                         [](const auto& info) {
                           std::string n = info.param;
                           return n.substr(n.find('.') + 1);
                         });

// Splits of leaf arrays that serve runs of key bytes (copies of a Node48 / Node256 published
// in the grandparent), removal of whole runs, and leaves added back into emptied runs.
TEST(PFTreeCrashTest, SplitRunsRecover) {
  // ~9,000 fences with many undecided lines each: a sample, each line not flipped alone
  // (every fence with PFTREE_CRASH_FULL=1).
  auto o = Base(0, Long() ? 0 : Scale(120));
  o.scenario = "pftree-split-runs";
  o.pool_size = 32ull << 20;
  o.flip_each = Long();
  ExpectRecovers(o);
}

// The copy of a shared leaf's parent must be durable before the grandparent names it.
TEST(PFTreeCrashTest, SplitRunsCatchUnpersistedCopy) {
  PMINDEX_REQUIRE_MUTANTS();
  auto o = Base(0, Scale(60));
  o.scenario = "pftree-split-runs";
  o.pool_size = 32ull << 20;
  o.flip_each = false;
  o.mutant = "pftree.skip_split_node_persist";
  ExpectCaught(o, "the unpersisted copy");
}

// Scenarios run at every fence, each with the mutant of its one new persist:
// - updates of 8-byte values in place (and the aligned appends that make them possible): the
//   in-place store must be persisted before the update returns;
// - children added in place to Node4/16 (and the copies when they are full): the slot must be
//   durable before the count covers it.
struct InPlaceScenario {
  const char* scenario;
  const char* mutant;
  const char* what;  // the bug the mutant plants, for the failure message
};

class PFTreeInPlaceTest : public ::testing::TestWithParam<InPlaceScenario> {};

TEST_P(PFTreeInPlaceTest, Recovers) {
  auto o = Base(0, 0);
  o.scenario = GetParam().scenario;
  o.torn = true;
  ExpectRecovers(o);
}

TEST_P(PFTreeInPlaceTest, CatchesItsMutant) {
  PMINDEX_REQUIRE_MUTANTS();
  auto o = Base(0, 0);
  o.scenario = GetParam().scenario;
  o.mutant = GetParam().mutant;
  ExpectCaught(o, GetParam().what);
}

INSTANTIATE_TEST_SUITE_P(
    Scenarios, PFTreeInPlaceTest,
    ::testing::Values(InPlaceScenario{"pftree-update-in-place", "pftree.skip_inplace_update_persist",
                                      "the unpersisted in-place update"},
                      InPlaceScenario{"pftree-node-insert-in-place", "pftree.skip_node_slot_persist",
                                      "the unpersisted Node4/16 slot"}),
    [](const auto& info) {
      std::string n = info.param.scenario;
      n = n.substr(n.find('-') + 1);
      for (char& c : n) c = c == '-' ? '_' : c;
      return n;
    });

TEST(PFTreeCrashTest, KillCyclesFourThreads) {
  auto o = Base(100000, 0);
  o.cycles = Long() ? 50 : 6;
  o.threads = 4;
  o.pool_size = 64ull << 20;
  auto r = crashtest::RunKillCampaign(o);
  SCOPED_TRACE(crashtest::FormatResult(r));
  ASSERT_TRUE(r.error.ok()) << r.error.ToString();
  EXPECT_TRUE(r.passed()) << (r.failures.empty() ? "" : r.failures[0].message);
}

}  // namespace
}  // namespace pmindex::testing
