// Level hashing under concurrency (also run under TSan): writers on disjoint keys while the
// table grows from empty (resizes and movements under way), and lock-free readers that must
// never miss a key that is present throughout nor read a value never written.
#include <gtest/gtest.h>

#include <atomic>
#include <map>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "common/test_util.h"
#include "pm/mix64.h"
#include "pmindex/index.h"

namespace pmindex::testing {
namespace {

Options PoolOptions() {
  Options o;
  o.pool_size = 64ull << 20;
  return o;
}

std::string K(uint64_t k) { return std::string(IntKey(k).view()); }
std::string V(uint64_t v) { return std::string(IntValue(v)); }

// A value that names its key, so a reader can tell a value of another key (or a torn one).
uint64_t ValueFor(uint64_t key, uint64_t round) {
  return (pm::Mix64(key) & ~0xFFFFull) | (round & 0xFFFF);
}
bool Names(uint64_t value, uint64_t key) {
  return (value & ~0xFFFFull) == (pm::Mix64(key) & ~0xFFFFull);
}

// Writers insert, update and remove their own keys (checking each result against their own
// model) while readers look up a stable set inserted first; the table starts at 4+2
// buckets, so it resizes many times and moves items while the readers run.
TEST(LevelHashConcurrentTest, DisjointWritersAndStableReaders) {
  const uint64_t seed = TestSeed(7);
  SCOPED_TRACE(SeedTrace(seed));
  TempDir dir;
  auto idx = CreateIndex("levelhash", dir.file("pool"), PoolOptions());
  ASSERT_TRUE(idx.ok()) << idx.status().ToString();
  Index& index = *idx.value();
  const uint64_t stable = 200;
  for (uint64_t k = 0; k < stable; ++k) ASSERT_TRUE(index.insert(K(k), V(ValueFor(k, 0))).ok());
  const int writers = 3, readers = 2;
  const uint64_t ops = Scale(20000);
  std::atomic<int> writers_left{writers};
  std::atomic<uint64_t> errors{0};
  std::vector<std::map<uint64_t, uint64_t>> models(writers);
  std::vector<std::thread> threads;
  for (int w = 0; w < writers; ++w) {
    threads.emplace_back([&, w] {
      std::mt19937_64 rng(seed + w);
      auto& model = models[w];
      for (uint64_t op = 0; op < ops; ++op) {
        const uint64_t key = (uint64_t{1} << 40) * (w + 1) + rng() % 4000;
        const uint64_t value = ValueFor(key, op);
        const bool present = model.count(key) != 0;
        const uint64_t r = rng() % 4;
        auto check = [&](const Status& s, bool expect_ok, const char* what) {
          if (s.ok() != expect_ok) {
            ++errors;
            ADD_FAILURE() << "writer " << w << " op " << op << ": " << what << " " << key << ": "
                          << s.ToString();
          }
        };
        if (r < 2) {
          check(index.insert(K(key), V(value)), !present, "insert");
          if (!present) model[key] = value;
        } else if (r == 2) {
          check(index.update(K(key), V(value)), present, "update");
          if (present) model[key] = value;
        } else {
          check(index.remove(K(key)), present, "remove");
          model.erase(key);
        }
        // Each stable key also gets updated by writer 0 now and then.
        if (w == 0 && op % 16 == 0) {
          const uint64_t k = rng() % stable;
          const uint64_t stable_key = k;
          if (Status s = index.update(K(stable_key), V(ValueFor(stable_key, op))); !s.ok()) {
            ++errors;
            ADD_FAILURE() << "writer 0: update of stable key " << stable_key << ": " << s.ToString();
          }
        }
      }
      --writers_left;
    });
  }
  for (int r = 0; r < readers; ++r) {
    threads.emplace_back([&, r] {
      std::mt19937_64 rng(seed + 100 + r);
      std::string v;
      while (writers_left.load() > 0) {
        const uint64_t k = rng() % stable;
        const Status s = index.lookup(K(k), &v);
        if (!s.ok() || !Names(IntValue::Decode(v), k)) {
          ++errors;
          ADD_FAILURE() << "reader: stable key " << k << ": " << s.ToString();
        }
      }
    });
  }
  for (std::thread& t : threads) t.join();
  EXPECT_EQ(errors.load(), 0u);
  ASSERT_TRUE(index.verify().ok()) << index.verify().ToString();
  std::string v;
  uint64_t expected = stable;
  for (const auto& model : models) {
    expected += model.size();
    for (const auto& [k, val] : model) {
      ASSERT_TRUE(index.lookup(K(k), &v).ok()) << k;
      ASSERT_EQ(IntValue::Decode(v), val);
    }
  }
  EXPECT_EQ(index.stats().keys, expected);
}

// Readers look up keys that one writer keeps inserting (each acknowledged insert is
// published through an atomic counter): a key acknowledged before the lookup began must be
// found, across movements and resizes.
TEST(LevelHashConcurrentTest, AcknowledgedInsertsAreSeen) {
  TempDir dir;
  auto idx = CreateIndex("levelhash", dir.file("pool"), PoolOptions());
  ASSERT_TRUE(idx.ok()) << idx.status().ToString();
  Index& index = *idx.value();
  const uint64_t n = Scale(30000);
  std::atomic<uint64_t> acked{0};
  std::atomic<uint64_t> errors{0};
  std::thread writer([&] {
    for (uint64_t i = 0; i < n; ++i) {
      const uint64_t k = pm::Mix64(i);
      if (!index.insert(K(k), V(ValueFor(k, 1))).ok()) ++errors;
      acked.store(i + 1, std::memory_order_release);
    }
  });
  std::vector<std::thread> readers;
  for (int r = 0; r < 2; ++r) {
    readers.emplace_back([&, r] {
      std::mt19937_64 rng(r);
      std::string v;
      for (;;) {
        const uint64_t a = acked.load(std::memory_order_acquire);
        if (a == n) break;
        if (a == 0) continue;
        const uint64_t k = pm::Mix64(rng() % a);
        if (!index.lookup(K(k), &v).ok() || !Names(IntValue::Decode(v), k)) ++errors;
      }
    });
  }
  writer.join();
  for (std::thread& t : readers) t.join();
  EXPECT_EQ(errors.load(), 0u);
  ASSERT_TRUE(index.verify().ok()) << index.verify().ToString();
  EXPECT_EQ(index.stats().keys, n);
}

}  // namespace
}  // namespace pmindex::testing
