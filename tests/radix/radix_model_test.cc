// Model tests for the radix trees (wort, woart, art): random operations against std::map in
// lockstep (ModelChecker), verify() and full/partial scans after every batch, and for the
// persistent trees a close/reopen (recovery + allocator rebuild) in the middle of the run.
#include <gtest/gtest.h>

#include <algorithm>
#include <iterator>
#include <map>
#include <random>
#include <string>
#include <tuple>
#include <vector>

#include "common/model_checker.h"
#include "pmindex/index.h"
#include "radix/radix_test_util.h"

namespace pmindex::testing {
namespace {

class RadixModelTest : public ::testing::TestWithParam<std::tuple<std::string, KeyShape>> {};

// Inserts dominate so the tree grows; removes and updates churn it.
constexpr OpMix kMix{.insert = 40, .update = 10, .upsert = 15, .remove = 20, .lookup = 15};

// A value of 8 random bytes (updated in place) or of 0..39 bytes (a new leaf).
std::string RandomValue(std::mt19937_64& rng) {
  std::string value;
  if (rng() % 2) {
    value.assign(8, '\0');
    for (char& c : value) c = static_cast<char>(rng());
  } else {
    value.assign(rng() % 40, 'v');
    if (!value.empty()) value[0] = static_cast<char>(rng());
  }
  return value;
}

// Bounded scan starts: keys of the shape, a third of them cut short by one byte.
std::vector<std::string> ScanStarts(std::mt19937_64& rng, KeyGen& gen) {
  std::vector<std::string> starts;
  for (int s = 0; s < 20; ++s) {
    std::string start = gen.Next();
    if (rng() % 3 == 0) start.pop_back();
    starts.push_back(start);
  }
  return starts;
}

TEST_P(RadixModelTest, LockstepWithStdMap) {
  const std::string name = std::get<0>(GetParam());
  const KeyShape shape = std::get<1>(GetParam());
  ASSERT_NE(FindIndex(name), nullptr) << name << " is not registered";
  TempDir dir;
  ModelChecker checker(TestSeed(0x5eed0000 + static_cast<uint64_t>(shape)));
  std::mt19937_64 rng(checker.seed());
  const uint64_t universe = shape == KeyShape::kDense ? Scale(6000) : Scale(4000);
  KeyGen gen(shape, checker.seed(), universe);
  ASSERT_NO_FATAL_FAILURE(checker.create(name, dir.file("pool"), SmallPoolOptions()));
  const uint64_t batch = Scale(3000);
  for (int b = 0; b < 6; ++b) {
    for (uint64_t i = 0; i < batch; ++i) {
      const std::string key = gen.Next();
      ASSERT_NO_FATAL_FAILURE(checker.random_op(rng, key, RandomValue(rng), kMix));
    }
    ASSERT_NO_FATAL_FAILURE(checker.check_all(ScanStarts(rng, gen), &rng));
    if (b == 2) {  // recovery and allocator rebuild in the middle of the run
      ASSERT_NO_FATAL_FAILURE(checker.reopen());
      ASSERT_NO_FATAL_FAILURE(checker.check_all(ScanStarts(rng, gen), &rng));
    }
  }
  // Drain to empty: every remove succeeds and the tree ends empty and valid.
  ASSERT_NO_FATAL_FAILURE(checker.remove_all(rng));
  ASSERT_NO_FATAL_FAILURE(checker.check_all(ScanStarts(rng, gen), &rng));
  EXPECT_EQ(checker.index().stats().keys, 0u);
  ASSERT_NO_FATAL_FAILURE(checker.reopen());
  ASSERT_NO_FATAL_FAILURE(checker.check_all(ScanStarts(rng, gen), &rng));
}

std::string ParamName(const ::testing::TestParamInfo<RadixModelTest::ParamType>& info) {
  return std::get<0>(info.param) + "_" + KeyShapeName(std::get<1>(info.param));
}

INSTANTIATE_TEST_SUITE_P(
    Radix, RadixModelTest,
    ::testing::Combine(::testing::Values("wort", "woart", "art", "part", "roart"),
                       ::testing::Values(KeyShape::kDense, KeyShape::kSparse,
                                         KeyShape::kClustered, KeyShape::kRandomBytes,
                                         KeyShape::kSharedPrefix, KeyShape::kPrefixChains)),
    ParamName);

class RadixLimitsTest : public ::testing::TestWithParam<std::string> {};

TEST_P(RadixLimitsTest, KeyAndValueLimits) {
  TempDir dir;
  auto idx = CreateIndex(GetParam(), dir.file("pool"), SmallPoolOptions());
  ASSERT_TRUE(idx.ok()) << idx.status().ToString();
  Index& index = *idx.value();
  EXPECT_EQ(index.traits().max_key_size, 1024u);
  EXPECT_EQ(index.traits().max_value_size, 255u);
  EXPECT_TRUE(index.insert("", "v").IsInvalidArgument());
  EXPECT_TRUE(index.insert(std::string(1025, 'k'), "v").IsInvalidArgument());
  EXPECT_TRUE(index.insert("k", std::string(256, 'v')).IsInvalidArgument());
  EXPECT_TRUE(index.upsert(std::string(1025, 'k'), "v").IsInvalidArgument());
  const std::string big_key(1024, 'k'), big_value(255, 'v');
  ASSERT_TRUE(index.insert(big_key, big_value).ok());
  ASSERT_TRUE(index.insert(big_key.substr(0, 1023), "short").ok());
  ASSERT_TRUE(index.insert(IntKey(7), IntValue(42)).ok());
  ASSERT_TRUE(index.insert(std::string("\0", 1), "zero").ok());
  std::string v;
  ASSERT_TRUE(index.lookup(big_key, &v).ok());
  EXPECT_EQ(v, big_value);
  ASSERT_TRUE(index.lookup(IntKey(7), &v).ok());
  EXPECT_EQ(IntValue::Decode(v), 42u);
  ASSERT_TRUE(index.update(IntKey(7), IntValue(43)).ok());
  ASSERT_TRUE(index.lookup(IntKey(7), &v).ok());
  EXPECT_EQ(IntValue::Decode(v), 43u);
  ASSERT_TRUE(index.lookup(std::string("\0", 1), &v).ok());
  EXPECT_EQ(v, "zero");
  EXPECT_TRUE(index.verify().ok());
}

INSTANTIATE_TEST_SUITE_P(Radix, RadixLimitsTest, ::testing::Values("wort", "woart", "art", "part", "roart"));

// Scans are walked in chunks of kScanChunk (256) leaves, each restarting after the last key
// of the one before: counts around the chunk size (and the old batch size, 64), from the
// first key and from random keys, and a callback that stops early, return exactly what the
// model says, in order.
class RadixScanBatchTest : public ::testing::TestWithParam<std::string> {};

TEST_P(RadixScanBatchTest, LimitsAndEarlyStopsAroundTheBatch) {
  const uint64_t seed = 11;
  SCOPED_TRACE("seed " + std::to_string(seed));
  TempDir dir;
  auto idx = CreateIndex(GetParam(), dir.file("pool"), SmallPoolOptions());
  ASSERT_TRUE(idx.ok()) << idx.status().ToString();
  Index& index = *idx.value();
  std::map<std::string, std::string> model;
  std::mt19937_64 rng(seed);
  for (int i = 0; i < 700; ++i) {
    const uint64_t k = rng() % 100000;
    if (index.insert(IntKey(k), IntValue(k)).ok()) model[std::string(IntKey(k).view())] = "";
  }
  for (size_t limit : {size_t{1}, size_t{63}, size_t{64}, size_t{65}, size_t{255}, size_t{256},
                       size_t{257}, size_t{512}, size_t{513}, size_t{1000}}) {
    for (int s = 0; s < 8; ++s) {
      const std::string start = s == 0 ? std::string() : std::string(IntKey(rng() % 100000).view());
      auto it = model.lower_bound(start);
      size_t got = 0;
      bool in_order = true;
      const size_t n = index.scan(start, limit, [&](std::string_view k, std::string_view) {
        if (it == model.end() || k != it->first) in_order = false;
        if (it != model.end()) ++it;
        ++got;
        return true;
      });
      const size_t there = static_cast<size_t>(std::distance(model.lower_bound(start), model.end()));
      EXPECT_TRUE(in_order) << "limit " << limit;
      EXPECT_EQ(n, std::min(limit, there)) << "limit " << limit;
      EXPECT_EQ(got, n);
      // A callback that says stop at entry `stop` ends the scan there.
      const size_t stop = 1 + rng() % 130;
      size_t calls = 0;
      const size_t m = index.scan(start, limit, [&](std::string_view, std::string_view) {
        return ++calls < stop;
      });
      EXPECT_EQ(m, std::min({stop, limit, there})) << "limit " << limit << " stop " << stop;
      EXPECT_EQ(calls, m);
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Radix, RadixScanBatchTest, ::testing::Values("wort", "woart", "art", "part", "roart"));

// Scans that start inside wide nodes: a node of 30 children (an ART or WOART Node48, whose
// index the walk reads 16 bytes at a time), one of 200 (a Node256), each with an end key,
// and a scan from every byte value at that level (before, at and after each child, and past
// the last, byte 255), with counts below, at and above a node's children, against the model.
class RadixWideNodeScanTest : public ::testing::TestWithParam<std::string> {};

TEST_P(RadixWideNodeScanTest, EveryStartByteOfWideNodes) {
  const uint64_t seed = 0x5ca1;
  SCOPED_TRACE("seed " + std::to_string(seed));
  TempDir dir;
  ModelChecker checker(seed);
  std::mt19937_64 rng(seed);
  ASSERT_NO_FATAL_FAILURE(checker.create(GetParam(), dir.file("pool"), SmallPoolOptions()));
  for (const auto& [prefix, children] : {std::pair<std::string, int>{"pq", 30}, {"pr", 200}}) {
    std::vector<int> bytes(256);
    for (int b = 0; b < 256; ++b) bytes[b] = b;
    std::shuffle(bytes.begin(), bytes.end(), rng);
    bytes.resize(children);
    if (children == 30) bytes[0] = 255;  // a child at the last byte
    ASSERT_NO_FATAL_FAILURE(checker.insert(prefix, "end"));
    for (int b : bytes) {
      const std::string key = prefix + static_cast<char>(b) + "k";
      ASSERT_NO_FATAL_FAILURE(checker.insert(key, std::string(IntValue(static_cast<uint64_t>(b)))));
      if (b % 3 == 0) {  // some children are nodes (two keys below the byte)
        ASSERT_NO_FATAL_FAILURE(checker.insert(key + "z", "v"));
      }
    }
  }
  ASSERT_NO_FATAL_FAILURE(checker.verify());
  for (const std::string prefix : {"pq", "pr"}) {
    for (int b = 0; b < 256; ++b) {
      for (const std::string& start :
           {prefix + static_cast<char>(b), prefix + static_cast<char>(b) + "k",
            prefix + static_cast<char>(b) + "l"}) {
        for (size_t limit : {size_t{1}, size_t{2}, size_t{17}, size_t{100}, size_t{300}}) {
          SCOPED_TRACE("byte " + std::to_string(b) + " limit " + std::to_string(limit));
          ASSERT_NO_FATAL_FAILURE(
              ExpectScanMatchesModel(checker.index(), checker.model(), start, limit));
        }
      }
    }
    ASSERT_NO_FATAL_FAILURE(
        ExpectScanMatchesModel(checker.index(), checker.model(), prefix, SIZE_MAX));
  }
}

INSTANTIATE_TEST_SUITE_P(Radix, RadixWideNodeScanTest, ::testing::Values("wort", "woart", "art", "part", "roart"));

// Scans whose descent is deeper than the levels a scan defers (kScanPath, 64): a chain of
// nested keys c, cc, ccc, ... (each the end key of a node), each level with a right child
// (cd, ccd, ...) and a left one (cb, ccb, ...), so every level of a 150-level path pushes,
// from starts at every depth, against the model.
TEST_P(RadixWideNodeScanTest, DeepPathsPushAsTheyGo) {
  const uint64_t seed = 0xdee9;
  SCOPED_TRACE("seed " + std::to_string(seed));
  TempDir dir;
  ModelChecker checker(seed);
  ASSERT_NO_FATAL_FAILURE(checker.create(GetParam(), dir.file("pool"), SmallPoolOptions()));
  constexpr int kDepth = 150;
  for (int i = 1; i <= kDepth; ++i) {
    const std::string chain(static_cast<size_t>(i), 'c');
    ASSERT_NO_FATAL_FAILURE(checker.insert(chain, "e" + std::to_string(i)));
    ASSERT_NO_FATAL_FAILURE(checker.insert(chain + "d", "r" + std::to_string(i)));
    ASSERT_NO_FATAL_FAILURE(checker.insert(chain + "b", "l" + std::to_string(i)));
  }
  ASSERT_NO_FATAL_FAILURE(checker.verify());
  for (int i = 0; i <= kDepth + 1; i += 1) {
    const std::string chain(static_cast<size_t>(i), 'c');
    for (const std::string& start : {chain, chain + "c", chain + "ca", chain + "e"}) {
      for (size_t limit : {size_t{1}, size_t{3}, size_t{64}, size_t{100}, size_t{257}}) {
        SCOPED_TRACE("depth " + std::to_string(i) + " limit " + std::to_string(limit));
        ASSERT_NO_FATAL_FAILURE(
            ExpectScanMatchesModel(checker.index(), checker.model(), start, limit));
      }
    }
  }
}

}  // namespace
}  // namespace pmindex::testing
