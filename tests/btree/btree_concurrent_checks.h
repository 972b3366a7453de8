// The concurrency checks of btree_concurrent_test, as functions of an Index so that
// broken_index_test can show they catch a broken one. Both run kConcurrentThreads threads
// (more than the cores, on purpose) that start together at a barrier, and report failures
// through gtest (non-fatal from the threads' counts, fatal for a failed verify()).
//
//   CheckDisjointRanges: thread t owns the keys k with k % threads == t and checks every
//     answer against its own model; at the end the tree (verify, strictly increasing scan)
//     equals the union of the models.
//   CheckOverlappingKeys: skewed writers on a small shared key space count each key's
//     successful inserts minus removes (0 or 1 at the end, and the key present iff 1);
//     values carry their key (a lookup or scan that returns another key's value fails); a
//     concurrent scanner's keys strictly increase; one writer waits half-way for a scan, so
//     scans overlap the writes.
//   CheckAcknowledgedReads: writers own interleaved keys and number each key's operations
//     (insert, update, remove, insert, ...; the value carries key and number); readers on
//     other threads check every lookup against what the writers had acknowledged before it
//     began and issued before it returned, a scanner its keys likewise; at the end the tree
//     holds exactly the acknowledged state.
#ifndef PMINDEX_TESTS_BTREE_BTREE_CONCURRENT_CHECKS_H_
#define PMINDEX_TESTS_BTREE_BTREE_CONCURRENT_CHECKS_H_

#include <gtest/gtest.h>

#include <atomic>
#include <map>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "btree/btree_test_util.h"
#include "common/test_util.h"
#include "pmindex/index.h"

namespace pmindex::testing {

constexpr int kConcurrentThreads = 8;  // oversubscribed on purpose

// Makes `n` threads start their work together (each calls Arrive first).
class StartBarrier {
 public:
  explicit StartBarrier(int n) : waiting_(n) {}
  void Arrive() {
    waiting_.fetch_sub(1);
    while (waiting_.load() > 0) std::this_thread::yield();
  }

 private:
  std::atomic<int> waiting_;
};

inline void CheckDisjointRanges(Index& index) {
  constexpr int kThreads = kConcurrentThreads;
  const uint64_t per_thread = Scale(20000);
  std::vector<std::map<uint64_t, uint64_t>> models(kThreads);
  std::atomic<int> failures{0};
  StartBarrier start(kThreads);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      std::mt19937_64 rng(1000 + t);
      auto& model = models[t];
      std::string got;
      start.Arrive();
      for (uint64_t i = 0; i < per_thread * 3; ++i) {
        // Interleaved ranges: thread t owns keys with k % kThreads == t.
        const uint64_t k = (rng() % per_thread) * kThreads + t;
        const uint64_t v = rng();
        const bool present = model.count(k) > 0;
        bool ok = true;
        switch (rng() % 6) {
          case 0:
            ok = index.update(IntKey(k), IntValue(v)).ok() == present;
            if (present) model[k] = v;
            break;
          case 1:
            ok = index.remove(IntKey(k)).ok() == present;
            model.erase(k);
            break;
          case 2:
            ok = index.lookup(IntKey(k), &got).ok() == present &&
                 (!present || IntValue::Decode(got) == model[k]);
            break;
          case 3:
            ok = index.upsert(IntKey(k), IntValue(v)).ok();
            model[k] = v;
            break;
          default:
            ok = index.insert(IntKey(k), IntValue(v)).ok() == !present;
            if (!present) model[k] = v;
        }
        if (!ok) failures.fetch_add(1);
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(failures.load(), 0) << "answers that differ from the thread's model";
  Status v = index.verify();
  ASSERT_TRUE(v.ok()) << v.ToString();
  std::map<uint64_t, uint64_t> all;
  for (auto& m : models) all.insert(m.begin(), m.end());
  EXPECT_EQ(Contents(index), all);
}

inline void CheckOverlappingKeys(Index& index) {
  constexpr int kThreads = kConcurrentThreads;
  const uint64_t key_space = 4000;  // small: many conflicts, many splits and unlinks
  const uint64_t ops = Scale(40000);
  std::vector<std::atomic<int64_t>> balance(key_space);  // inserts - removes that succeeded
  std::atomic<int> failures{0}, bad_scans{0};
  std::atomic<bool> stop{false};
  std::atomic<uint64_t> scans{0};
  StartBarrier start(kThreads);
  std::vector<std::thread> threads;
  // Values carry their key, so a lookup can tell a torn or misplaced value.
  auto value_for = [](uint64_t k, uint64_t salt) { return (k << 20) | (salt & 0xFFFFF); };
  for (int t = 0; t < kThreads - 1; ++t) {
    threads.emplace_back([&, t] {
      std::mt19937_64 rng(77 + t);
      std::string got;
      start.Arrive();
      for (uint64_t i = 0; i < ops; ++i) {
        // Skewed: half the operations hit 1/16 of the keys.
        const uint64_t k = rng() % 2 ? rng() % (key_space / 16) : rng() % key_space;
        switch (rng() % 5) {
          case 0:
            if (index.insert(IntKey(k), IntValue(value_for(k, rng()))).ok()) balance[k]++;
            break;
          case 1:
            if (index.remove(IntKey(k)).ok()) balance[k]--;
            break;
          case 2:
            (void)index.update(IntKey(k), IntValue(value_for(k, rng())));
            break;
          default:
            if (index.lookup(IntKey(k), &got).ok() && IntValue::Decode(got) >> 20 != k) {
              failures.fetch_add(1);
            }
        }
        // Writer 0 waits half-way for a finished scan: the scanner overlapped the writes
        // (however the threads were scheduled).
        if (t == 0 && i == ops / 2) {
          while (scans.load() == 0) std::this_thread::yield();
        }
      }
    });
  }
  threads.emplace_back([&] {  // a scanner: strictly increasing keys, values match keys
    std::mt19937_64 rng(5);
    start.Arrive();
    while (!stop.load()) {
      uint64_t last = 0;
      bool first = true;
      index.scan(IntKey(rng() % key_space), 200, [&](std::string_view k, std::string_view v) {
        const uint64_t key = IntKey::Decode(k);
        if ((!first && key <= last) || IntValue::Decode(v) >> 20 != key) bad_scans.fetch_add(1);
        first = false;
        last = key;
        return true;
      });
      scans.fetch_add(1);
    }
  });
  for (int t = 0; t < kThreads - 1; ++t) threads[t].join();
  stop.store(true);
  threads.back().join();
  EXPECT_EQ(failures.load(), 0) << "lookups that returned another key's value";
  EXPECT_EQ(bad_scans.load(), 0) << "scan entries out of order, repeated or misplaced";
  Status v = index.verify();
  ASSERT_TRUE(v.ok()) << v.ToString();
  auto contents = Contents(index);
  for (uint64_t k = 0; k < key_space; ++k) {
    const int64_t b = balance[k].load();
    ASSERT_TRUE(b == 0 || b == 1) << "key " << k << " balance " << b;
    ASSERT_EQ(contents.count(k), static_cast<size_t>(b)) << "key " << k;
  }
}

// Operation n (from 1) of a key: n % 3 == 1 inserts, 2 updates, 0 removes; n == 0: never
// written. The value names key and n, so a reader knows which write it saw.
inline bool AckRemoves(uint64_t n) { return n % 3 == 0; }
inline uint64_t AckValue(uint64_t k, uint64_t n) { return k << 24 | n; }

inline void CheckAcknowledgedReads(Index& index) {
  constexpr int kWriters = kConcurrentThreads / 2, kReaders = kConcurrentThreads / 2 - 1;
  const uint64_t key_space = 2048;  // small: splits, merges and unlinks under the readers
  const uint64_t ops = Scale(20000);
  std::vector<std::atomic<uint64_t>> issued(key_space), acked(key_space);
  std::atomic<int> write_failures{0}, read_failures{0}, bad_scans{0};
  std::atomic<bool> stop{false};
  std::atomic<uint64_t> reads{0}, scans{0};
  StartBarrier start(kConcurrentThreads);
  // Some operation in [lo, hi] of the key left `found`, `value` (a seq_cst handshake: the
  // reader loads acked before its lookup and issued after it).
  auto possible = [](uint64_t k, uint64_t lo, uint64_t hi, bool found, uint64_t value) {
    if (!found) return AckRemoves(lo) || hi / 3 > lo / 3;
    const uint64_t n = value & 0xFFFFFF;
    return value >> 24 == k && n >= lo && n <= hi && !AckRemoves(n);
  };
  std::vector<std::thread> threads;
  for (int w = 0; w < kWriters; ++w) {
    threads.emplace_back([&, w] {
      std::mt19937_64 rng(300 + w);
      start.Arrive();
      for (uint64_t i = 0; i < ops; ++i) {
        // Writer w owns k % kWriters == w; half the operations hit 1/16 of the keys.
        const uint64_t r = rng() % 2 ? rng() % (key_space / 16) : rng() % key_space;
        const uint64_t k = r - r % kWriters + w;
        if (k >= key_space) continue;
        const uint64_t n = acked[k].load() + 1;
        issued[k].store(n);
        Status s = n % 3 == 1   ? index.insert(IntKey(k), IntValue(AckValue(k, n)))
                   : n % 3 == 2 ? index.update(IntKey(k), IntValue(AckValue(k, n)))
                                : index.remove(IntKey(k));
        if (!s.ok()) write_failures.fetch_add(1);
        acked[k].store(n);
        // Writer 0 waits half-way for a finished scan: the scanner overlapped the writes.
        if (w == 0 && i == ops / 2) {
          while (scans.load() == 0) std::this_thread::yield();
        }
      }
    });
  }
  for (int t = 0; t < kReaders; ++t) {
    threads.emplace_back([&, t] {
      std::mt19937_64 rng(500 + t);
      std::string got;
      start.Arrive();
      while (!stop.load()) {
        const uint64_t k = rng() % 2 ? rng() % (key_space / 16) : rng() % key_space;
        const uint64_t lo = acked[k].load();
        const bool found = index.lookup(IntKey(k), &got).ok();
        const uint64_t hi = issued[k].load();
        if (!possible(k, lo, hi, found, found ? IntValue::Decode(got) : 0)) {
          read_failures.fetch_add(1);
        }
        reads.fetch_add(1, std::memory_order_relaxed);
      }
    });
  }
  threads.emplace_back([&] {  // a scanner: increasing keys, each entry a write issued
    std::mt19937_64 rng(700);
    start.Arrive();
    while (!stop.load()) {
      uint64_t last = 0;
      bool first = true;
      index.scan(IntKey(rng() % key_space), 100, [&](std::string_view k, std::string_view v) {
        const uint64_t key = IntKey::Decode(k);
        const uint64_t value = IntValue::Decode(v);
        if ((!first && key <= last) || key >= key_space ||
            !possible(key, 0, issued[key].load(), true, value)) {
          bad_scans.fetch_add(1);
        }
        first = false;
        last = key;
        return true;
      });
      scans.fetch_add(1);
    }
  });
  for (int w = 0; w < kWriters; ++w) threads[w].join();
  stop.store(true);
  for (size_t t = kWriters; t < threads.size(); ++t) threads[t].join();
  EXPECT_EQ(write_failures.load(), 0) << "writes of the owner's numbered sequence that failed";
  EXPECT_EQ(read_failures.load(), 0) << "lookups that saw no write issued while they ran";
  EXPECT_EQ(bad_scans.load(), 0) << "scan entries out of order or never written";
  EXPECT_GT(reads.load(), 0u);
  Status v = index.verify();
  ASSERT_TRUE(v.ok()) << v.ToString();
  std::map<uint64_t, uint64_t> expected;
  for (uint64_t k = 0; k < key_space; ++k) {
    const uint64_t n = acked[k].load();
    if (!AckRemoves(n)) expected[k] = AckValue(k, n);
  }
  EXPECT_EQ(Contents(index), expected);
}

}  // namespace pmindex::testing

#endif  // PMINDEX_TESTS_BTREE_BTREE_CONCURRENT_CHECKS_H_
