// Concurrency of the natively concurrent trees (rntree, rntree-ds, fptree) and the
// lock-guarded ones, with more threads than cores: disjoint key ranges checked against a
// per-thread model, and overlapping keys checked for per-key insert/remove balance, value
// provenance and sorted scans. Run under -DPMINDEX_SANITIZE=thread too.
#include <gtest/gtest.h>

#include <atomic>
#include <map>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "btree/btree_test_util.h"
#include "common/test_util.h"

namespace pmindex::testing {
namespace {

constexpr int kThreads = 8;  // oversubscribed on purpose

class BTreeConcurrentTest : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    auto idx = CreateIndex(GetParam(), dir_.file("pool"), BTreeOptions());
    ASSERT_TRUE(idx.ok()) << idx.status().ToString();
    index_ = std::move(idx.value());
  }
  TempDir dir_;
  std::unique_ptr<Index> index_;
};

TEST_P(BTreeConcurrentTest, DisjointRanges) {
  const uint64_t per_thread = Scale(20000);
  std::vector<std::map<uint64_t, uint64_t>> models(kThreads);
  std::atomic<int> failures{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      std::mt19937_64 rng(1000 + t);
      auto& model = models[t];
      std::string got;
      for (uint64_t i = 0; i < per_thread * 3; ++i) {
        // Interleaved ranges: thread t owns keys with k % kThreads == t.
        const uint64_t k = (rng() % per_thread) * kThreads + t;
        const uint64_t v = rng();
        const bool present = model.count(k) > 0;
        bool ok = true;
        switch (rng() % 6) {
          case 0:
            ok = index_->update(IntKey(k), IntValue(v)).ok() == present;
            if (present) model[k] = v;
            break;
          case 1:
            ok = index_->remove(IntKey(k)).ok() == present;
            model.erase(k);
            break;
          case 2:
            ok = index_->lookup(IntKey(k), &got).ok() == present &&
                 (!present || IntValue::Decode(got) == model[k]);
            break;
          case 3:
            ok = index_->upsert(IntKey(k), IntValue(v)).ok();
            model[k] = v;
            break;
          default:
            ok = index_->insert(IntKey(k), IntValue(v)).ok() == !present;
            if (!present) model[k] = v;
        }
        if (!ok) failures.fetch_add(1);
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(failures.load(), 0);
  Status v = index_->verify();
  ASSERT_TRUE(v.ok()) << v.ToString();
  std::map<uint64_t, uint64_t> all;
  for (auto& m : models) all.insert(m.begin(), m.end());
  EXPECT_EQ(Contents(*index_), all);
}

TEST_P(BTreeConcurrentTest, OverlappingKeys) {
  const uint64_t key_space = 4000;  // small: many conflicts, many splits and unlinks
  const uint64_t ops = Scale(40000);
  std::vector<std::atomic<int64_t>> balance(key_space);  // inserts - removes that succeeded
  std::atomic<int> failures{0};
  std::atomic<bool> stop{false};
  std::vector<std::thread> threads;
  // Values carry their key, so a lookup can tell a torn or misplaced value.
  auto value_for = [](uint64_t k, uint64_t salt) { return (k << 20) | (salt & 0xFFFFF); };
  for (int t = 0; t < kThreads - 1; ++t) {
    threads.emplace_back([&, t] {
      std::mt19937_64 rng(77 + t);
      std::string got;
      for (uint64_t i = 0; i < ops; ++i) {
        // Skewed: half the operations hit 1/16 of the keys.
        const uint64_t k = rng() % 2 ? rng() % (key_space / 16) : rng() % key_space;
        switch (rng() % 5) {
          case 0:
            if (index_->insert(IntKey(k), IntValue(value_for(k, rng()))).ok()) balance[k]++;
            break;
          case 1:
            if (index_->remove(IntKey(k)).ok()) balance[k]--;
            break;
          case 2:
            (void)index_->update(IntKey(k), IntValue(value_for(k, rng())));
            break;
          default:
            if (index_->lookup(IntKey(k), &got).ok() && IntValue::Decode(got) >> 20 != k) {
              failures.fetch_add(1);
            }
        }
      }
    });
  }
  threads.emplace_back([&] {  // a scanner: strictly increasing keys, values match keys
    std::mt19937_64 rng(5);
    while (!stop.load()) {
      uint64_t last = 0;
      bool first = true;
      index_->scan(IntKey(rng() % key_space), 200, [&](std::string_view k, std::string_view v) {
        const uint64_t key = IntKey::Decode(k);
        if ((!first && key <= last) || IntValue::Decode(v) >> 20 != key) failures.fetch_add(1);
        first = false;
        last = key;
        return true;
      });
    }
  });
  for (int t = 0; t < kThreads - 1; ++t) threads[t].join();
  stop.store(true);
  threads.back().join();
  EXPECT_EQ(failures.load(), 0);
  Status v = index_->verify();
  ASSERT_TRUE(v.ok()) << v.ToString();
  auto contents = Contents(*index_);
  for (uint64_t k = 0; k < key_space; ++k) {
    const int64_t b = balance[k].load();
    ASSERT_TRUE(b == 0 || b == 1) << "key " << k << " balance " << b;
    ASSERT_EQ(contents.count(k), static_cast<size_t>(b)) << "key " << k;
  }
}

INSTANTIATE_TEST_SUITE_P(All, BTreeConcurrentTest,
                         ::testing::Values("rntree", "rntree-ds", "fptree", "nvtree", "wbtree"),
                         [](const auto& info) {
                           std::string n = info.param;
                           for (char& c : n) {
                             if (c == '-') c = '_';
                           }
                           return n;
                         });

}  // namespace
}  // namespace pmindex::testing
