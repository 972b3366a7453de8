// Deterministic counter tests for the persistence seam and the XPLine media model.
#include "pm/persist.h"

#include <gtest/gtest.h>
#include <sys/mman.h>

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

// ---- lines written without a flush (UnflushedWriteTracker) ----

// A page-aligned shared mapping, as a pool's.
class Mapping {
 public:
  explicit Mapping(size_t size) : size_(size) {
    p_ = static_cast<char*>(
        mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0));
  }
  ~Mapping() { munmap(p_, size_); }
  char* data() const { return p_; }
  size_t size() const { return size_; }

 private:
  char* p_;
  size_t size_;
};

PersistSettings Tracking(PersistMode mode) {
  PersistSettings s = Settings(mode);
  s.track_unflushed = true;
  return s;
}

// The proof that the mode sees what flush counting cannot: lines stored and never flushed
// (an eADR structure, or a lock word) reach the WPQ only in the tracked context.
TEST(UnflushedWrites, StoresWithoutFlushesReachTheModelOnlyWhenTracked) {
  for (bool tracked : {false, true}) {
    SCOPED_TRACE(tracked ? "tracked" : "flush counting");
    Mapping m(64 * 1024);
    PersistContext pc(tracked ? Tracking(PersistMode::kEadr) : Settings(PersistMode::kEadr));
    ASSERT_TRUE(pc.map(m.data(), m.size()).ok());
    for (int i = 0; i < 10; ++i) m.data()[i * 4096 + 8] = static_cast<char>(i + 1);  // 10 lines
    pc.fence();
    for (int i = 0; i < 10; ++i) m.data()[i * 4096 + 8] = 0x55;  // again: merges in the cache
    pc.fence();
    pc.drain_media();
    const PersistCounters c = pc.counters();
    EXPECT_EQ(c.flushes, 0u);
    EXPECT_EQ(c.wpq_inserts, tracked ? 10u : 0u);
    EXPECT_EQ(c.media_writes, tracked ? 10u : 0u);  // ten XPLines, one dirty line each
    EXPECT_EQ(pc.lines_unflushed(), tracked ? 20u : 0u);
    pc.unmap();
  }
}

// In adr a flushed line is counted once, by its flush; a word on a persistent line that is
// written at every operation and never flushed (a lock) is counted when it is written back.
TEST(UnflushedWrites, FlushedLinesAreCountedOnceAndLockWordsAtTheirWriteBack) {
  Mapping m(64 * 1024);
  PersistContext pc(Tracking(PersistMode::kAdr));
  ASSERT_TRUE(pc.map(m.data(), m.size()).ok());
  char* lock = m.data() + 8192;
  for (int op = 0; op < 100; ++op) {
    lock[0] = static_cast<char>(op | 1);  // take the lock (never flushed)
    m.data()[(op % 4) * 64] = static_cast<char>(op + 1);
    pc.persist(m.data() + (op % 4) * 64, 8);
    lock[0] = 0;
    lock[8] = static_cast<char>(op);  // a version that changes what readers see
  }
  pc.fence();
  pc.drain_media();
  const PersistCounters c = pc.counters();
  EXPECT_EQ(c.flushes, 100u);
  EXPECT_EQ(c.wpq_inserts, 101u);  // the 100 flushes, the lock line once (it stayed cached)
  EXPECT_EQ(pc.lines_written(), 200u);  // each fence saw a data line and the lock line
  pc.unmap();
}

// The cache model writes a dirty line back when newer dirty lines push it out.
TEST(UnflushedWrites, TheCacheModelEvictsItsLeastRecentlyDirtiedLine) {
  Mapping m(64 * 1024);
  UnflushedWriteTracker t(/*cache_lines=*/2);
  ASSERT_TRUE(t.start(m.data(), m.size()).ok());
  std::vector<uintptr_t> out;
  auto emit = [&](uintptr_t line) { out.push_back(line); };
  const auto line = [&](int i) { return reinterpret_cast<uintptr_t>(m.data() + i * 64); };
  m.data()[0] = 1;
  t.collect(emit);
  m.data()[64] = 1;
  t.collect(emit);
  m.data()[0] = 2;  // line 0 is the most recent again
  t.collect(emit);
  EXPECT_TRUE(out.empty());
  m.data()[128] = 1;  // a third dirty line: line 1 goes
  t.collect(emit);
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0], line(1));
  t.note_written_back(line(0), 1);  // flushed: clean, never written back by the cache
  t.collect(emit);
  t.drain(emit);
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(out[1], line(2));
  t.stop();
  m.data()[4096] = 1;  // writable again
}

// Several threads writing the tracked mapping at once: every line is found.
TEST(UnflushedWrites, WritesFromManyThreadsAreAllFound) {
  Mapping m(256 * 1024);
  PersistContext pc(Tracking(PersistMode::kEadr));
  ASSERT_TRUE(pc.map(m.data(), m.size()).ok());
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 256; ++i) {
        m.data()[(t * 256 + i) * 64] = 1;  // 1024 distinct lines, 4 threads
        if (i % 16 == 0) pc.fence();
      }
    });
  }
  for (auto& th : threads) th.join();
  pc.fence();
  pc.drain_media();
  EXPECT_EQ(pc.lines_written(), 1024u);
  EXPECT_EQ(pc.counters().wpq_inserts, 1024u);
  pc.unmap();
}

}  // namespace
}  // namespace pmindex::pm
