// FAST&FAIR under concurrency (more threads than cores): the B+tree checks of
// btree_concurrent_checks.h, splits of inner nodes racing deletes of the keys that decide
// where the split moved them (the authors' FAIR split met a concurrent delete and built a
// wrong tree), and lock-free readers of nodes that writers shift under them. Run under
// -DPMINDEX_SANITIZE=thread too (label tsan).
#include <gtest/gtest.h>

#include <atomic>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "btree/btree_concurrent_checks.h"
#include "btree/btree_test_util.h"
#include "common/test_util.h"

namespace pmindex::testing {
namespace {

class FastFairConcurrentTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto idx = CreateIndex("fastfair", dir_.file("pool"), BTreeOptions());
    ASSERT_TRUE(idx.ok()) << idx.status().ToString();
    index_ = std::move(idx.value());
  }
  TempDir dir_;
  std::unique_ptr<Index> index_;
};

TEST_F(FastFairConcurrentTest, DisjointRanges) { CheckDisjointRanges(*index_); }

TEST_F(FastFairConcurrentTest, OverlappingKeys) { CheckOverlappingKeys(*index_); }

// Writers append ascending keys (every leaf splits at the right end, and inner nodes split
// in turn) while deleters remove and re-insert the keys just behind the frontier: the lowest
// keys of the nodes a split has just made, before or after the parent knows them. Readers
// look up keys that never change meanwhile. The tree must end as the union of the models.
TEST_F(FastFairConcurrentTest, SplitsMeetDeletesOfTheirFirstKeys) {
  constexpr int kWriters = 2, kDeleters = 3, kReaders = 2;
  const uint64_t per_writer = Scale(30000);
  std::atomic<uint64_t> frontier[kWriters] = {};
  std::vector<std::map<uint64_t, uint64_t>> models(kWriters + kDeleters);
  std::atomic<bool> done{false};
  std::atomic<int> failures{0};
  StartBarrier start(kWriters + kDeleters + kReaders);
  std::vector<std::thread> threads;
  // Key of writer w's i-th insert; deleter d owns the keys with low bits 1 + d.
  auto writer_key = [](int w, uint64_t i) { return (i << 4) | (uint64_t(w) << 3); };
  for (int w = 0; w < kWriters; ++w) {
    threads.emplace_back([&, w] {
      start.Arrive();
      for (uint64_t i = 0; i < per_writer; ++i) {
        const uint64_t k = writer_key(w, i);
        if (!index_->insert(IntKey(k), IntValue(k)).ok()) failures.fetch_add(1);
        models[w][k] = k;
        frontier[w].store(i + 1, std::memory_order_release);  // keys [0, i] are in
      }
    });
  }
  for (int d = 0; d < kDeleters; ++d) {
    threads.emplace_back([&, d] {
      std::mt19937_64 rng(77 + d);
      auto& model = models[kWriters + d];
      start.Arrive();
      while (!done.load(std::memory_order_acquire)) {
        const int w = static_cast<int>(rng() % kWriters);
        const uint64_t f = frontier[w].load(std::memory_order_acquire);
        const uint64_t i = f > 40 ? f - rng() % 40 : f;
        const uint64_t k = writer_key(w, i) | uint64_t(1 + d);
        const bool present = model.count(k) != 0;
        Status s = present ? index_->remove(IntKey(k)) : index_->insert(IntKey(k), IntValue(k));
        if (!s.ok()) failures.fetch_add(1);
        if (present) {
          model.erase(k);
        } else {
          model[k] = k;
        }
      }
    });
  }
  for (int r = 0; r < kReaders; ++r) {
    threads.emplace_back([&, r] {
      std::mt19937_64 rng(99 + r);
      std::string got;
      start.Arrive();
      while (!done.load(std::memory_order_acquire)) {
        const int w = static_cast<int>(rng() % kWriters);
        const uint64_t f = frontier[w].load(std::memory_order_acquire);
        if (f == 0) continue;
        const uint64_t k = writer_key(w, rng() % f);
        if (!index_->lookup(IntKey(k), &got).ok() || IntValue::Decode(got) != k) {
          failures.fetch_add(1);
        }
      }
    });
  }
  for (int w = 0; w < kWriters; ++w) threads[w].join();
  done.store(true, std::memory_order_release);
  for (size_t t = kWriters; t < threads.size(); ++t) threads[t].join();
  EXPECT_EQ(failures.load(), 0);
  std::map<uint64_t, uint64_t> all;
  for (const auto& m : models) all.insert(m.begin(), m.end());
  ASSERT_NO_FATAL_FAILURE(ExpectSameContents(*index_, all));
  EXPECT_GE(index_->stats().nodes[2].second, 3u) << "the test should split inner nodes";
}

// Readers of one hot node while writers insert and remove in front of what they read: every
// shift passes under them. Keys that are never touched must always be found with their own
// value (the authors' reader detected the shift's duplicate by equal pointers, which equal
// values of different keys defeat: here every value is 0 or 1).
TEST_F(FastFairConcurrentTest, LockFreeReadersAcrossShifts) {
  for (uint64_t k = 0; k < 26; k += 2) {
    ASSERT_TRUE(index_->insert(IntKey(k), IntValue(k % 4 == 0)).ok());
  }
  std::atomic<bool> done{false};
  std::atomic<int> failures{0};
  StartBarrier start(4);
  std::vector<std::thread> threads;
  for (int t = 0; t < 2; ++t) {
    threads.emplace_back([&, t] {
      start.Arrive();
      for (uint64_t i = 0; i < Scale(40000); ++i) {
        const uint64_t k = 2 * ((i * 7 + t * 3) % 13) + 1;  // odd keys: shifts at every slot
        Status s = index_->insert(IntKey(k), IntValue(1));
        if (s.ok()) s = index_->remove(IntKey(k));
        if (!s.ok() && !s.IsAlreadyExists() && !s.IsNotFound()) failures.fetch_add(1);
      }
    });
  }
  for (int t = 0; t < 2; ++t) {
    threads.emplace_back([&] {
      std::string got;
      start.Arrive();
      while (!done.load(std::memory_order_acquire)) {
        for (uint64_t k = 0; k < 26; k += 2) {
          if (!index_->lookup(IntKey(k), &got).ok() || IntValue::Decode(got) != (k % 4 == 0)) {
            failures.fetch_add(1);
          }
        }
        uint64_t even = 0;
        index_->scan(IntKey(0), 100, [&](std::string_view k, std::string_view) {
          even += IntKey::Decode(k) % 2 == 0;
          return true;
        });
        if (even != 13) failures.fetch_add(1);
      }
    });
  }
  threads[0].join();
  threads[1].join();
  done.store(true, std::memory_order_release);
  threads[2].join();
  threads[3].join();
  EXPECT_EQ(failures.load(), 0);
  EXPECT_TRUE(index_->verify().ok()) << index_->verify().ToString();
}

}  // namespace
}  // namespace pmindex::testing
