// FPTree as its paper built it (src/btree/hybrid/fptree_leaf.h, variant.h): readers=retraverse
// and split=native beside the defaults. Lockstep against a model with verify() for each
// variant, readers and writers of 8 threads (label tsan), a retraversing reader behind a held
// leaf lock (bounded: it falls back to waiting), the native split's fences, an image at every
// fence of a native split recovering with nothing leaked, the crash campaign (torn images
// too) with the variant parameters, and the micro-log mutants caught.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "btree/btree_concurrent_checks.h"
#include "btree/btree_test_util.h"
#include "btree/hybrid/fptree_leaf.h"
#include "btree/hybrid/hybrid_tree.h"
#include "common/test_util.h"
#include "crashtest/campaign.h"
#include "pm/alloc.h"
#include "pm/mutant.h"
#include "pm/persist.h"

namespace pmindex::testing {
namespace {

using btree::BTreeRoot;
using btree::FPTreeLayout;
using btree::FPTreeLeaf;
using btree::FPTreeSplitLog;

const std::vector<std::string>& Variants() {
  static const std::vector<std::string> v = {"fptree", "fptree readers=retraverse",
                                             "fptree split=native",
                                             "fptree readers=retraverse split=native"};
  return v;
}

std::unique_ptr<Index> Create(const std::string& path, const std::string& params,
                              uint64_t size = 64ull << 20) {
  Options o = BTreeOptions(size);
  o.index_params = params;
  auto r = CreateIndex("fptree", path, o);
  EXPECT_TRUE(r.ok()) << r.status().ToString();
  return r.ok() ? std::move(r.value()) : nullptr;
}

std::unique_ptr<Index> Open(const std::string& path) {
  auto r = OpenIndex(path, BTreeOptions(), "fptree");
  EXPECT_TRUE(r.ok()) << r.status().ToString();
  return r.ok() ? std::move(r.value()) : nullptr;
}

FPTreeSplitLog* SplitLog(Index& index) {
  return reinterpret_cast<FPTreeSplitLog*>(index.pool()->root_area() +
                                           FPTreeLayout::kSplitLogOffset);
}

class FPTreeVariantModelTest : public ::testing::TestWithParam<std::string> {};

// Random writes in rounds, each checked (verify, scan, every lookup) against the model;
// ascending and descending runs split leaves at either end; then a clean reopen and a crash
// copy (the open pool's bytes) recover to the model.
TEST_P(FPTreeVariantModelTest, LockstepWithVerifyAndReopen) {
  const uint64_t seed = TestSeed(41);
  SCOPED_TRACE(SeedTrace(seed));
  TempDir dir;
  auto index = Create(dir.file("p.pool"), GetParam());
  ASSERT_NE(index, nullptr);
  std::map<uint64_t, uint64_t> model;
  for (uint64_t round = 0; round < 6; ++round) {
    RandomWrites(*index, seed + round, Scale(4000), &model);
    ASSERT_NO_FATAL_FAILURE(ExpectSameContents(*index, model));
  }
  for (uint64_t i = 0; i < Scale(3000); ++i) {
    const uint64_t up = (1ull << 40) + i;
    const uint64_t down = (1ull << 41) - i;
    ASSERT_TRUE(index->upsert(IntKey(up), IntValue(i)).ok());
    ASSERT_TRUE(index->upsert(IntKey(down), IntValue(~i)).ok());
    model[up] = i;
    model[down] = ~i;
  }
  ASSERT_NO_FATAL_FAILURE(ExpectSameContents(*index, model));
  std::filesystem::copy_file(dir.file("p.pool"), dir.file("crash.pool"));
  ASSERT_TRUE(index->close().ok());
  for (const char* name : {"p.pool", "crash.pool"}) {
    SCOPED_TRACE(name);
    auto reopened = Open(dir.file(name));
    ASSERT_NE(reopened, nullptr);
    ASSERT_NO_FATAL_FAILURE(ExpectSameContents(*reopened, model));
    EXPECT_EQ(reopened->pool()->allocator().allocated_bytes(), reopened->stats().pm_bytes);
  }
}

INSTANTIATE_TEST_SUITE_P(Variants, FPTreeVariantModelTest, ::testing::ValuesIn(Variants()),
                         [](const auto& info) {
                           std::string n = info.param;
                           for (char& c : n) {
                             if (c == ' ' || c == '=' || c == '-') c = '_';
                           }
                           return n;
                         });

TEST(FPTreeVariantTest, OtherValuesAreRefused) {
  TempDir dir;
  Options o = BTreeOptions(16ull << 20);
  o.index_params = "fptree readers=spin";
  EXPECT_FALSE(CreateIndex("fptree", dir.file("a.pool"), o).ok());
  o.index_params = "rntree readers=retraverse";  // FPTree's reader only
  EXPECT_FALSE(CreateIndex("rntree", dir.file("b.pool"), o).ok());
}

// ---- concurrency (label tsan) ----------------------------------------------------------

// 8 threads on 2 cores: disjoint writers with lookups and scans, then skewed writers on shared
// keys with a scanner, for each variant (native splits race each other and the readers).
TEST(FPTreeVariantConcurrentTest, ReadersAndWritersOfEachVariant) {
  for (const std::string& params : {std::string("fptree readers=retraverse"),
                                    std::string("fptree split=native"),
                                    std::string("fptree readers=retraverse split=native")}) {
    SCOPED_TRACE(params);
    TempDir dir;
    auto a = Create(dir.file("a.pool"), params, 256ull << 20);
    ASSERT_NE(a, nullptr);
    ASSERT_NO_FATAL_FAILURE(CheckDisjointRanges(*a));
    auto b = Create(dir.file("b.pool"), params, 64ull << 20);
    ASSERT_NE(b, nullptr);
    ASSERT_NO_FATAL_FAILURE(CheckOverlappingKeys(*b));
  }
}

// A retraversing reader that keeps meeting a locked leaf restarts from the root a bounded
// number of times, then waits for the lock like the default reader: it neither livelocks nor
// returns while the leaf is held, and it reads the value once the lock is released.
TEST(FPTreeVariantConcurrentTest, RetraversingReaderFallsBackToWaiting) {
  TempDir dir;
  auto index = Create(dir.file("p.pool"), "fptree readers=retraverse", 16ull << 20);
  ASSERT_NE(index, nullptr);
  ASSERT_TRUE(index->insert(IntKey(7), IntValue(70)).ok());
  const auto* root = reinterpret_cast<BTreeRoot*>(index->pool()->root_area());
  auto* leaf = reinterpret_cast<FPTreeLeaf*>(index->pool()->base() + root->head);
  ASSERT_TRUE(pm::VersionLock::Lock(&leaf->version, btree::kGen));
  std::atomic<bool> done{false};
  std::string got;
  std::thread reader([&] {
    EXPECT_TRUE(index->lookup(IntKey(7), &got).ok());
    done.store(true);
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  EXPECT_FALSE(done.load()) << "a reader returned while the leaf was locked";
  pm::VersionLock::Unlock(&leaf->version, btree::kGen, true);
  reader.join();
  EXPECT_EQ(IntValue::Decode(got), 70u);
}

// ---- the native split's persistence ----------------------------------------------------

// Keys 2, 4, .., 128 fill the head leaf; the 65th insert splits it (no successor); the odd
// keys below the split key refill the left leaf, whose next insert splits it with a successor.
struct SplitPlan {
  std::vector<uint64_t> fill;
  uint64_t first_split;
  std::vector<uint64_t> refill;
  uint64_t second_split;
};
SplitPlan Plan() {
  SplitPlan p;
  for (uint64_t k = 2; k <= 128; k += 2) p.fill.push_back(k);
  p.first_split = 1001;
  for (uint64_t k = 1; k <= 63; k += 2) p.refill.push_back(k);
  p.second_split = 65;
  return p;
}

// The paper's steps as fences: the split's 7 (log the leaf, log the new leaf, copy, new
// bitmap, old bitmap, link, reset the log) and the insert's own 3 after it; the default
// copy-on-write split costs 2 in all.
TEST(FPTreeVariantTest, NativeSplitFences) {
  const SplitPlan p = Plan();
  for (const auto& [params, expected] :
       std::vector<std::pair<std::string, uint64_t>>{{"fptree", 2}, {"fptree split=native", 10}}) {
    SCOPED_TRACE(params);
    TempDir dir;
    auto index = Create(dir.file("p.pool"), params, 16ull << 20);
    ASSERT_NE(index, nullptr);
    for (uint64_t k : p.fill) ASSERT_TRUE(index->insert(IntKey(k), IntValue(k)).ok());
    pm::PersistContext& pc = index->pool()->persist_context();
    const PersistCounters before = pc.counters();
    ASSERT_TRUE(index->insert(IntKey(p.first_split), IntValue(1)).ok());
    EXPECT_EQ((pc.counters() - before).fences, expected);
    EXPECT_EQ(index->stats().nodes.at(0).second, 2u);  // leaves
    ASSERT_TRUE(index->verify().ok());
  }
}

// Copies the pool file at every fence of the operations it is armed for: each copy is an
// image in which every store so far reached media.
class FenceImages : public PersistHook {
 public:
  FenceImages(std::string pool, std::string dir) : pool_(std::move(pool)), dir_(std::move(dir)) {}
  void on_flush(uintptr_t, size_t) override {}
  void on_fence() override {
    if (!armed) return;
    const std::string image = dir_ + "/fence" + std::to_string(images.size()) + ".pool";
    std::filesystem::copy_file(pool_, image, std::filesystem::copy_options::overwrite_existing);
    images.push_back(image);
  }
  bool armed = false;
  std::vector<std::string> images;

 private:
  std::string pool_;
  std::string dir_;
};

// A crash at every fence of two native splits (of the head leaf, and of a leaf with a
// successor) and of the insert that follows each: recovery finishes or rolls the split back,
// resets the micro-log, and leaks nothing (every allocated block is a leaf of the chain); the
// tree holds the keys before the insert or after it, and keeps working.
TEST(FPTreeVariantTest, CrashAtEveryFenceOfANativeSplitLeaksNothing) {
  const SplitPlan p = Plan();
  TempDir dir;
  const std::string path = dir.file("p.pool");
  FenceImages hook(path, dir.path());
  Options o = BTreeOptions(8ull << 20);
  o.index_params = "fptree split=native";
  o.persist_hook = &hook;
  auto created = CreateIndex("fptree", path, o);
  ASSERT_TRUE(created.ok()) << created.status().ToString();
  Index& index = **created;
  std::map<uint64_t, uint64_t> model;
  auto insert = [&](uint64_t k) {
    ASSERT_TRUE(index.insert(IntKey(k), IntValue(k * 3)).ok());
    model[k] = k * 3;
  };
  for (uint64_t k : p.fill) insert(k);
  for (int split = 0; split < 2; ++split) {
    if (split == 1) {
      for (uint64_t k : p.refill) insert(k);
    }
    const uint64_t key = split == 0 ? p.first_split : p.second_split;
    const std::map<uint64_t, uint64_t> before = model;
    hook.images.clear();
    hook.armed = true;
    insert(key);
    hook.armed = false;
    ASSERT_EQ(hook.images.size(), 10u);
    for (size_t i = 0; i < hook.images.size(); ++i) {
      SCOPED_TRACE("split " + std::to_string(split) + ", fence " + std::to_string(i));
      auto copy = Open(hook.images[i]);
      ASSERT_NE(copy, nullptr);
      const FPTreeSplitLog* log = SplitLog(*copy);
      EXPECT_EQ(log->current, 0u);
      EXPECT_EQ(log->new_leaf, 0u);
      ASSERT_TRUE(copy->verify().ok());
      const std::map<uint64_t, uint64_t> got = Contents(*copy);
      EXPECT_TRUE(got == before || got == model) << "neither before nor after the insert";
      EXPECT_EQ(copy->pool()->allocator().allocated_bytes(), copy->stats().pm_bytes)
          << "a block is allocated that no leaf of the chain is";
      ASSERT_TRUE(copy->upsert(IntKey(key), IntValue(5)).ok());
      ASSERT_TRUE(copy->verify().ok());
    }
  }
}

// A split log naming a leaf outside the pool (a damaged root area) is refused as Corruption,
// not followed. The root area starts at pool offset 1024, the log 1024 bytes into it.
TEST(FPTreeVariantTest, DamagedSplitLogIsRefused) {
  TempDir dir;
  const std::string path = dir.file("p.pool");
  {
    auto index = Create(path, "fptree split=native", 16ull << 20);
    ASSERT_NE(index, nullptr);
    ASSERT_TRUE(index->insert(IntKey(1), IntValue(2)).ok());
  }
  {
    std::FILE* f = std::fopen(path.c_str(), "r+b");
    ASSERT_NE(f, nullptr);
    const uint64_t log[2] = {uint64_t{1} << 40, 4096 + 64};
    ASSERT_EQ(std::fseek(f, 1024 + FPTreeLayout::kSplitLogOffset, SEEK_SET), 0);
    ASSERT_EQ(std::fwrite(log, 8, 2, f), 2u);
    std::fclose(f);
  }
  auto r = OpenIndex(path, BTreeOptions(), "fptree");
  ASSERT_FALSE(r.ok());
  EXPECT_TRUE(r.status().IsCorruption()) << r.status().ToString();
}

// ---- crash campaign with the variant parameters ---------------------------------------

crashtest::CampaignOptions Campaign(const std::string& params, uint64_t ops) {
  crashtest::CampaignOptions o;
  o.index = "fptree";
  o.index_params = params;
  o.ops = ops;
  o.seed = 11;
  o.pool_size = 8ull << 20;
  o.images = 2;
  o.torn = true;
  o.torn_images = 2;
  o.timeout_seconds = CampaignTimeout();
  return o;
}

// Every fence of a random workload that splits leaves, images torn too, for each variant.
TEST(FPTreeVariantCrashTest, CampaignAtEveryFenceTornToo) {
  for (const char* params : {"fptree readers=retraverse", "fptree split=native"}) {
    SCOPED_TRACE(params);
    crashtest::CampaignOptions o = Campaign(params, Scale(300));
    if (Sanitized()) o.points = 40;
    crashtest::CampaignResult r = crashtest::RunAdrCampaign(o);
    ASSERT_TRUE(r.error.ok()) << r.error.ToString();
    EXPECT_TRUE(r.failures.empty()) << crashtest::FormatResult(r);
    std::printf("%s: %s\n", params, crashtest::FormatResult(r).c_str());
    std::fflush(stdout);  // before the kill campaign forks
    if (std::string(params) == "fptree split=native") {
      o.cycles = 4;
      r = crashtest::RunKillCampaign(o);
      ASSERT_TRUE(r.error.ok()) << r.error.ToString();
      EXPECT_TRUE(r.failures.empty()) << crashtest::FormatResult(r);
    }
  }
}

// The micro-log's two ordering bugs, each caught by the campaign under split=native (the
// mutant sweep's default parameters never take this path: it names this test).
TEST(FPTreeVariantTest, NativeSplitMutantsAreCaught) {
  PMINDEX_REQUIRE_MUTANTS();
  if (Sanitized()) GTEST_SKIP() << "the mutant sweep runs in the plain build";
  for (const char* mutant :
       {"fptree.split_log_reset_before_link", "fptree.split_link_before_new_bitmap"}) {
    SCOPED_TRACE(mutant);
    if (std::string(mutant) == "fptree.split_log_reset_before_link") {
      ASSERT_TRUE(pm::set_mutant("fptree.split_log_reset_before_link"));
    } else {
      ASSERT_TRUE(pm::set_mutant("fptree.split_link_before_new_bitmap"));
    }
    crashtest::CampaignOptions o = Campaign("fptree split=native", 300);
    o.torn = false;
    o.mutant = mutant;
    crashtest::CampaignResult r = crashtest::RunAdrCampaign(o);
    pm::set_mutant("");
    ASSERT_TRUE(r.error.ok()) << r.error.ToString();
    ASSERT_FALSE(r.failures.empty()) << mutant << " was not caught\n" << crashtest::FormatResult(r);
    std::printf("%-38s caught at fence %llu: %s\n", mutant,
                static_cast<unsigned long long>(r.failures[0].point),
                r.failures[0].message.substr(0, 80).c_str());
  }
}

}  // namespace
}  // namespace pmindex::testing
