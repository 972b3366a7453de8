// PFtree against std::map in lockstep: integer keys (dense, sparse, clustered) and byte
// strings (random lengths, shared prefixes, keys that are prefixes of others), with verify()
// after every batch; limits; recovery through close/reopen and through a byte copy.
#include <gtest/gtest.h>

#include <filesystem>
#include <map>
#include <random>

#include "pftree/pftree_test_util.h"

namespace pmindex::testing {
namespace {

Options TestOptions() {
  Options o;
  o.pool_size = 256ull << 20;
  return o;
}

std::unique_ptr<Index> Create(const std::string& path) {
  auto r = CreateIndex("pftree", path, TestOptions());
  EXPECT_TRUE(r.ok()) << r.status().ToString();
  return r.ok() ? std::move(r).value() : nullptr;
}

// Inserts, updates and removes in balance (the tree grows, splits and merges); every tenth
// operation reads: a lookup or a short scan from the key.
constexpr OpMix kMix{.insert = 8, .update = 4, .upsert = 2, .remove = 4, .lookup = 1, .scan = 1,
                     .scan_limit = 5};

// Random operations in lockstep with the model.
void RunOps(ModelChecker& checker, KeySource& keys, uint64_t ops, uint64_t* version) {
  for (uint64_t i = 0; i < ops; ++i) {
    const std::string k = keys.Next();
    ASSERT_NO_FATAL_FAILURE(checker.random_op(keys.rng(), k, ValueFor(k, ++*version), kMix));
  }
}

class PFTreeModelTest : public ::testing::TestWithParam<Shape> {};

TEST_P(PFTreeModelTest, MatchesStdMap) {
  const Shape shape = GetParam();
  TempDir dir;
  ModelChecker checker(TestSeed(1000 + static_cast<int>(shape)));
  ASSERT_NO_FATAL_FAILURE(checker.create("pftree", dir.file("p.pool"), TestOptions()));
  const bool is_int = shape == Shape::kDense || shape == Shape::kSparse ||
                      shape == Shape::kClustered || shape == Shape::kOneSlot;
  // The key universe is not scaled down in sanitizer builds: fewer keys would not split.
  KeySource keys(shape, checker.seed(), is_int ? Scale(20000) : 6000);
  uint64_t version = 0;
  const uint64_t batches = 8, per_batch = Scale(12000);
  for (uint64_t b = 0; b < batches; ++b) {
    ASSERT_NO_FATAL_FAILURE(RunOps(checker, keys, per_batch, &version));
    ASSERT_NO_FATAL_FAILURE(checker.verify()) << "batch " << b;
    ASSERT_EQ(checker.index().stats().keys, checker.model().size());
  }
  ASSERT_NO_FATAL_FAILURE(checker.check_all());
  // The run built real structure: many leaf arrays and, where keys crowd one root slot
  // (uniform keys spread over all 256 and stay below the split size), inner nodes below it.
  uint64_t inner = 0, leaves = 0;
  for (auto& [name, count] : checker.index().stats().nodes) {
    (name == "leaf_arrays" ? leaves : inner) += count;
  }
  if (shape != Shape::kSparse && shape != Shape::kRandomBytes) {
    EXPECT_GT(inner, 1u);
  }
  EXPECT_GT(leaves, 8u);
  // Recovery through close + reopen rebuilds the DRAM metadata.
  ASSERT_NO_FATAL_FAILURE(checker.reopen());
  ASSERT_NO_FATAL_FAILURE(checker.check_all());
  // And it keeps working.
  ASSERT_NO_FATAL_FAILURE(RunOps(checker, keys, per_batch, &version));
  ASSERT_NO_FATAL_FAILURE(checker.check_all());
  // Remove everything: every leaf array is freed.
  ASSERT_NO_FATAL_FAILURE(checker.remove_all(keys.rng()));
  ASSERT_NO_FATAL_FAILURE(checker.check_all());
  for (auto& [name, count] : checker.index().stats().nodes)
    if (name == "leaf_arrays") {
      EXPECT_EQ(count, 0u);
    }
}

INSTANTIATE_TEST_SUITE_P(Shapes, PFTreeModelTest,
                         ::testing::Values(Shape::kDense, Shape::kSparse, Shape::kClustered,
                                           Shape::kRandomBytes, Shape::kSharedPrefix,
                                           Shape::kPrefixChains, Shape::kOneSlot),
                         [](const auto& info) { return std::string(ShapeName(info.param)); });

TEST(PFTreeTest, Limits) {
  TempDir dir;
  auto index = Create(dir.file("p.pool"));
  ASSERT_TRUE(index);
  EXPECT_EQ(index->traits().max_key_size, 511u);
  EXPECT_EQ(index->traits().max_value_size, 63u);
  std::string k511(511, 'k'), k512(512, 'k'), v63(63, 'v'), v64(64, 'v');
  EXPECT_TRUE(index->insert(k512, "x").IsInvalidArgument());
  EXPECT_TRUE(index->insert("a", v64).IsInvalidArgument());
  EXPECT_TRUE(index->upsert(k512, "x").IsInvalidArgument());
  EXPECT_TRUE(index->update("a", v64).IsInvalidArgument());
  EXPECT_TRUE(index->remove(k512).IsInvalidArgument());
  EXPECT_TRUE(index->insert("", "x").IsInvalidArgument());
  ASSERT_TRUE(index->insert(k511, v63).ok());
  ASSERT_TRUE(index->insert("a", "").ok());
  std::string got;
  ASSERT_TRUE(index->lookup(k511, &got).ok());
  EXPECT_EQ(got, v63);
  ASSERT_TRUE(index->lookup("a", &got).ok());
  EXPECT_EQ(got, "");
  EXPECT_FALSE(index->lookup(k512, &got).ok());
  // Many maximal keys sharing a long prefix force splits deep inside the prefix.
  std::map<std::string, std::string> model{{k511, v63}, {"a", ""}};
  for (int i = 0; i < 300; ++i) {
    std::string k = k511;
    k[400 + i % 100] = static_cast<char>('a' + i / 100);
    if (model.count(k)) continue;
    ASSERT_TRUE(index->insert(k, v63).ok());
    model[k] = v63;
  }
  ASSERT_TRUE(index->verify().ok());
  ASSERT_NO_FATAL_FAILURE(ExpectSameAsModel(*index, model));
}

TEST(PFTreeTest, RecoverFromByteCopyOfOpenPool) {
  // A copy of the bytes of an open pool is what a process crash leaves (eADR / process-crash
  // model): no clean close, stale lock words and DRAM pointers in the leaf headers.
  TempDir dir;
  ModelChecker checker(TestSeed(77));
  const uint64_t seed = checker.seed();
  ASSERT_NO_FATAL_FAILURE(checker.create("pftree", dir.file("p.pool"), TestOptions()));
  KeySource keys(Shape::kRandomBytes, seed, Scale(8000));
  uint64_t version = 0;
  for (int round = 0; round < 3; ++round) {
    ASSERT_NO_FATAL_FAILURE(RunOps(checker, keys, Scale(15000), &version));
    std::string copy = dir.file("copy" + std::to_string(round) + ".pool");
    std::filesystem::copy_file(dir.file("p.pool"), copy);
    // The copy is a working index of its own.
    ModelChecker reopened(seed);
    ASSERT_NO_FATAL_FAILURE(reopened.open("pftree", copy, TestOptions(), checker.model()));
    ASSERT_NO_FATAL_FAILURE(reopened.check_all());
    uint64_t v2 = version;
    KeySource more(Shape::kSparse, seed + round, 5000);
    ASSERT_NO_FATAL_FAILURE(RunOps(reopened, more, 3000, &v2));
    ASSERT_NO_FATAL_FAILURE(reopened.check_all());
    ASSERT_NO_FATAL_FAILURE(reopened.close());
    std::filesystem::remove(copy);
  }
}

// Scans over large leaf arrays whose entries were appended out of order: the cached key
// order is built, extended by later appends, and checked by verify() after every step;
// scans of every length from random starts (inside, between and across leaves) match the
// model, also after reopening (the cached order is DRAM only and rebuilt lazily). Values are
// 8 bytes (integer pairs: aligned, updated in place, and copied by the scans' word path) with
// the probability word_percent / 100, else 0..63 bytes; a mix makes batches that start with
// integer pairs take others.
void ScansFollowAppends(uint64_t seed, int word_percent) {
  TempDir dir;
  ModelChecker checker(seed);
  ASSERT_NO_FATAL_FAILURE(checker.create("pftree", dir.file("p.pool"), TestOptions()));
  std::mt19937_64 rng(checker.seed());
  uint64_t version = 0;
  // Keys 0..1199 share their first six bytes: a few large leaf arrays, filled in random order.
  auto key = [&] { return std::string(IntKey(rng() % 1200).view()); };
  auto check_scan = [&] {
    const std::string start = key();
    checker.scan(start, 1 + rng() % 500);
  };
  constexpr OpMix kAppendMix{.insert = 1, .upsert = 2, .remove = 1};
  for (int step = 0; step < 3000; ++step) {
    const std::string k = key();
    ++version;
    const std::string v = static_cast<int>(rng() % 100) < word_percent
                              ? std::string(IntKey(version).view())
                              : ValueFor(k, version);
    ASSERT_NO_FATAL_FAILURE(checker.random_op(rng, k, v, kAppendMix));
    if (step % 3 == 0) {
      ASSERT_NO_FATAL_FAILURE(check_scan());
    }
    if (step % 200 == 0) {
      ASSERT_NO_FATAL_FAILURE(checker.verify()) << "step " << step;
    }
  }
  ASSERT_NO_FATAL_FAILURE(checker.check_all());
  ASSERT_NO_FATAL_FAILURE(checker.reopen());
  for (int i = 0; i < 200; ++i) ASSERT_NO_FATAL_FAILURE(check_scan());
  ASSERT_NO_FATAL_FAILURE(checker.verify());
}

TEST(PFTreeTest, ScansFollowAppendsIntoLargeLeaves) {
  ASSERT_NO_FATAL_FAILURE(ScansFollowAppends(TestSeed(91), /*word_percent=*/0));
}

TEST(PFTreeTest, ScansFollowAppendsOfIntegerPairs) {
  ASSERT_NO_FATAL_FAILURE(ScansFollowAppends(TestSeed(92), /*word_percent=*/100));
}

TEST(PFTreeTest, ScansFollowAppendsOfMixedPairs) {
  ASSERT_NO_FATAL_FAILURE(ScansFollowAppends(TestSeed(93), /*word_percent=*/90));
}

}  // namespace
}  // namespace pmindex::testing
