// The value store (src/core/value_store.h): values of 0 bytes to 1 MiB on every persistent
// index of the registry, in lockstep with a model across reopens, with nothing leaked; the
// space of overwritten values reclaimed; bad sizes refused; default pools unchanged; and a
// crash at every fence of workloads that overwrite and remove out-of-line values, with the
// publish-before-persist mutant caught.
#include <gtest/gtest.h>

#include <atomic>
#include <cstring>
#include <random>
#include <thread>
#include <string>
#include <vector>

#include "common/model_checker.h"
#include "common/test_util.h"
#include "crashtest/campaign.h"
#include "pm/alloc.h"
#include "pm/mutant.h"
#include "pmindex/index.h"

namespace pmindex::testing {
namespace {

constexpr uint64_t kLimit = 1 << 20;

std::string IntK(uint64_t k) { return std::string(IntKey(k).view()); }

// A value of `size` bytes unique to `tag`: its first bytes are the tag's, then a pattern.
std::string Value(uint64_t tag, size_t size) {
  std::string v(size, '\0');
  for (size_t i = 0; i < size; ++i) v[i] = static_cast<char>((tag >> (8 * (i % 8))) + i / 8);
  return v;
}

// Sizes around every boundary: empty, the word form's 7 inline bytes, the string forms'
// rooms (62, 254), small and large blocks, the limit.
size_t DrawSize(std::mt19937_64& rng) {
  static const size_t kSizes[] = {0,   1,   7,    8,     9,     62,        63,    64,
                                  254, 255, 256,  1024,  4000,  65536 - 8, 70000, kLimit};
  const size_t n = sizeof(kSizes) / sizeof(kSizes[0]);
  const size_t pick = rng() % (n + 4);
  if (pick < n) return kSizes[pick] > Scale(kLimit) ? Scale(kLimit) : kSizes[pick];
  return rng() % 3000;
}

std::vector<std::string> PooledIndexes() {
  std::vector<std::string> out;
  for (const std::string& name : WorkingIndexNames()) {
    const IndexRegistration* reg = FindIndex(name);
    if (reg->attach != nullptr && reg->traits.persistent) out.push_back(name);
  }
  return out;
}

Options LargeValues(uint64_t pool_size) {
  Options o;
  o.pool_size = pool_size;
  o.max_value_size = kLimit;
  o.poison_freed = true;  // a value read from a freed block shows
  return o;
}

class ValueStoreModelTest : public ::testing::TestWithParam<std::string> {
 protected:
  TempDir dir_;
};

// Random writes of values from 0 bytes to 1 MiB in lockstep with the model, full checks and
// reopens between batches. Returns in *unreachable, for two rounds of upserts, the bytes
// allocated before a close (retired blocks freed) that the reopen's rebuild found
// unreachable. `inline_only` keeps the same draws but cuts every value to under 8 bytes.
void RunLockstep(const std::string& name, const std::string& path, bool inline_only,
                 std::vector<uint64_t>* unreachable) {
  ModelChecker checker(TestSeed(4242));
  ASSERT_NO_FATAL_FAILURE(checker.create(name, path, LargeValues(96ull << 20)));
  EXPECT_EQ(checker.index().traits().max_value_size, kLimit);
  EXPECT_TRUE(checker.index().traits().any_value_size);
  std::mt19937_64 rng(checker.seed());
  auto value = [&] {
    const uint64_t tag = rng();
    const size_t size = DrawSize(rng);
    return Value(tag, inline_only ? size % 8 : size);
  };
  const uint64_t ops = Scale(400);
  const OpMix mix{.insert = 3, .update = 2, .upsert = 2, .remove = 2, .lookup = 2,
                  .scan = checker.index().traits().ordered ? 1u : 0u, .scan_limit = 8};
  for (uint64_t i = 0; i < ops; ++i) {
    const std::string key = IntK(rng() % 24);
    ASSERT_NO_FATAL_FAILURE(checker.random_op(rng, key, value(), mix));
    if ((i + 1) % 50 != 0) continue;
    ASSERT_NO_FATAL_FAILURE(checker.check_all());
    if ((i + 1) % 200 == 0) {
      ASSERT_NO_FATAL_FAILURE(checker.reopen());
    }
  }
  ASSERT_NO_FATAL_FAILURE(checker.reopen());
  ASSERT_NO_FATAL_FAILURE(checker.check_all());
  for (int round = 0; round < 2; ++round) {
    for (uint64_t i = 0; i < 40; ++i) {
      const std::string key = IntK(rng() % 24);
      ASSERT_NO_FATAL_FAILURE(checker.upsert(key, value()));
    }
    pm::Allocator& alloc = checker.index().pool()->allocator();
    alloc.reclaim_now();
    const uint64_t before = alloc.allocated_bytes();
    ASSERT_NO_FATAL_FAILURE(checker.reopen());
    unreachable->push_back(before - checker.index().pool()->allocator().allocated_bytes());
    ASSERT_NO_FATAL_FAILURE(checker.check_all());
  }
  ASSERT_NO_FATAL_FAILURE(checker.remove_all(rng));
  ASSERT_NO_FATAL_FAILURE(checker.check_all());
}

// The lockstep run, then nothing leaked: what a reopen finds unreachable after values of
// every size were written, overwritten and removed is what it finds after the same index
// operations with values that all fit inline (an index's own DRAM-held blocks, such as the
// hybrid B+trees' reserve leaf, are in both; a value block lost on the way is not).
TEST_P(ValueStoreModelTest, AnySizeInLockstepAcrossReopens) {
  std::vector<uint64_t> with_blocks, inline_only;
  ASSERT_NO_FATAL_FAILURE(RunLockstep(GetParam(), dir_.file("pool"), false, &with_blocks));
  ASSERT_NO_FATAL_FAILURE(RunLockstep(GetParam(), dir_.file("inline"), true, &inline_only));
  EXPECT_EQ(with_blocks, inline_only) << "bytes allocated but unreachable after the workload";
}

// Over the limit: InvalidArgument naming it, nothing written.
TEST_P(ValueStoreModelTest, ValueOverTheLimitIsRefused) {
  Options o = LargeValues(16ull << 20);
  o.max_value_size = 3000;
  Result<std::unique_ptr<Index>> made = CreateIndex(GetParam(), dir_.file("pool"), o);
  ASSERT_TRUE(made.ok()) << made.status().ToString();
  Index& index = *made.value();
  const std::string key = IntK(7);
  const Status s = index.insert(key, std::string(3001, 'x'));
  EXPECT_TRUE(s.IsInvalidArgument()) << s.ToString();
  EXPECT_NE(s.ToString().find("3000"), std::string::npos) << s.ToString();
  EXPECT_TRUE(index.lookup(key, nullptr).IsNotFound());
  ASSERT_TRUE(index.insert(key, std::string(3000, 'y')).ok());
  EXPECT_TRUE(index.update(key, std::string(3001, 'z')).IsInvalidArgument());
  std::string got;
  ASSERT_TRUE(index.lookup(key, &got).ok());
  EXPECT_EQ(got, std::string(3000, 'y'));
}

INSTANTIATE_TEST_SUITE_P(Registry, ValueStoreModelTest, ::testing::ValuesIn(PooledIndexes()),
                         IndexParamName);

// A default pool has no value store: the index's own limits and format version 2.
TEST(ValueStoreTest, DefaultPoolIsUnchanged) {
  TempDir dir;
  Options o;
  o.pool_size = 8ull << 20;
  Result<std::unique_ptr<Index>> made = CreateIndex("rntree", dir.file("pool"), o);
  ASSERT_TRUE(made.ok()) << made.status().ToString();
  EXPECT_EQ(made.value()->traits().max_value_size, 8u);
  EXPECT_FALSE(made.value()->traits().any_value_size);
  EXPECT_TRUE(made.value()->insert(IntK(1), std::string(9, 'x')).IsInvalidArgument());
  ASSERT_TRUE(made.value()->close().ok());
  Result<PoolInfo> info = Pool::ReadInfo(dir.file("pool"));
  ASSERT_TRUE(info.ok());
  EXPECT_EQ(info.value().format_version, 2u);

  o.max_value_size = 1ull << 31;  // over the 1 GiB bound
  EXPECT_TRUE(CreateIndex("rntree", dir.file("big"), o).status().IsInvalidArgument());
}

// Many overwrites of 1 KiB values over a fixed key set: the pool's carved space stays within
// 1.5x of the live data (old values are freed and their space reused, not leaked).
TEST(ValueStoreTest, OverwrittenValuesAreReclaimed) {
  const uint64_t keys = 10000;  // not scaled: fewer keys would measure chunk granularity
  const uint64_t upserts = Scale(100000);
  for (const char* name : {"rntree", "cceh"}) {
    SCOPED_TRACE(name);
    TempDir dir;
    Options o = LargeValues(256ull << 20);
    o.poison_freed = false;
    Result<std::unique_ptr<Index>> made = CreateIndex(name, dir.file("pool"), o);
    ASSERT_TRUE(made.ok()) << made.status().ToString();
    Index& index = *made.value();
    for (uint64_t i = 0; i < upserts; ++i) {
      const uint64_t k = i % keys;
      ASSERT_TRUE(index.upsert(IntK(k), Value(i, 1024)).ok()) << i;
    }
    std::string got;
    ASSERT_TRUE(index.lookup(IntK((upserts - 1) % keys), &got).ok());
    EXPECT_EQ(got, Value(upserts - 1, 1024));
    ASSERT_TRUE(index.close().ok());
    Result<PoolInfo> info = Pool::ReadInfo(dir.file("pool"));
    ASSERT_TRUE(info.ok());
    const double live = static_cast<double>(keys * (8 + 1024));
    const double used = static_cast<double>(info.value().used_bytes);
    std::printf("%s: %llu upserts over %llu keys: PM used %.1f MiB, live %.1f MiB (%.2fx)\n",
                name, static_cast<unsigned long long>(upserts),
                static_cast<unsigned long long>(keys), used / 1048576, live / 1048576,
                used / live);
    EXPECT_LE(used, 1.5 * live);
  }
}

// Writers overwrite out-of-line values while readers read them: every value read is whole
// and one that was written (a freed block, poisoned, or a torn copy would show), and the
// epoch keeps each block alive while a reader copies it. Runs under TSan too.
TEST(ValueStoreTest, ConcurrentOverwritesAndReads) {
  for (const char* name : {"rntree", "cceh", "wort"}) {
    SCOPED_TRACE(name);
    TempDir dir;
    Result<std::unique_ptr<Index>> made =
        CreateIndex(name, dir.file("pool"), LargeValues(64ull << 20));
    ASSERT_TRUE(made.ok()) << made.status().ToString();
    Index& index = *made.value();
    const uint64_t rounds = Scale(4000);
    std::atomic<uint64_t> bad{0};
    std::vector<std::thread> threads;
    for (uint64_t t = 0; t < 4; ++t) {
      threads.emplace_back([&, t] {
        std::mt19937_64 rng(t + 1);
        static const size_t kSizes[] = {5, 100, 1024, 5000};
        std::string got;
        for (uint64_t i = 0; i < rounds; ++i) {
          const std::string key = IntK(rng() % 8);
          if (t < 2) {
            if (!index.upsert(key, Value((t << 32) | i, kSizes[rng() % 4])).ok()) ++bad;
            if (rng() % 8 == 0) index.remove(key).IgnoreError();  // NotFound: removed first
            continue;
          }
          if (!index.lookup(key, &got).ok()) continue;
          uint64_t tag = 0;
          if (got.size() >= 8) std::memcpy(&tag, got.data(), 8);
          if (got.size() != 5 && got != Value(tag, got.size())) ++bad;
        }
      });
    }
    for (std::thread& th : threads) th.join();
    EXPECT_EQ(bad.load(), 0u);
    EXPECT_TRUE(index.verify().ok());
  }
}

// The crash campaign on pools with out-of-line values, at every fence of a workload that
// writes, overwrites and removes 1 KiB values: the word form (B+trees, hash tables) and the
// string form (radix trees).
TEST(ValueStoreCrashTest, EveryFenceOfLargeOverwrites) {
  for (const char* name : {"rntree", "cceh", "wort"}) {
    SCOPED_TRACE(name);
    crashtest::CampaignOptions o;
    o.index = name;
    o.seed = TestSeed(5);
    o.ops = Scale(48);
    o.value_size = 1024;
    o.pool_size = 8ull << 20;
    o.images = 2;
    o.torn = true;
    o.continuation_every = 8;
    o.timeout_seconds = CampaignTimeout();
    const crashtest::CampaignResult r = crashtest::RunAdrCampaign(o);
    ASSERT_TRUE(r.error.ok()) << r.error.ToString();
    EXPECT_TRUE(r.failures.empty()) << crashtest::FormatResult(r);
    EXPECT_GT(r.images, 0u);
  }
}

// The reference published before the value's block is persisted: a crash between the two
// leaves a key whose value is not the one written, and the campaign sees it.
TEST(ValueStoreCrashTest, PublishBeforePersistMutantIsCaught) {
  PMINDEX_REQUIRE_MUTANTS();
  ASSERT_TRUE(pm::set_mutant("values.publish_before_value_persist"));
  pm::set_mutant("");  // the campaign selects it (and restores the selection after)
  crashtest::CampaignOptions o;
  o.index = "rntree";
  o.seed = 9;
  o.ops = 60;
  o.value_size = 1024;
  o.pool_size = 8ull << 20;
  o.mutant = "values.publish_before_value_persist";
  o.timeout_seconds = CampaignTimeout();
  const crashtest::CampaignResult r = crashtest::RunAdrCampaign(o);
  ASSERT_TRUE(r.error.ok()) << r.error.ToString();
  EXPECT_FALSE(r.failures.empty()) << "the mutant was not caught\n" << crashtest::FormatResult(r);
}

}  // namespace
}  // namespace pmindex::testing
