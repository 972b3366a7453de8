// Iterators of every ordered index beside writers: writer threads insert, update and remove
// keys while iterator threads walk forward and backward, bounded and not, with small
// batches. Each walk's keys must be strictly ordered in its direction and within its
// bounds, and each value must be one written for its key (a value carries its key). After
// the threads join, verify() and one full walk against the final contents. Runs in the
// TSan build too (label tsan); sizes scale down under sanitizers.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "bench/baselines/baselines.h"
#include "common/test_util.h"
#include "pmindex/index.h"
#include "pmindex/iterator.h"

namespace pmindex::testing {
namespace {

// Every working index and the baselines, less LMDB and RocksDB under sanitizers: they are
// libraries built without TSan, whose synchronisation it cannot see (it reports their
// copies out of the map as races).
std::vector<std::string> Names() {
  bench::RegisterBaselines();
  std::vector<std::string> names;
  for (std::string& n : WorkingIndexNames()) {
    if (Sanitized() && (n == "lmdb" || n == "rocksdb")) continue;
    names.push_back(std::move(n));
  }
  return names;
}

std::string IntK(uint64_t k) { return std::string(IntKey(k).view()); }
// A value names its key in its upper 40 bits.
uint64_t ValueFor(uint64_t key, uint64_t seq) { return (key << 24) | (seq & 0xFFFFFF); }

struct Shape {
  unsigned writers;
  unsigned readers;
  uint64_t keys;
  uint64_t writes_per_writer;
};

Shape StressShape() {
  if (Sanitized()) return {2, 2, 512, 1500};
  return {3, 3, 4096, 8000};
}

class IteratorStressTest : public ::testing::TestWithParam<std::string> {
 protected:
  TempDir dir_;
};

// One walk of an iterator: keys strictly ordered in the walk's direction, within the
// bounds, each value its key's.
void Walk(Index& index, std::mt19937_64& rng, uint64_t keys) {
  IteratorOptions o;
  o.batch_size = 1 + rng() % 32;
  uint64_t lo = 0, hi = UINT64_MAX;
  if (rng() % 2 == 0) {
    lo = rng() % keys;
    hi = lo + 1 + rng() % (keys / 4);
    o.lower_bound = IntK(lo);
    o.upper_bound = IntK(hi);
  }
  std::unique_ptr<Iterator> it = index.NewIterator(o);
  const bool forward = rng() % 2 == 0;
  bool first = true;
  uint64_t prev = 0;
  for (forward ? it->SeekToFirst() : it->SeekToLast(); it->Valid();
       forward ? it->Next() : it->Prev()) {
    const uint64_t k = IntKey::Decode(it->key());
    ASSERT_GE(k, lo) << "below the lower bound";
    ASSERT_LT(k, hi) << "at or above the upper bound";
    if (!first) {
      ASSERT_TRUE(forward ? k > prev : k < prev) << k << " after " << prev;
    }
    ASSERT_EQ(IntValue::Decode(it->value()) >> 24, k) << "a value of another key";
    first = false;
    prev = k;
  }
  ASSERT_TRUE(it->status().ok()) << it->status().ToString();
}

TEST_P(IteratorStressTest, WritersAndIteratorsAtOnce) {
  Options o;
  o.pool_size = 64ull << 20;
  auto made = CreateIndex(GetParam(), dir_.file("pool"), o);
  ASSERT_TRUE(made.ok()) << made.status().ToString();
  Index& index = *made.value();
  if (!index.traits().ordered) GTEST_SKIP() << "unordered: its iterator is one for_each";
  const Shape shape = StressShape();
  const uint64_t seed = TestSeed(3131);
  SCOPED_TRACE(SeedTrace(seed));
  std::atomic<unsigned> writers_left{shape.writers};
  std::vector<std::thread> threads;
  for (unsigned w = 0; w < shape.writers; ++w) {
    threads.emplace_back([&, w] {
      std::mt19937_64 rng(seed + w);
      for (uint64_t i = 0; i < shape.writes_per_writer; ++i) {
        const uint64_t k = rng() % shape.keys;
        const Status s = rng() % 3 == 0 ? index.remove(IntK(k))
                                        : index.upsert(IntK(k), IntValue(ValueFor(k, i)));
        ASSERT_TRUE(s.ok() || s.IsNotFound()) << s.ToString();
      }
      writers_left.fetch_sub(1);
    });
  }
  for (unsigned r = 0; r < shape.readers; ++r) {
    threads.emplace_back([&, r] {
      std::mt19937_64 rng(seed + 1000 + r);
      for (int n = 0; (n < 3 || writers_left.load() > 0) && !::testing::Test::HasFailure(); ++n) {
        ASSERT_NO_FATAL_FAILURE(Walk(index, rng, shape.keys));
      }
    });
  }
  for (std::thread& t : threads) t.join();
  ASSERT_FALSE(HasFailure());
  ASSERT_TRUE(index.verify().ok());
  // Quiet now: a full walk sees exactly what for_each sees.
  std::vector<std::string> walked, scanned;
  std::unique_ptr<Iterator> it = index.NewIterator(IteratorOptions());
  for (it->SeekToLast(); it->Valid(); it->Prev()) walked.emplace_back(it->key());
  std::reverse(walked.begin(), walked.end());
  ASSERT_TRUE(index
                  .for_each([&](std::string_view k, std::string_view) {
                    scanned.emplace_back(k);
                    return true;
                  })
                  .ok());
  EXPECT_EQ(walked, scanned);
}

INSTANTIATE_TEST_SUITE_P(Registry, IteratorStressTest, ::testing::ValuesIn(Names()),
                         pmindex::testing::IndexParamName);

}  // namespace
}  // namespace pmindex::testing
