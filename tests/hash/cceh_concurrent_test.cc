// CCEH with several writers and optimistic readers at once, on small segments so that
// splits and doublings run under contention. Run under TSan too (label tsan).
#include <gtest/gtest.h>

#include <atomic>
#include <map>
#include <memory>
#include <random>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "common/test_util.h"
#include "hash/cceh/cceh.h"
#include "pmindex/index.h"

namespace pmindex::testing {
namespace {

std::string K(uint64_t k) { return std::string(IntKey(k).view()); }

std::unique_ptr<Index> CreateSmallCceh(const std::string& path) {
  Options o;
  o.pool_size = 16ull << 20;
  auto pool = Pool::Create(path, hash::cceh::kCcehKind, "cceh segment_bytes=512 probe=4", o);
  EXPECT_TRUE(pool.ok()) << pool.status().ToString();
  if (!pool.ok()) return nullptr;
  auto idx = hash::cceh::CcehIndex::Attach(std::move(pool).value(), true);
  EXPECT_TRUE(idx.ok()) << idx.status().ToString();
  return idx.ok() ? std::move(idx).value() : nullptr;
}

// Writers insert, update and remove disjoint keys (splitting and doubling together) while
// readers look up keys that stay (always found with their value) and iterate (no key twice).
TEST(CcehConcurrentTest, WritersAndOptimisticReaders) {
  TempDir dir;
  std::unique_ptr<Index> idx = CreateSmallCceh(dir.file("pool"));
  ASSERT_NE(idx, nullptr);
  Index& index = *idx;
  constexpr int kWriters = 3, kReaders = 2;
  const uint64_t n = Scale(16000);
  const uint64_t kStable = 300;  // keys below stay: readers check them from the start
  auto key = [](uint64_t i) { return i * 0x9E3779B97F4A7C15ull; };
  for (uint64_t i = 0; i < kStable; ++i) ASSERT_TRUE(index.upsert(K(key(i)), IntValue(i)).ok());
  std::set<uint64_t> stable_keys;
  for (uint64_t i = 0; i < kStable; ++i) stable_keys.insert(key(i));
  std::atomic<bool> failed{false}, done{false};
  std::vector<std::thread> threads;
  for (int t = 0; t < kWriters; ++t) {
    threads.emplace_back([&, t] {
      for (uint64_t i = kStable + t; i < n; i += kWriters) {
        if (!index.insert(K(key(i)), IntValue(i)).ok()) failed = true;
        if (i % 5 == 0 && !index.update(K(key(i)), IntValue(i + 1)).ok()) failed = true;
        if (i % 3 == 0 && !index.remove(K(key(i))).ok()) failed = true;
      }
    });
  }
  for (int t = 0; t < kReaders; ++t) {
    threads.emplace_back([&, t] {
      std::mt19937_64 rng(t);
      std::string v;
      for (uint64_t round = 0; !done.load(); ++round) {
        const uint64_t i = rng() % kStable;
        if (!index.lookup(K(key(i)), &v).ok() || IntValue::Decode(v) != i) failed = true;
        if (round % 64 != 0) continue;
        std::map<std::string, int> seen;
        uint64_t stable = 0;
        index.for_each([&](std::string_view k, std::string_view) {
          if (++seen[std::string(k)] > 1) failed = true;
          if (stable_keys.count(IntKey::Decode(k))) ++stable;
          return true;
        }).IgnoreError();
        if (stable < kStable) failed = true;  // a key present throughout was missed
      }
    });
  }
  for (int t = 0; t < kWriters; ++t) threads[t].join();
  done = true;
  for (size_t t = kWriters; t < threads.size(); ++t) threads[t].join();
  EXPECT_FALSE(failed.load());
  ASSERT_TRUE(index.verify().ok()) << index.verify().ToString();
  std::map<uint64_t, uint64_t> model;
  for (uint64_t i = 0; i < n; ++i) {
    if (i >= kStable && i % 3 == 0) continue;
    model[key(i)] = i >= kStable && i % 5 == 0 ? i + 1 : i;
  }
  EXPECT_EQ(index.stats().keys, model.size());
  std::string v;
  for (const auto& [k, val] : model) {
    ASSERT_TRUE(index.lookup(K(k), &v).ok()) << k;
    EXPECT_EQ(IntValue::Decode(v), val);
  }
}

}  // namespace
}  // namespace pmindex::testing
