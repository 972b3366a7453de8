// Deterministic counter tests for the persistence seam and the XPLine media model.
#include "pm/persist.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <list>
#include <random>
#include <thread>
#include <vector>

#include "common/test_util.h"
#include "pm/xpline.h"

namespace pmindex::pm {
namespace {

alignas(4096) char buffer[64 * 1024];

PersistSettings Settings(PersistMode mode) {
  PersistSettings s;
  s.mode = mode;
  s.model_media = true;
  return s;
}

class PersistTest : public ::testing::TestWithParam<PersistMode> {
 protected:
  PersistContext pc{Settings(GetParam())};
};

TEST_P(PersistTest, PersistOf100BytesAt60IntoALineCountsThreeLinesOneFence) {
  PersistCounters before = pc.thread_counters();
  pc.persist(buffer + 60, 100);  // bytes 60..159: lines 0, 1, 2
  PersistCounters d = pc.thread_counters() - before;
  EXPECT_EQ(d.persist_calls, 1u);
  EXPECT_EQ(d.flushes, 3u);
  EXPECT_EQ(d.fences, 1u);
}

TEST_P(PersistTest, CountsDoNotDependOnMode) {
  PersistCounters before = pc.thread_counters();
  pc.flush(buffer, 1);
  pc.flush(buffer + 64, 64);
  pc.fence();
  pc.copy_persist(buffer + 256, buffer, 200);  // 4 lines
  PersistCounters d = pc.thread_counters() - before;
  EXPECT_EQ(d.persist_calls, 1u);
  EXPECT_EQ(d.flushes, 6u);
  EXPECT_EQ(d.fences, 2u);
  EXPECT_EQ(std::memcmp(buffer + 256, buffer, 200), 0);
}

TEST_P(PersistTest, ZeroLengthFlushCountsNothing) {
  PersistCounters before = pc.thread_counters();
  pc.flush(buffer, 0);
  PersistCounters d = pc.thread_counters() - before;
  EXPECT_EQ(d.flushes, 0u);
}

TEST_P(PersistTest, FourLinesOfOneXPLineCostOneMediaWrite) {
  pc.drain_media();
  PersistCounters before = pc.thread_counters();
  for (int i = 0; i < 4; ++i) pc.persist(buffer + 1024 + i * 64, 8);
  pc.drain_media();
  PersistCounters d = pc.thread_counters() - before;
  EXPECT_EQ(d.media_writes, 1u);
  EXPECT_EQ(d.media_rmw, 0u);
}

TEST_P(PersistTest, FourLinesOfFourXPLinesCostFourReadModifyWrites) {
  pc.drain_media();
  PersistCounters before = pc.thread_counters();
  for (int i = 0; i < 4; ++i) pc.persist(buffer + i * 4096, 8);
  pc.drain_media();
  PersistCounters d = pc.thread_counters() - before;
  EXPECT_EQ(d.media_writes, 4u);
  EXPECT_EQ(d.media_rmw, 4u);
}

INSTANTIATE_TEST_SUITE_P(AllModes, PersistTest,
                         ::testing::Values(PersistMode::kAdr, PersistMode::kEadr,
                                           PersistMode::kAsync, PersistMode::kAdaptive,
                                           PersistMode::kVolatile),
                         [](const auto& info) { return std::string(PersistModeName(info.param)); });

TEST(XPLineModel, RewritingABufferedLineMerges) {
  XPLineModel m;
  for (int i = 0; i < 100; ++i) m.add_line(0x10000);
  m.drain();
  EXPECT_EQ(m.media_writes(), 1u);
  EXPECT_EQ(m.media_rmw(), 1u);
}

TEST(XPLineModel, EvictsLeastRecentlyUsedWhenFull) {
  XPLineModel m;
  for (uint64_t i = 0; i < 64; ++i) m.add_line(i * 256);
  EXPECT_EQ(m.media_writes(), 0u);
  m.add_line(0);            // touch XPLine 0: now XPLine 1 is the LRU
  m.add_line(64 * 256);     // a 65th XPLine evicts XPLine 1
  EXPECT_EQ(m.media_writes(), 1u);
  m.add_line(0);            // still buffered: merges
  EXPECT_EQ(m.media_writes(), 1u);
  m.add_line(256);          // XPLine 1 was evicted: costs another eviction
  EXPECT_EQ(m.media_writes(), 2u);
  m.drain();
  EXPECT_EQ(m.media_writes(), 66u);
}

// The model against a plain std::list LRU on a random line stream with locality.
TEST(XPLineModel, AgreesWithAReferenceLru) {
  const uint64_t seed = testing::TestSeed(7);
  SCOPED_TRACE(testing::SeedTrace(seed));
  std::mt19937_64 rng(seed);
  XPLineModel m;
  std::list<std::pair<uint64_t, uint8_t>> lru;  // front = most recent: (xpline, dirty mask)
  uint64_t writes = 0, rmw = 0;
  auto evict_back = [&] {
    ++writes;
    rmw += __builtin_popcount(lru.back().second) < 4;
    lru.pop_back();
  };
  for (int i = 0; i < 200000; ++i) {
    const uint64_t line = (rng() % 3 == 0 ? rng() % 4096 : rng() % 120) * 64;
    m.add_line(line);
    const uint64_t x = line >> 8;
    const uint8_t bit = 1u << ((line >> 6) & 3);
    auto it = std::find_if(lru.begin(), lru.end(), [x](const auto& e) { return e.first == x; });
    if (it != lru.end()) {
      it->second |= bit;
      lru.splice(lru.begin(), lru, it);
    } else {
      if (lru.size() == XPLineModel::kEntries) evict_back();
      lru.emplace_front(x, bit);
    }
    if (i % 50000 == 49999) {  // drain now and then
      m.drain();
      while (!lru.empty()) evict_back();
    }
    ASSERT_EQ(m.media_writes(), writes) << "after line " << i;
    ASSERT_EQ(m.media_rmw(), rmw) << "after line " << i;
  }
}

TEST(Counters, SumThreadsIncludingExitedOnes) {
  PersistContext pc(Settings(PersistMode::kAdr));
  PersistCounters before = pc.counters();
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&pc] {
      for (int i = 0; i < 1000; ++i) pc.persist(buffer + (i % 16) * 64, 8);
      pc.drain_media();
    });
  }
  for (auto& t : threads) t.join();
  PersistCounters d = pc.counters() - before;
  EXPECT_EQ(d.persist_calls, 4000u);
  EXPECT_EQ(d.flushes, 4000u);
  EXPECT_EQ(d.fences, 4000u);
  EXPECT_EQ(d.media_writes, 4u * 4);  // each thread drained its 4 XPLines
  EXPECT_EQ(d.wpq_inserts, 4000u);    // every flushed line reaches the WPQ
}

// The shared model merges every thread's lines in one buffer, as the DIMM's does: four
// threads flushing the same four XPLines cost four media writes, not sixteen.
TEST(Counters, SharedMediaModelMergesThreads) {
  PersistSettings s = Settings(PersistMode::kAdr);
  s.media_model = MediaModel::kShared;
  PersistContext pc(s);
  ASSERT_EQ(pc.media_model(), MediaModel::kShared);
  PersistCounters before = pc.counters();
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&pc] {
      for (int i = 0; i < 1000; ++i) pc.persist(buffer + (i % 16) * 64, 8);
    });
  }
  for (auto& t : threads) t.join();
  pc.drain_media();  // any thread drains the shared buffer
  PersistCounters d = pc.counters() - before;
  EXPECT_EQ(d.wpq_inserts, 4000u);
  EXPECT_EQ(d.media_writes, 4u);
  EXPECT_EQ(d.media_rmw, 0u);  // all four lines of each XPLine were written
}

// More threads at once than any fixed table would hold, oversubscribed: each keeps its own
// counters and none is dropped.
TEST(Counters, NoThreadLimit) {
  PersistContext pc(Settings(PersistMode::kEadr));
  constexpr int kThreads = 1100;
  std::vector<std::thread> threads;
  std::atomic<int> arrived{0};
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&] {
      pc.persist(buffer, 8);
      arrived.fetch_add(1);
      while (arrived.load() < kThreads) std::this_thread::yield();  // all alive at once
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(pc.counters().fences, static_cast<uint64_t>(kThreads));
  EXPECT_GE(ThreadIdBound(), static_cast<uint32_t>(kThreads));
}

class CountingHook : public PersistHook {
 public:
  void on_flush(uintptr_t first, size_t lines) override { flushed += lines; }
  void on_fence() override { ++fences; }
  size_t flushed = 0, fences = 0;
};

TEST(Hook, SeesTheFlushAndFenceStream) {
  CountingHook hook;
  PersistContext pc(Settings(PersistMode::kAdr));
  PersistHook* old = pc.set_hook(&hook);
  pc.persist(buffer + 60, 100);
  pc.flush(buffer, 256);
  pc.set_hook(old);
  EXPECT_EQ(hook.flushed, 7u);
  EXPECT_EQ(hook.fences, 1u);
}

TEST(FlushInstruction, IsDetected) {
  std::string name = flush_instruction_name();
  EXPECT_TRUE(name == "clwb" || name == "clflushopt" || name == "clflush") << name;
}

TEST(WriteLatency, IsPaidAtTheFence) {
  PersistSettings settings = Settings(PersistMode::kAdr);
  settings.write_latency_ns = 20000;
  PersistContext pc(settings);
  auto t0 = std::chrono::steady_clock::now();
  pc.persist(buffer, 64 * 10);  // 10 lines x 20 us
  auto ns = std::chrono::duration_cast<std::chrono::nanoseconds>(
                std::chrono::steady_clock::now() - t0)
                .count();
  EXPECT_GE(ns, 200000);
}

}  // namespace
}  // namespace pmindex::pm
