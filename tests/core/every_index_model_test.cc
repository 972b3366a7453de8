// Every index in the registry of this program - the library's, volatile ones and test-only
// ones (tests/sample_index/) alike - against std::map in lockstep (ModelChecker): random
// writes, lookups and bounded scans on integer keys, and on byte-string keys where the index
// takes them, verify() and a full comparison after each batch, a reopen (recovery and
// allocator rebuild) in the middle. The family suites (tests/btree, tests/radix,
// tests/pftree) go deeper per design; this one is what a new index gets by registering.
#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

#include "common/model_checker.h"
#include "common/test_util.h"
#include "pmindex/index.h"

namespace pmindex::testing {
namespace {

std::string IntK(uint64_t k) { return std::string(IntKey(k).view()); }
std::string Val(uint64_t v) { return std::string(IntValue(v)); }

// A byte-string key of 1..24 bytes over a small alphabet, so prefixes are shared.
std::string ByteK(std::mt19937_64& rng, uint64_t key_space) {
  std::string k = "k/" + std::to_string(rng() % key_space);
  k.resize(2 + rng() % 22, static_cast<char>('a' + rng() % 3));
  return k;
}

class EveryIndexModelTest : public ::testing::TestWithParam<std::string> {
 protected:
  void Run(bool byte_keys) {
    ModelChecker checker(TestSeed(808));
    Options o;
    o.pool_size = 32ull << 20;
    ASSERT_NO_FATAL_FAILURE(checker.create(GetParam(), dir_.file("pool"), o));
    std::mt19937_64 rng(checker.seed());
    const uint64_t key_space = Scale(3000);
    const uint64_t ops = Scale(12000);
    const uint64_t batch = ops / 6;
    const OpMix mix{.insert = 4, .update = 1, .upsert = 1, .remove = 2, .lookup = 2,
                    .scan = checker.index().traits().ordered ? 1u : 0u, .scan_limit = 20};
    for (uint64_t i = 0; i < ops; ++i) {
      const std::string key = byte_keys ? ByteK(rng, key_space) : IntK(rng() % key_space);
      ASSERT_NO_FATAL_FAILURE(checker.random_op(rng, key, Val(rng()), mix));
      if ((i + 1) % batch != 0) continue;
      ASSERT_NO_FATAL_FAILURE(checker.check_all());
      if (i + 1 == ops / 2) {
        ASSERT_NO_FATAL_FAILURE(checker.reopen());
      }
    }
    ASSERT_NO_FATAL_FAILURE(checker.remove_all(rng));
    ASSERT_NO_FATAL_FAILURE(checker.check_all());
  }

  TempDir dir_;
};

TEST_P(EveryIndexModelTest, IntegerKeys) { Run(false); }

TEST_P(EveryIndexModelTest, ByteStringKeys) {
  if (!FindIndex(GetParam())->traits.byte_keys) GTEST_SKIP() << "takes 8-byte integer keys only";
  Run(true);
}

INSTANTIATE_TEST_SUITE_P(Registry, EveryIndexModelTest,
                         ::testing::ValuesIn(WorkingIndexNames()),
                         pmindex::testing::IndexParamName);

}  // namespace
}  // namespace pmindex::testing
