// The radix trees under their reader-writer lock: one writer inserting and removing while
// readers look up keys the writer has published and scan in order. Run under TSan too.
#include <gtest/gtest.h>

#include <atomic>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include <mutex>
#include <shared_mutex>

#include "pmindex/index.h"
#include "radix/common/rw_lock.h"
#include "radix/radix_test_util.h"

namespace pmindex::testing {
namespace {

class RadixConcurrentTest : public ::testing::TestWithParam<std::string> {};

TEST_P(RadixConcurrentTest, ReadersSeePublishedKeysWhileOneWriterRuns) {
  TempDir dir;
  auto idx = CreateIndex(GetParam(), dir.file("pool"), SmallPoolOptions());
  ASSERT_TRUE(idx.ok()) << idx.status().ToString();
  Index& index = *idx.value();
  const uint64_t n = Scale(4000);
  std::atomic<uint64_t> published{0};
  std::atomic<bool> failed{false};
  std::thread writer([&] {
    for (uint64_t i = 0; i < n; ++i) {
      // Keys with long shared prefixes so that splits (and their header rewrites) happen.
      const std::string key = "k/" + std::to_string(KeyGen::Mix(i) % 1000) + "/" + std::to_string(i);
      if (!index.insert(key, IntValue(i)).ok()) failed = true;
      if (i % 3 == 0 && !index.remove(key).ok()) failed = true;
      if (i % 3 == 0 && !index.insert(key, IntValue(i)).ok()) failed = true;
      published.store(i + 1, std::memory_order_release);
    }
  });
  std::vector<std::thread> readers;
  for (int t = 0; t < 3; ++t) {
    readers.emplace_back([&, t] {
      std::mt19937_64 rng(t);
      std::string value;
      while (published.load(std::memory_order_acquire) < n) {
        const uint64_t p = published.load(std::memory_order_acquire);
        if (p == 0) continue;
        const uint64_t i = rng() % p;
        const std::string key = "k/" + std::to_string(KeyGen::Mix(i) % 1000) + "/" + std::to_string(i);
        if (!index.lookup(key, &value).ok() || IntValue::Decode(value) != i) failed = true;
        std::string prev;
        index.scan(key.substr(0, 4), 20, [&](std::string_view k, std::string_view) {
          if (!prev.empty() && std::string_view(prev) >= k) failed = true;
          prev.assign(k);
          return true;
        });
      }
    });
  }
  writer.join();
  for (auto& r : readers) r.join();
  EXPECT_FALSE(failed.load());
  EXPECT_EQ(index.stats().keys, n);
  EXPECT_TRUE(index.verify().ok());
}

// The lock itself: a writer is alone (no reader and no other writer inside), readers share,
// and a writer gets in while readers keep re-entering (writers first).
TEST(RadixRwLockTest, WritersExcludeEveryoneAndAreNotStarved) {
  radix::RwLock lock;
  std::atomic<int> readers_in{0}, writers_in{0};
  std::atomic<bool> failed{false}, stop{false};
  uint64_t guarded = 0;  // written only under the writer lock, read under the reader lock
  const int rounds = static_cast<int>(Scale(2000));
  std::vector<std::thread> threads;
  for (int t = 0; t < 3; ++t) {
    threads.emplace_back([&] {
      uint64_t seen = 0;
      while (!stop.load(std::memory_order_relaxed)) {
        std::shared_lock r(lock);
        readers_in.fetch_add(1);
        if (writers_in.load() != 0) failed = true;
        if (guarded < seen) failed = true;  // the writer only counts up
        seen = guarded;
        readers_in.fetch_sub(1);
      }
    });
  }
  std::vector<std::thread> writers;
  for (int t = 0; t < 2; ++t) {
    writers.emplace_back([&] {
      for (int i = 0; i < rounds; ++i) {
        std::unique_lock w(lock);
        if (writers_in.fetch_add(1) != 0 || readers_in.load() != 0) failed = true;
        ++guarded;
        writers_in.fetch_sub(1);
      }
    });
  }
  for (auto& w : writers) w.join();  // returns only if writers are not starved
  stop = true;
  for (auto& r : threads) r.join();
  EXPECT_FALSE(failed.load());
  EXPECT_EQ(guarded, static_cast<uint64_t>(2 * rounds));
}

INSTANTIATE_TEST_SUITE_P(Radix, RadixConcurrentTest, ::testing::Values("wort", "woart", "art"));

}  // namespace
}  // namespace pmindex::testing
