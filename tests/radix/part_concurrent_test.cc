// P-ART with several writers and readers at once (ROWEX: writers lock only the nodes they
// change, readers take no lock). Run under TSan too (label tsan).
#include <gtest/gtest.h>

#include <atomic>
#include <cstdio>
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


// High contention: every writer churns its own keys inside the same few nodes (one Node4 or
// Node16 per 256 keys, prefixes that inserts split and removes collapse), so that writers
// keep meeting locked and obsolete nodes and restart; readers check a key that stays in
// each node. The tree equals the model at the end.
TEST(PartConcurrentTest, WritersChurnTheSameNodes) {
  TempDir dir;
  auto idx = CreateIndex("part", dir.file("pool"), SmallPoolOptions());
  ASSERT_TRUE(idx.ok()) << idx.status().ToString();
  Index& index = *idx.value();
  constexpr int kWriters = 3;
  const uint64_t rounds = Scale(400);
  // Writer t's key j (j < 8) in group g: byte 5 is the group, byte 6 the writer, byte 7 j.
  auto key = [](uint64_t g, uint64_t t, uint64_t j) { return K((g << 16) | (t << 8) | j); };
  for (uint64_t g = 0; g < 4; ++g) ASSERT_TRUE(index.insert(key(g, 9, 0), IntValue(g)).ok());
  std::atomic<bool> failed{false}, done{false};
  std::vector<std::thread> threads;
  for (uint64_t t = 0; t < kWriters; ++t) {
    threads.emplace_back([&, t] {
      for (uint64_t r = 0; r < rounds; ++r) {
        for (uint64_t g = 0; g < 4; ++g) {
          for (uint64_t j = 0; j < 8; ++j) {
            if (!index.insert(key(g, t, j), IntValue(r)).ok()) failed = true;
          }
          for (uint64_t j = 0; j < 8; ++j) {
            if (j != r % 8 && !index.remove(key(g, t, j)).ok()) failed = true;
          }
          if (!index.remove(key(g, t, r % 8)).ok()) failed = true;
        }
      }
      for (uint64_t g = 0; g < 4; ++g) {
        if (!index.insert(key(g, t, t), IntValue(t)).ok()) failed = true;
      }
    });
  }
  std::thread reader([&] {
    std::string v;
    while (!done.load()) {
      for (uint64_t g = 0; g < 4; ++g) {
        if (!index.lookup(key(g, 9, 0), &v).ok() || IntValue::Decode(v) != g) failed = true;
      }
      size_t n = index.scan(key(0, 0, 0), 100, [](std::string_view, std::string_view) {
        return true;
      });
      if (n < 4) failed = true;  // the four keys that stay
    }
  });
  for (auto& w : threads) w.join();
  done = true;
  reader.join();
  EXPECT_FALSE(failed.load());
  const IndexStats st = index.stats();
  EXPECT_EQ(st.keys, 4u + 4u * kWriters);
  for (const auto& [name, count] : st.nodes) {
    if (name == "writer_restarts")
      std::printf("writer restarts: %llu\n", static_cast<unsigned long long>(count));
  }
  std::string v;
  for (uint64_t g = 0; g < 4; ++g) {
    for (uint64_t t = 0; t < kWriters; ++t) EXPECT_TRUE(index.lookup(key(g, t, t), &v).ok());
  }
  EXPECT_TRUE(index.verify().ok()) << index.verify().ToString();
}

}  // namespace
}  // namespace pmindex::testing
