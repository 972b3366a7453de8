// The radix trees with concurrent readers: one writer inserting and removing while readers
// look up keys the writer has published and scan in order; lock-free lookups (WORT, WOART)
// against a writer that inserts, updates in place and with new leaves, removes, grows and
// shrinks nodes and splits prefixes. Readers and writer start at a barrier and the writer
// waits half-way until each reader has read, so they overlap however they are scheduled.
// Run under TSan too.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include <mutex>
#include <shared_mutex>

#include "common/model_checker.h"
#include "pm/rw_lock.h"
#include "pmindex/index.h"
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
  constexpr int kReaders = 3;
  std::atomic<int> ready{0};  // start barrier: the writer waits for the readers
  // Lookups each reader did while the writer was still running; the writer waits half-way
  // until every reader has done one, so they overlap however the threads are scheduled.
  std::vector<std::atomic<uint64_t>> overlapping(kReaders);
  std::atomic<int> readers_started{0};
  std::thread writer([&] {
    while (ready.load() < kReaders) std::this_thread::yield();
    for (uint64_t i = 0; i < n; ++i) {
      if (i == n / 2) {
        while (readers_started.load() < kReaders) std::this_thread::yield();
      }
      // Keys with long shared prefixes so that splits (and their header rewrites) happen.
      const std::string key = "k/" + std::to_string(KeyGen::Mix(i) % 1000) + "/" + std::to_string(i);
      if (!index.insert(key, IntValue(i)).ok()) failed = true;
      if (i % 3 == 0 && !index.remove(key).ok()) failed = true;
      if (i % 3 == 0 && !index.insert(key, IntValue(i)).ok()) failed = true;
      published.store(i + 1, std::memory_order_release);
    }
  });
  std::vector<std::thread> readers;
  for (int t = 0; t < kReaders; ++t) {
    readers.emplace_back([&, t] {
      std::mt19937_64 rng(t);
      std::string value;
      ready.fetch_add(1);
      while (published.load(std::memory_order_acquire) < n) {
        const uint64_t p = published.load(std::memory_order_acquire);
        if (p == 0) {
          std::this_thread::yield();
          continue;
        }
        const uint64_t i = rng() % p;
        const std::string key = "k/" + std::to_string(KeyGen::Mix(i) % 1000) + "/" + std::to_string(i);
        if (!index.lookup(key, &value).ok() || IntValue::Decode(value) != i) failed = true;
        std::string prev;
        index.scan(key.substr(0, 4), 20, [&](std::string_view k, std::string_view) {
          if (!prev.empty() && std::string_view(prev) >= k) failed = true;
          prev.assign(k);
          return true;
        });
        if (overlapping[t].fetch_add(1) == 0) readers_started.fetch_add(1);
      }
    });
  }
  writer.join();
  for (auto& r : readers) r.join();
  EXPECT_FALSE(failed.load());
  for (int t = 0; t < kReaders; ++t) {
    EXPECT_GT(overlapping[t].load(), 0u) << "reader " << t << " never ran beside the writer";
  }
  EXPECT_EQ(index.stats().keys, n);
  EXPECT_TRUE(index.verify().ok());
}

// Key i, two families. Even i: 'w', a = j % 16, b = (j / 16) % 64 (j = i / 2), and for
// j >= 1024 '/' and j >> 10 in decimal: wide nodes that WOART grows to Node48 or Node256 and
// shrinks back to Node16 as keys go. Odd i: 's', j % 4, then for g = j / 4 > 0 '/', g % 3
// times 'p', 'x' and g in decimal: compressed prefixes that later keys split ("/px1",
// "/ppx2", "/x3"), and keys that are prefixes of others (end words).
std::string ChurnKey(uint32_t i) {
  const uint32_t j = i / 2;
  if (i % 2 == 0) {
    std::string k = {'w', static_cast<char>(j % 16), static_cast<char>((j / 16) % 64)};
    if (j >= 1024) k += "/" + std::to_string(j >> 10);
    return k;
  }
  std::string k = {'s', static_cast<char>(j % 4)};
  if (const uint32_t g = j / 4; g != 0)
    k += "/" + std::string(g % 3, 'p') + "x" + std::to_string(g);
  return k;
}
// Version v of key i's value, 8 or 16 bytes: a word naming i and v whose upper half is a
// hash of the lower, so a value torn between two versions, or one of another key, shows.
std::string ChurnValue(uint32_t i, uint32_t v, bool longer) {
  const uint32_t lo = (i << 8) | (v & 0xFF);
  const uint64_t word = lo | (KeyGen::Mix(lo) << 32);
  std::string s(8, '\0');
  std::memcpy(s.data(), &word, 8);
  return longer ? s + s : s;
}
// The key a value was written for (meaningful only if ChurnValueOk for it).
uint32_t ChurnValueKey(std::string_view v) {
  uint32_t lo;
  std::memcpy(&lo, v.data(), 4);
  return lo >> 8;
}
bool ChurnValueOk(uint32_t i, std::string_view v) {
  if (v.size() != 8 && v.size() != 16) return false;
  if (v.size() == 16 && v.substr(0, 8) != v.substr(8)) return false;
  uint64_t word;
  std::memcpy(&word, v.data(), 8);
  const uint32_t lo = static_cast<uint32_t>(word);
  return lo >> 8 == i && word >> 32 == (KeyGen::Mix(lo) & 0xFFFFFFFFu);
}

// Lock-free lookups against one writer. Every value a reader sees must be one the writer
// wrote for that key (never torn, never another key's); a key inserted and never removed
// (every eighth) must be found from the moment its insert returned. The writer checks its
// own results against a model, and the tree equals the model at the end.
TEST_P(RadixConcurrentTest, LookupsSeeWrittenValuesWhileOneWriterChurns) {
  const uint64_t seed = 0x5eed;
  TempDir dir;
  auto idx = CreateIndex(GetParam(), dir.file("pool"), SmallPoolOptions());
  ASSERT_TRUE(idx.ok()) << idx.status().ToString();
  Index& index = *idx.value();
  const uint32_t n = static_cast<uint32_t>(Scale(3000));
  const int rounds = 6;
  auto stable_in = std::make_unique<std::atomic<bool>[]>(n);  // inserted, never removed
  std::atomic<bool> done{false}, failed{false};
  std::atomic<uint64_t> found{0};
  constexpr int kReaders = 3;
  std::atomic<int> ready{0};  // start barrier: the writer waits for the readers
  // Lookups each reader did before the writer finished; the writer waits at the middle round
  // until every reader has done one.
  std::vector<std::atomic<uint64_t>> overlapping(kReaders);
  std::atomic<int> readers_started{0};
  std::map<std::string, std::string> model;
  std::thread writer([&] {
    while (ready.load() < kReaders) std::this_thread::yield();
    for (int r = 0; r < rounds; ++r) {
      if (r == rounds / 2) {
        while (readers_started.load() < kReaders) std::this_thread::yield();
      }
      for (uint32_t j = 0; j < n; ++j) {
        const uint32_t i = static_cast<uint32_t>(KeyGen::Mix(j + seed) % n);
        const std::string key = ChurnKey(i);
        const bool present = model.count(key) != 0;
        const bool stable = i % 8 == 0;
        // Odd rounds remove seven eighths of the other keys present (WOART nodes shrink) and
        // update the rest; even rounds put them back (nodes grow) and update the present.
        // Updates alternate between 8 and 16 bytes (in place, or a new leaf swapped in).
        if (!stable && r % 2 == 1) {
          if (!present) continue;
          if ((i + r) % 8 != 0) {
            if (!index.remove(key).ok()) failed = true;
            model.erase(key);
            continue;
          }
        }
        const std::string v = ChurnValue(i, static_cast<uint32_t>(r), (i + r) % 2 != 0);
        if (!index.upsert(key, v).ok()) failed = true;
        model[key] = v;
        if (stable) stable_in[i].store(true, std::memory_order_release);
      }
    }
    done.store(true, std::memory_order_release);
  });
  std::vector<std::thread> readers;
  for (int t = 0; t < kReaders; ++t) {
    readers.emplace_back([&, t] {
      std::mt19937_64 rng(seed + t);
      std::string value;
      uint64_t hits = 0;
      ready.fetch_add(1);
      while (!done.load(std::memory_order_acquire)) {
        const uint32_t i = static_cast<uint32_t>(rng() % n);
        const bool must = stable_in[i].load(std::memory_order_acquire);
        Status s = index.lookup(ChurnKey(i), &value);
        if (s.ok()) {
          ++hits;
          if (!ChurnValueOk(i, value)) failed = true;
        } else if (!s.IsNotFound() || must) {
          failed = true;
        }
        if (overlapping[t].fetch_add(1) == 0) readers_started.fetch_add(1);
        if (rng() % 64 == 0) {  // scans (under the reader lock) see written values too
          std::string prev;
          index.scan(ChurnKey(i), 20, [&](std::string_view k, std::string_view v) {
            if (!prev.empty() && std::string_view(prev) >= k) failed = true;
            if (v.size() < 8 || ChurnKey(ChurnValueKey(v)) != k ||
                !ChurnValueOk(ChurnValueKey(v), v))
              failed = true;
            prev.assign(k);
            return true;
          });
        }
      }
      found.fetch_add(hits);
    });
  }
  writer.join();
  for (auto& r : readers) r.join();
  EXPECT_FALSE(failed.load()) << "seed " << seed;
  EXPECT_GT(found.load(), 0u);
  for (int t = 0; t < kReaders; ++t) {
    EXPECT_GT(overlapping[t].load(), 0u) << "reader " << t << " never ran beside the writer";
  }
  ASSERT_NO_FATAL_FAILURE(ExpectSameAsModel(index, model)) << "seed " << seed;
  EXPECT_EQ(index.stats().keys, model.size());
  EXPECT_TRUE(index.verify().ok());
}

// Blocks a writer unlinks are retired, not freed at once; a put that meets a full pool
// reclaims them and retries. A full pool keeps taking updates that replace leaves.
TEST_P(RadixConcurrentTest, FullPoolReclaimsRetiredBlocks) {
  TempDir dir;
  Options o;
  o.pool_size = 8ull << 20;
  auto idx = CreateIndex(GetParam(), dir.file("pool"), o);
  ASSERT_TRUE(idx.ok()) << idx.status().ToString();
  Index& index = *idx.value();
  if (!index.traits().persistent) GTEST_SKIP() << "no pool";
  uint32_t keys = 0;
  for (;; ++keys) {
    Status s = index.insert(ChurnKey(keys), ChurnValue(keys, 0, false));
    if (s.IsOutOfSpace()) break;
    ASSERT_TRUE(s.ok()) << s.ToString();
  }
  ASSERT_GT(keys, 1000u);
  // Removing a few keys retires their leaves (fewer than a batch: none is freed yet). Each
  // update then writes a new leaf (the length changes) and retires the old one: the first
  // finds no free block until it reclaims what was retired.
  for (uint32_t i = 0; i < 10; ++i) ASSERT_TRUE(index.remove(ChurnKey(i)).ok());
  for (uint32_t r = 1; r <= 4; ++r) {
    for (uint32_t i = 10; i < 510; ++i) {
      Status s = index.update(ChurnKey(i), ChurnValue(i, r, r % 2 != 0));
      ASSERT_TRUE(s.ok()) << "round " << r << " key " << i << ": " << s.ToString();
    }
  }
  EXPECT_TRUE(index.verify().ok());
}

// The lock itself: a writer is alone (no reader and no other writer inside), readers share,
// and a writer gets in while readers keep re-entering (writers first).
TEST(RadixRwLockTest, WritersExcludeEveryoneAndAreNotStarved) {
  pm::RwLock lock;
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

// Waiters spin a bounded while, then sleep: a lock held far longer than the spin puts readers
// and a writer to sleep, and its release wakes every one (a lost wake-up hangs the test).
TEST(RadixRwLockTest, WaitersPastTheSpinSleepAndAreWoken) {
  pm::RwLock lock;
  std::atomic<int> waiting{0}, done{0};
  lock.lock();
  std::vector<std::thread> threads;
  for (int t = 0; t < 3; ++t) {
    threads.emplace_back([&, t] {
      waiting.fetch_add(1);
      if (t == 0) {
        std::unique_lock w(lock);
      } else {
        std::shared_lock r(lock);
      }
      done.fetch_add(1);
    });
  }
  while (waiting.load() != 3) std::this_thread::yield();
  std::this_thread::sleep_for(std::chrono::milliseconds(50));  // far past any spin
  EXPECT_EQ(done.load(), 0) << "a waiter got in while the writer held the lock";
  lock.unlock();
  for (auto& th : threads) th.join();
  EXPECT_EQ(done.load(), 3);
}

INSTANTIATE_TEST_SUITE_P(Radix, RadixConcurrentTest, ::testing::Values("wort", "woart", "art", "part", "roart"));

}  // namespace
}  // namespace pmindex::testing
