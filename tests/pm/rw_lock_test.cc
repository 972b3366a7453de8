// RwLock (pm/rw_lock.h): mutual exclusion of writers, readers that see only whole writes,
// writers that readers do not starve, and sleepers that every release wakes, with more
// threads than cores (so that waiters spin out and sleep). Every test runs for a fixed time,
// not a fixed count, so a loaded machine or a sanitizer makes it do less, not fail.
#include "pm/rw_lock.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <mutex>
#include <shared_mutex>
#include <thread>
#include <vector>

namespace pmindex::pm {
namespace {

using Clock = std::chrono::steady_clock;
constexpr auto kRun = std::chrono::milliseconds(300);

// Threads past the cores: waiters outlast their spin and sleep.
int Oversubscribed() {
  const int cores = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  return std::max(8, 2 * cores);
}

TEST(RwLockTest, IsACacheLineOfItsOwn) {
  EXPECT_EQ(alignof(RwLock), 64u);
  EXPECT_EQ(sizeof(RwLock), 64u);
}

// N writers add to a plain counter under the lock until time is up; the counter ends at the
// sum of what each counted (a lost update is a second writer inside).
TEST(RwLockTest, WritersIncrementACounterWithoutLosingOne) {
  RwLock lock;
  uint64_t counter = 0;  // only under the writer lock
  std::atomic<bool> stop{false};
  const int n = Oversubscribed();
  std::vector<uint64_t> mine(n, 0);
  std::vector<std::thread> threads;
  for (int t = 0; t < n; ++t) {
    threads.emplace_back([&, t] {
      while (!stop.load(std::memory_order_relaxed)) {
        std::unique_lock w(lock);
        ++counter;
        ++mine[t];
      }
    });
  }
  std::this_thread::sleep_for(kRun);
  stop = true;
  for (auto& th : threads) th.join();
  uint64_t sum = 0;
  for (uint64_t m : mine) sum += m;
  EXPECT_EQ(counter, sum);
  EXPECT_GT(counter, 0u);
}

// Writers keep two fields equal, changing them one after the other; readers under the shared
// lock never see them differ, and no writer is inside with them. Every writer gets in while
// readers keep re-entering (writers first).
TEST(RwLockTest, ReadersSeeOnlyWholeWritesAndDoNotStarveWriters) {
  RwLock lock;
  uint64_t first = 0, second = 0;  // equal outside the writer lock
  std::atomic<int> writers_in{0};
  std::atomic<bool> failed{false}, stop{false};
  const int writers = 2, readers = Oversubscribed();
  std::vector<uint64_t> writes(writers, 0);
  std::vector<std::thread> threads;
  for (int t = 0; t < readers; ++t) {
    threads.emplace_back([&] {
      uint64_t seen = 0;
      while (!stop.load(std::memory_order_relaxed)) {
        std::shared_lock r(lock);
        if (writers_in.load() != 0 || first != second || first < seen) failed = true;
        seen = first;
      }
    });
  }
  for (int t = 0; t < writers; ++t) {
    threads.emplace_back([&, t] {
      while (!stop.load(std::memory_order_relaxed)) {
        std::unique_lock w(lock);
        if (writers_in.fetch_add(1) != 0) failed = true;
        ++first;
        std::atomic_signal_fence(std::memory_order_seq_cst);  // two stores, in this order
        ++second;
        ++writes[t];
        writers_in.fetch_sub(1);
      }
    });
  }
  std::this_thread::sleep_for(kRun);
  stop = true;
  for (auto& th : threads) th.join();
  EXPECT_FALSE(failed.load());
  for (int t = 0; t < writers; ++t) EXPECT_GT(writes[t], 0u) << "writer " << t << " starved";
  EXPECT_EQ(first, writes[0] + writes[1]);
}

// Writers hold the lock for a varying while (some far past the spin, so waiters sleep and
// are woken again and again) among readers; a lost wake-up leaves a thread asleep and the
// join below hangs until the test's timeout.
TEST(RwLockTest, MixedLongAndShortHoldsWakeEverySleeper) {
  RwLock lock;
  std::atomic<bool> stop{false};
  std::atomic<uint64_t> done{0};
  const int n = Oversubscribed();
  std::vector<std::thread> threads;
  for (int t = 0; t < n; ++t) {
    threads.emplace_back([&, t] {
      for (uint64_t i = 0; !stop.load(std::memory_order_relaxed); ++i) {
        if (t % 3 == 0) {
          std::shared_lock r(lock);
        } else {
          std::unique_lock w(lock);
          if (i % 64 == 0) std::this_thread::sleep_for(std::chrono::microseconds(200));
        }
        done.fetch_add(1, std::memory_order_relaxed);
      }
    });
  }
  std::this_thread::sleep_for(kRun);
  stop = true;
  for (auto& th : threads) th.join();
  EXPECT_GT(done.load(), static_cast<uint64_t>(n));
}

// A lock held far past any spin puts readers and writers to sleep; one release wakes them
// all (the first release clears the sleep flag, so the later ones must not be needed).
TEST(RwLockTest, OneReleaseWakesEverySleeper) {
  RwLock lock;
  std::atomic<int> waiting{0}, done{0};
  lock.lock();
  const int n = Oversubscribed();
  std::vector<std::thread> threads;
  for (int t = 0; t < n; ++t) {
    threads.emplace_back([&, t] {
      waiting.fetch_add(1);
      if (t % 2 == 0) {
        std::unique_lock w(lock);
      } else {
        std::shared_lock r(lock);
      }
      done.fetch_add(1);
    });
  }
  while (waiting.load() != n) std::this_thread::yield();
  std::this_thread::sleep_for(std::chrono::milliseconds(50));  // far past any spin
  EXPECT_EQ(done.load(), 0) << "a waiter got in while the writer held the lock";
  lock.unlock();
  for (auto& th : threads) th.join();
  EXPECT_EQ(done.load(), n);
}

// Two writers on a lock that is never idle long: both make progress for the whole run (the
// hand-off is not a convoy in which one thread sleeps while the other runs).
TEST(RwLockTest, TwoWritersBothProgress) {
  RwLock lock;
  uint64_t counter = 0;
  std::atomic<bool> stop{false};
  uint64_t mine[2] = {0, 0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 2; ++t) {
    threads.emplace_back([&, t] {
      while (!stop.load(std::memory_order_relaxed)) {
        std::unique_lock w(lock);
        ++counter;
        ++mine[t];
      }
    });
  }
  const auto start = Clock::now();
  while (Clock::now() - start < kRun) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  stop = true;
  for (auto& th : threads) th.join();
  EXPECT_EQ(counter, mine[0] + mine[1]);
  EXPECT_GT(mine[0], 0u);
  EXPECT_GT(mine[1], 0u);
}

}  // namespace
}  // namespace pmindex::pm
