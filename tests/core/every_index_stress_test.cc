// Every index in the registry under more threads than the machine has cores (16, 8 under
// sanitizers), against a model of acknowledged operations. Thread t owns the keys k with
// k % threads == t: only it writes them, so its own model is exact and each of its answers is
// checked at once (insert's AlreadyExists, update's and remove's NotFound, every lookup).
// It also looks up the other threads' keys and, where the index is ordered, scans across
// them: every value seen there must be one written for that key (a value carries its key),
// and a scan's keys must rise. After the threads join: verify(), every pair against the union
// of the models, and for a persistent index a reopen (recovery and allocator rebuild)
// compared again. What a new index gets by registering, as every_index_model_test is.
#include <gtest/gtest.h>

#include <atomic>
#include <map>
#include <random>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "common/model_checker.h"
#include "common/test_util.h"
#include "pmindex/index.h"

namespace pmindex::testing {
namespace {

std::string IntK(uint64_t k) { return std::string(IntKey(k).view()); }
// A value names its key in its upper 40 bits and a per-thread sequence in the lower 24.
uint64_t ValueFor(uint64_t key, uint64_t seq) { return (key << 24) | (seq & 0xFFFFFF); }
uint64_t KeyOfValue(std::string_view v) { return IntValue::Decode(v) >> 24; }

struct StressShape {
  unsigned threads;
  uint64_t keys;            // key ids 0..keys-1, spread over the threads
  uint64_t ops_per_thread;
};

StressShape Shape() {
  if (Sanitized()) return {8, 2048, 1500};
  return {16, 8192, 20000};
}

// One thread's work: random writes on its own keys (checked against its model at once),
// reads and scans of everyone's. Returns through *model the pairs it left.
class Worker {
 public:
  Worker(Index& index, const StressShape& shape, unsigned t, uint64_t seed)
      : index_(index), shape_(shape), t_(t), rng_(seed) {}

  void Run() {
    for (uint64_t i = 0; i < shape_.ops_per_thread && !::testing::Test::HasFailure(); ++i) {
      const unsigned dice = static_cast<unsigned>(rng_() % 100);
      if (dice < 80) {
        Write(dice, OwnKey(), i);
      } else if (dice < 92) {
        ReadOther();
      } else if (index_.traits().ordered) {
        ScanOthers();
      } else {
        ReadOther();
      }
    }
  }

  const std::unordered_map<uint64_t, uint64_t>& model() const { return model_; }

 private:
  uint64_t OwnKey() {
    const uint64_t per_thread = shape_.keys / shape_.threads;
    return (rng_() % per_thread) * shape_.threads + t_;
  }

  void Write(unsigned dice, uint64_t key, uint64_t seq) {
    const std::string k = IntK(key);
    const uint64_t v = ValueFor(key, seq);
    const auto it = model_.find(key);
    const bool present = it != model_.end();
    std::string got;
    if (dice < 25) {
      const Status s = index_.insert(k, IntValue(v));
      ASSERT_TRUE(present ? s.IsAlreadyExists() : s.ok()) << "insert " << key << ": " << s.ToString();
      if (!present) model_[key] = v;
    } else if (dice < 40) {
      const Status s = index_.update(k, IntValue(v));
      ASSERT_TRUE(present ? s.ok() : s.IsNotFound()) << "update " << key << ": " << s.ToString();
      if (present) it->second = v;
    } else if (dice < 50) {
      const Status s = index_.upsert(k, IntValue(v));
      ASSERT_TRUE(s.ok()) << "upsert " << key << ": " << s.ToString();
      model_[key] = v;
    } else if (dice < 65) {
      const Status s = index_.remove(k);
      ASSERT_TRUE(present ? s.ok() : s.IsNotFound()) << "remove " << key << ": " << s.ToString();
      if (present) model_.erase(it);
    } else {
      const Status s = index_.lookup(k, &got);
      ASSERT_TRUE(present ? s.ok() : s.IsNotFound()) << "lookup " << key << ": " << s.ToString();
      if (present) {
        ASSERT_EQ(IntValue::Decode(got), it->second) << "lookup " << key;
      }
    }
  }

  void ReadOther() {
    const uint64_t key = rng_() % shape_.keys;
    std::string got;
    const Status s = index_.lookup(IntK(key), &got);
    ASSERT_TRUE(s.ok() || s.IsNotFound()) << "lookup " << key << ": " << s.ToString();
    if (s.ok()) {
      ASSERT_EQ(KeyOfValue(got), key) << "lookup " << key << " returned another key's value";
    }
  }

  void ScanOthers() {
    const uint64_t from = rng_() % shape_.keys;
    bool first = true;
    uint64_t prev = 0;
    index_.scan(IntK(from), 16, [&](std::string_view k, std::string_view v) {
      const uint64_t key = IntKey::Decode(k);
      EXPECT_GE(key, from) << "scan from " << from;
      EXPECT_TRUE(first || key > prev) << "scan from " << from << ": " << key << " after " << prev;
      EXPECT_EQ(KeyOfValue(v), key) << "scan from " << from << ": a value of another key";
      first = false;
      prev = key;
      return !::testing::Test::HasFailure();
    });
  }

  Index& index_;
  const StressShape shape_;
  const unsigned t_;
  std::mt19937_64 rng_;
  std::unordered_map<uint64_t, uint64_t> model_;
};

class EveryIndexStressTest : public ::testing::TestWithParam<std::string> {
 protected:
  TempDir dir_;
};

TEST_P(EveryIndexStressTest, ThreadsAgainstAcknowledgedOperations) {
  const StressShape shape = Shape();
  ModelChecker checker(TestSeed(1616));
  Options o;
  o.pool_size = 64ull << 20;
  const std::string path = dir_.file("pool");
  ASSERT_NO_FATAL_FAILURE(checker.create(GetParam(), path, o));
  std::vector<std::unique_ptr<Worker>> workers;
  for (unsigned t = 0; t < shape.threads; ++t)
    workers.push_back(std::make_unique<Worker>(checker.index(), shape, t, checker.seed() + t));
  std::vector<std::thread> threads;
  for (auto& w : workers) threads.emplace_back([&w] { w->Run(); });
  for (std::thread& th : threads) th.join();
  ASSERT_FALSE(HasFailure());

  ModelChecker::Model model;
  for (const auto& w : workers)
    for (const auto& [key, value] : w->model()) model[IntK(key)] = std::string(IntValue(value));
  const Status v = checker.index().verify();
  ASSERT_TRUE(v.ok()) << v.ToString();
  ASSERT_NO_FATAL_FAILURE(ExpectSameAsModel(checker.index(), model));
  if (!checker.index().traits().persistent) return;
  ASSERT_NO_FATAL_FAILURE(checker.close());
  ModelChecker reopened(checker.seed());
  ASSERT_NO_FATAL_FAILURE(reopened.open(GetParam(), path, o, std::move(model)));
  ASSERT_NO_FATAL_FAILURE(reopened.check_all());
}

INSTANTIATE_TEST_SUITE_P(Registry, EveryIndexStressTest,
                         ::testing::ValuesIn(WorkingIndexNames()),
                         pmindex::testing::IndexParamName);

}  // namespace
}  // namespace pmindex::testing
