// RNTree as its paper built it (doc/btree.md, "RNTree as its paper built it"): the pool
// variants log_persist=parallel (log entries persisted outside the leaf lock) and
// split=native (the logged split in place) of rntree and rntree-ds. The lockstep model with
// verify() across reopens, the native split keeping its leaf and leaking nothing, eight
// oversubscribed threads (TSan too), the crash campaign with the variant's parameters at
// every fence (torn images too), and each variant mutant caught.
#include <gtest/gtest.h>

#include <cstdio>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <string_view>
#include <vector>

#include "btree/btree_concurrent_checks.h"
#include "btree/btree_test_util.h"
#include "btree/hybrid/hybrid_tree.h"
#include "common/test_util.h"
#include "crashtest/campaign.h"
#include "pm/alloc.h"
#include "pm/mutant.h"

namespace pmindex::testing {
namespace {

struct Variant {
  std::string index;
  std::string params;
};

std::vector<Variant> AllVariants() {
  std::vector<Variant> out;
  for (const char* index : {"rntree", "rntree-ds"}) {
    for (const char* params : {"log_persist=parallel", "split=native",
                               "log_persist=parallel split=native"}) {
      out.push_back({index, params});
    }
  }
  return out;
}

std::string VariantName(const ::testing::TestParamInfo<Variant>& info) {
  std::string s = info.param.index + "_" + info.param.params;
  for (char& c : s) {
    if (c == '-' || c == '=' || c == ' ') c = '_';
  }
  return s;
}

std::unique_ptr<Index> Create(const TempDir& dir, const Variant& v, uint64_t size = 64ull << 20) {
  Options o = BTreeOptions(size);
  o.index_params = v.params;
  auto r = CreateIndex(v.index, dir.file("p.pool"), o);
  EXPECT_TRUE(r.ok()) << r.status().ToString();
  return r.ok() ? std::move(r.value()) : nullptr;
}

std::unique_ptr<Index> Reopen(const TempDir& dir, const Variant& v) {
  auto r = OpenIndex(dir.file("p.pool"), BTreeOptions(), v.index);
  EXPECT_TRUE(r.ok()) << r.status().ToString();
  return r.ok() ? std::move(r.value()) : nullptr;
}

uint64_t Head(Index& index) {
  return reinterpret_cast<btree::BTreeRoot*>(index.pool()->root_area())->head;
}

class RNTreeVariantTest : public ::testing::TestWithParam<Variant> {};

// Lockstep with the model (each acknowledged answer checked), verify() and a full
// comparison after every round, then a reopen (recovery) that must keep the variant.
TEST_P(RNTreeVariantTest, ModelAcrossReopens) {
  const uint64_t seed = TestSeed(17);
  SCOPED_TRACE(SeedTrace(seed));
  TempDir dir;
  std::unique_ptr<Index> index = Create(dir, GetParam());
  ASSERT_NE(index, nullptr);
  std::map<uint64_t, uint64_t> model;
  const uint64_t n = Scale(6000);
  for (uint64_t round = 0; round < 4; ++round) {
    RandomWrites(*index, seed + round, n, &model);
    for (uint64_t k = 0; k < n / 2; ++k) {  // ascending runs: splits at the right edge
      const uint64_t key = (round + 1) * 1000000 + k;
      ASSERT_TRUE(index->upsert(IntKey(key), IntValue(k)).ok());
      model[key] = k;
    }
    ASSERT_NO_FATAL_FAILURE(ExpectSameContents(*index, model));
    ASSERT_TRUE(index->close().ok());
    index = Reopen(dir, GetParam());
    ASSERT_NE(index, nullptr);
    const std::string_view params = index->pool()->index_params();  // zero-padded
    EXPECT_EQ(params.substr(0, params.find('\0')), GetParam().params);
    ASSERT_NO_FATAL_FAILURE(ExpectSameContents(*index, model));
  }
}

// split=native splits in place: the head leaf keeps its block (the copy-on-write split
// replaces it), and the undo copy goes back to the allocator: the pool holds the leaves
// and nothing else, before and after a reopen.
TEST_P(RNTreeVariantTest, SplitKeepsOrReplacesTheLeafAndLeaksNothing) {
  TempDir dir;
  std::unique_ptr<Index> index = Create(dir, GetParam());
  ASSERT_NE(index, nullptr);
  ASSERT_TRUE(index->insert(IntKey(0), IntValue(0)).ok());
  const uint64_t head = Head(*index);
  for (uint64_t k = 1; k < 2000; ++k) ASSERT_TRUE(index->insert(IntKey(k), IntValue(k)).ok());
  const bool native = GetParam().params.find("split=native") != std::string::npos;
  EXPECT_EQ(Head(*index) == head, native);
  ASSERT_TRUE(index->verify().ok());
  ASSERT_TRUE(index->close().ok());
  index = Reopen(dir, GetParam());
  ASSERT_NE(index, nullptr);
  const IndexStats st = index->stats();
  EXPECT_EQ(st.keys, 2000u);
  EXPECT_EQ(index->pool()->allocator().allocated_bytes(), st.pm_bytes);
}

// Eight threads (oversubscribed) on disjoint and on overlapping keys: every acknowledged
// answer is checked against the thread's model, then verify() and a full comparison.
TEST_P(RNTreeVariantTest, Concurrent) {
  {
    TempDir dir;
    std::unique_ptr<Index> index = Create(dir, GetParam(), 256ull << 20);
    ASSERT_NE(index, nullptr);
    CheckDisjointRanges(*index);
  }
  TempDir dir;
  std::unique_ptr<Index> index = Create(dir, GetParam(), 256ull << 20);
  ASSERT_NE(index, nullptr);
  CheckOverlappingKeys(*index);
}

INSTANTIATE_TEST_SUITE_P(Variants, RNTreeVariantTest, ::testing::ValuesIn(AllVariants()),
                         VariantName);

// ---- crash campaign -----------------------------------------------------------------------

crashtest::CampaignOptions Campaign(const std::string& index, const std::string& params,
                                    uint64_t ops) {
  crashtest::CampaignOptions o;
  o.index = index;
  o.index_params = params;
  o.ops = ops;
  o.seed = 5;
  o.pool_size = 8ull << 20;
  o.images = 1;
  o.timeout_seconds = CampaignTimeout();
  return o;
}

// Every fence of a random workload with native splits in it (torn images too): recovery,
// verify(), durable linearizability and no leak at each.
TEST(RNTreeVariantCrashTest, CampaignAtEveryFence) {
  const std::vector<Variant> runs = {{"rntree", "log_persist=parallel"},
                                     {"rntree", "split=native"},
                                     {"rntree-ds", "log_persist=parallel split=native"}};
  for (const Variant& v : runs) {
    crashtest::CampaignOptions o = Campaign(v.index, v.params, 200);
    if (Sanitized()) o.points = 15;  // a seeded sample: the plain build takes every fence
    o.torn = true;
    o.torn_images = 2;
    crashtest::CampaignResult r = crashtest::RunAdrCampaign(o);
    ASSERT_TRUE(r.error.ok()) << r.error.ToString();
    EXPECT_TRUE(r.failures.empty()) << crashtest::FormatResult(r);
    std::printf("%s %s: %s\n", v.index.c_str(), v.params.c_str(),
                crashtest::FormatResult(r).c_str());
  }
}

// The B+tree split scenario (many splits in a row) with native splits: a seeded sample of its
// fences (`pmindex crashtest --index rntree --scenario split-sibling-early --torn
// --index-params split=native` takes all 867, about 2 minutes).
TEST(RNTreeVariantCrashTest, NativeSplitsScenarioSample) {
  crashtest::CampaignOptions o = Campaign("rntree", "split=native", 0);
  o.scenario = "split-sibling-early";
  o.points = Sanitized() ? 4 : 60;
  crashtest::CampaignResult r = crashtest::RunAdrCampaign(o);
  ASSERT_TRUE(r.error.ok()) << r.error.ToString();
  EXPECT_TRUE(r.failures.empty()) << crashtest::FormatResult(r);
  std::printf("%s\n", crashtest::FormatResult(r).c_str());
}

// A mutant of a variant's path, which the registry's sweep cannot reach (its campaign runs
// the default parameters): the campaign with the variant must fail.
void ExpectCaught(const std::string& params) {
  // The campaign's logic, proven in the plain build (as the registry's mutant sweep).
  if (Sanitized()) GTEST_SKIP() << "mutants run in the plain build";
  crashtest::CampaignOptions o = Campaign("rntree", params, 200);
  o.mutant = pm::selected_mutant();  // the campaign selects it in its own scope
  crashtest::CampaignResult r = crashtest::RunAdrCampaign(o);
  ASSERT_TRUE(r.error.ok()) << r.error.ToString();
  EXPECT_FALSE(r.failures.empty()) << "not caught: " << crashtest::FormatResult(r);
}

TEST(RNTreeVariantCrashTest, ParallelCommitBeforeEntryPersistIsCaught) {
  PMINDEX_REQUIRE_MUTANTS();
  ASSERT_TRUE(pm::set_mutant("rntree.parallel_commit_before_entry_persist"));
  ExpectCaught("log_persist=parallel");
  pm::set_mutant("");
}

TEST(RNTreeVariantCrashTest, NativeSplitSkipUndoPersistIsCaught) {
  PMINDEX_REQUIRE_MUTANTS();
  ASSERT_TRUE(pm::set_mutant("rntree.native_split_skip_undo_persist"));
  ExpectCaught("split=native");
  pm::set_mutant("");
}

TEST(RNTreeVariantCrashTest, NativeSplitCommitUnfencedIsCaught) {
  PMINDEX_REQUIRE_MUTANTS();
  ASSERT_TRUE(pm::set_mutant("rntree.native_split_commit_unfenced"));
  ExpectCaught("split=native");
  pm::set_mutant("");
}

}  // namespace
}  // namespace pmindex::testing
