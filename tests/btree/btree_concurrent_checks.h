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

}  // namespace pmindex::testing

#endif  // PMINDEX_TESTS_BTREE_BTREE_CONCURRENT_CHECKS_H_
