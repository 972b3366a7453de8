// P-ART with several writers and readers at once (ROWEX: writers lock only the nodes they
// change, readers take no lock). Run under TSan too (label tsan).
#include <gtest/gtest.h>

#include <atomic>
#include <map>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "common/test_util.h"
#include "pmindex/index.h"
#include "radix/radix_test_util.h"

namespace pmindex::testing {
namespace {

std::string K(uint64_t k) { return std::string(IntKey(k).view()); }

// Several writers insert, update and remove interleaved keys (so they share nodes, grow,
// split and collapse them together) while readers look up keys that stay and scan in order.
TEST(PartConcurrentTest, WritersAndReadersShareNodes) {
  TempDir dir;
  Options options = SmallPoolOptions();
  auto idx = CreateIndex("part", dir.file("pool"), options);
  ASSERT_TRUE(idx.ok()) << idx.status().ToString();
  Index& index = *idx.value();
  constexpr int kWriters = 3, kReaders = 2;
  const uint64_t n = Scale(6000);
  auto key = [](uint64_t i) {
    return i % 2 ? K(((i & 0xFF) << 40) | (i >> 8))  // integer keys sharing nodes
                 : "b/" + std::to_string(KeyGen::Mix(i) % 97) + "/" + std::to_string(i);
  };
  // Keys below kStable stay: readers check them from the start.
  const uint64_t kStable = 200;
  for (uint64_t i = 0; i < kStable; ++i) ASSERT_TRUE(index.upsert(key(i), IntValue(i)).ok());
  std::atomic<bool> failed{false}, done{false};
  std::vector<std::thread> threads;
  for (int t = 0; t < kWriters; ++t) {
    threads.emplace_back([&, t] {
      for (uint64_t i = kStable + t; i < n; i += kWriters) {
        if (!index.upsert(key(i), IntValue(i)).ok()) failed = true;
        if (i % 5 == 0 && !index.update(key(i), IntValue(i + 1)).ok()) failed = true;
        if (i % 3 == 0 && !index.remove(key(i)).ok()) failed = true;
      }
    });
  }
  for (int t = 0; t < kReaders; ++t) {
    threads.emplace_back([&, t] {
      std::mt19937_64 rng(t);
      std::string v;
      while (!done.load()) {
        const uint64_t i = rng() % kStable;
        if (!index.lookup(key(i), &v).ok() || IntValue::Decode(v) != i) failed = true;
        std::string prev;
        index.scan(key(rng()), 30, [&](std::string_view k, std::string_view) {
          if (!prev.empty() && std::string_view(prev) >= k) failed = true;
          prev.assign(k);
          return true;
        });
      }
    });
  }
  for (int t = 0; t < kWriters; ++t) threads[t].join();
  done = true;
  for (size_t t = kWriters; t < threads.size(); ++t) threads[t].join();
  EXPECT_FALSE(failed.load());
  std::map<std::string, uint64_t> model;
  for (uint64_t i = 0; i < n; ++i) {
    if (i >= kStable && i % 3 == 0) continue;
    model[key(i)] = i >= kStable && i % 5 == 0 ? i + 1 : i;
  }
  EXPECT_EQ(index.stats().keys, model.size());
  std::string v;
  for (const auto& [k, val] : model) {
    ASSERT_TRUE(index.lookup(k, &v).ok()) << k;
    EXPECT_EQ(IntValue::Decode(v), val);
  }
  auto it = model.begin();
  index.scan("", SIZE_MAX, [&](std::string_view k, std::string_view) {
    EXPECT_EQ(k, it->first);
    ++it;
    return true;
  });
  EXPECT_TRUE(index.verify().ok()) << index.verify().ToString();
}

}  // namespace
}  // namespace pmindex::testing
