// ROART under concurrency (ROWEX: locking writers, lock-free readers). Two writers insert
// and remove keys of their own under shared leaf arrays and nodes (so their compactions,
// leaf-array splits, node growth, prefix splits and unlinks meet), a third updates a set of
// stable keys (8-byte values in place, 16-byte ones by new leaves); readers look the stable
// keys up and scan across all of it. A reader must always find every stable key with a value
// written for it, and scans must be strictly ordered and hold every stable key they pass.
// At the end the tree equals the writers' models and verifies. Run under TSan too.
#include <gtest/gtest.h>

#include <atomic>
#include <cstring>
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

// Writer w's key i: shared first bytes, then a second byte drawn from a growing range (node
// growth), then bytes that make long shared prefixes; w in the last byte.
std::string WriterKey(int w, uint64_t i) {
  const uint64_t h = KeyGen::Mix(i);
  const uint64_t b1 = (i / 64) % 200;
  return K(uint64_t{0x70 + (h % 2)} << 56 | b1 << 48 | 0x1122000000ull | ((h >> 8) % 50) << 16 |
           ((i % 64) << 2) | static_cast<uint64_t>(w));
}
std::string StableKey(uint64_t s) { return K(uint64_t{0x70} << 56 | (s * 7 + 1) << 20 | 3); }

// A value for stable key s: 8 bytes naming s, or twice that (16 bytes).
std::string StableValue(uint64_t s, bool longer) {
  std::string v(8, '\0');
  const uint64_t word = s ^ 0x5eed000000000000ull;
  std::memcpy(v.data(), &word, 8);
  return longer ? v + v : v;
}
bool StableValueOk(uint64_t s, std::string_view v) {
  if (v.size() != 8 && v.size() != 16) return false;
  if (v.size() == 16 && v.substr(0, 8) != v.substr(8)) return false;
  return v.substr(0, 8) == StableValue(s, false);
}

TEST(RoartConcurrentTest, ReadersAgainstStructuralChanges) {
  TempDir dir;
  auto idx = CreateIndex("roart", dir.file("pool"), SmallPoolOptions());
  ASSERT_TRUE(idx.ok()) << idx.status().ToString();
  Index& index = *idx.value();
  const uint64_t stable = 300, ops = Scale(40000);
  std::vector<std::string> stable_keys;
  for (uint64_t s = 0; s < stable; ++s) {
    stable_keys.push_back(StableKey(s));
    ASSERT_TRUE(index.insert(stable_keys.back(), StableValue(s, false)).ok());
  }
  std::map<std::string, uint64_t> stable_of;
  for (uint64_t s = 0; s < stable; ++s) stable_of[stable_keys[s]] = s;
  std::atomic<bool> failed{false};
  std::atomic<int> writers_done{0};
  std::vector<std::map<std::string, std::string>> models(2);
  std::vector<std::thread> threads;
  for (int w = 0; w < 2; ++w) {
    threads.emplace_back([&, w] {
      std::mt19937_64 rng(TestSeed(100 + w));
      auto& model = models[w];
      for (uint64_t n = 0; n < ops; ++n) {
        const std::string key = WriterKey(w, rng() % (ops / 2 + 1));
        const std::string value = std::string(IntValue(n)) + std::string(rng() % 3 ? 0 : 8, 'x');
        const bool present = model.count(key) != 0;
        if (rng() % 3 == 0) {
          if (index.remove(key).ok() != present) failed = true;
          model.erase(key);
        } else {
          if (index.upsert(key, value).ok() != true) failed = true;
          model[key] = value;
        }
      }
      writers_done.fetch_add(1);
    });
  }
  threads.emplace_back([&] {  // updates the stable keys until the other writers are done
    std::mt19937_64 rng(TestSeed(7));
    while (writers_done.load() < 2) {
      const uint64_t s = rng() % stable;
      if (!index.update(stable_keys[s], StableValue(s, rng() % 2)).ok()) failed = true;
    }
  });
  for (int r = 0; r < 2; ++r) {
    threads.emplace_back([&, r] {
      std::mt19937_64 rng(TestSeed(200 + r));
      std::string value;
      while (writers_done.load() < 2) {
        const uint64_t s = rng() % stable;
        if (!index.lookup(stable_keys[s], &value).ok() || !StableValueOk(s, value)) failed = true;
        // A scan from a stable key: strictly ascending, and every stable key up to the last
        // key returned is among the results.
        std::vector<std::string> got;
        index.scan(stable_keys[s], 1 + rng() % 150, [&](std::string_view k, std::string_view v) {
          if (!got.empty() && got.back() >= k) failed = true;
          got.emplace_back(k);
          if (auto it = stable_of.find(got.back()); it != stable_of.end() && !StableValueOk(it->second, v))
            failed = true;
          return true;
        });
        for (auto it = stable_of.lower_bound(stable_keys[s]); it != stable_of.end() && !got.empty() &&
                                                              it->first <= got.back();
             ++it) {
          if (!std::binary_search(got.begin(), got.end(), it->first)) failed = true;
        }
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_FALSE(failed.load());
  ASSERT_TRUE(index.verify().ok());
  std::string value;
  for (int w = 0; w < 2; ++w) {
    for (const auto& [k, v] : models[w]) {
      ASSERT_TRUE(index.lookup(k, &value).ok());
      EXPECT_EQ(value, v);
    }
  }
  EXPECT_EQ(index.stats().keys, stable + models[0].size() + models[1].size());
}

}  // namespace
}  // namespace pmindex::testing
