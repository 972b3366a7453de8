// The pool allocator: size classes, bulk, out of space, epochs, and rebuild after a crash.
#include "pm/alloc.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <random>
#include <set>
#include <thread>

#include "common/test_kinds.h"
#include "common/test_util.h"
#include "pm/persist.h"

namespace pmindex::pm {
namespace {

using testing::TempDir;

std::unique_ptr<Pool> MakePool(const std::string& path, uint64_t size = 16 << 20,
                               bool poison_freed = false) {
  Options o;
  o.pool_size = size;
  o.poison_freed = poison_freed;
  auto pool = Pool::Create(path, kTestListKind, "", o);
  EXPECT_TRUE(pool.ok()) << pool.status().ToString();
  return std::move(pool).value();
}

std::unique_ptr<Pool> Reopen(const std::string& path) {
  auto pool = Pool::Open(path, kTestListKind, Options());
  EXPECT_TRUE(pool.ok()) << pool.status().ToString();
  return std::move(pool).value();
}

class ListVisitor {
 public:
  explicit ListVisitor(std::vector<uint64_t> blocks) : blocks_(std::move(blocks)) {}
  Status operator()(BlockVisitor& v) const {
    for (uint64_t b : blocks_) {
      if (Status s = v.visit(b); !s.ok()) return s;
    }
    return Status::OK();
  }

 private:
  std::vector<uint64_t> blocks_;
};

TEST(Allocator, BlocksAreDistinctAlignedAndInsideThePool) {
  TempDir dir;
  auto pool = MakePool(dir.file("a.pool"));
  Allocator& a = pool->allocator();
  std::set<std::pair<uint64_t, uint64_t>> ranges;
  std::mt19937_64 rng(1);
  for (int i = 0; i < 2000; ++i) {
    size_t size = 1 + rng() % 3000;
    auto r = a.allocate(size);
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    EXPECT_EQ(*r % 64, 0u);
    EXPECT_GE(a.block_size(*r), size);
    if (a.block_size(*r) % 256 == 0) {
      EXPECT_EQ(*r % 256, 0u);
    }
    EXPECT_TRUE(pool->contains(pool->at<char>(*r), size));
    std::memset(pool->at<char>(*r), 0xab, size);
    ranges.emplace(*r, *r + a.block_size(*r));
  }
  uint64_t end = 0;
  for (auto [lo, hi] : ranges) {  // sorted by start: no overlap
    EXPECT_GE(lo, end);
    end = hi;
  }
}

TEST(Allocator, AllocationPathIssuesNoFlushOrFenceOnceTheChunkIsCarved) {
  TempDir dir;
  auto pool = MakePool(dir.file("a.pool"));
  Allocator& a = pool->allocator();
  ASSERT_TRUE(a.allocate(64).ok());  // carves the chunk (one persist)
  PersistCounters before = pool->persist_context().thread_counters();
  for (int i = 0; i < 1000; ++i) {
    auto r = a.allocate(64);
    ASSERT_TRUE(r.ok());
    a.free(*r);
  }
  PersistCounters d = pool->persist_context().thread_counters() - before;
  EXPECT_EQ(d.flushes, 0u);
  EXPECT_EQ(d.fences, 0u);
}

TEST(Allocator, BulkAndLargeBlocks) {
  TempDir dir;
  auto pool = MakePool(dir.file("a.pool"));
  Allocator& a = pool->allocator();
  uint64_t out[8];
  ASSERT_TRUE(a.allocate_bulk(4096, 8, out, /*zero=*/true).ok());
  for (uint64_t o : out) {
    EXPECT_EQ(a.block_size(o), 4096u);
    EXPECT_EQ(pool->at<char>(o)[100], 0);
  }
  auto big = a.allocate(1 << 20);
  ASSERT_TRUE(big.ok());
  EXPECT_EQ(a.block_size(*big), 1u << 20);
  EXPECT_EQ(*big % kChunkSize, 0u);
  a.free(*big);
  auto again = a.allocate(1 << 20);
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(*again, *big);
}

TEST(Allocator, PoisonFillsFreedBlocks) {
  TempDir dir;
  auto pool = MakePool(dir.file("a.pool"), 16 << 20, /*poison_freed=*/true);
  auto plain = MakePool(dir.file("b.pool"));  // the setting is the pool's, not the process's
  Allocator& a = pool->allocator();
  auto small = a.allocate(256, /*zero=*/true);
  ASSERT_TRUE(small.ok());
  a.free(*small);
  for (size_t i = 0; i < 256; ++i) ASSERT_EQ(pool->at<unsigned char>(*small)[i], kPoisonByte) << i;
  auto big = a.allocate(3 * kChunkSize);
  ASSERT_TRUE(big.ok());
  a.free(*big);
  EXPECT_EQ(pool->at<unsigned char>(*big)[3 * kChunkSize - 1], kPoisonByte);
  auto again = plain->allocator().allocate(256);
  ASSERT_TRUE(again.ok());
  std::memset(plain->at<char>(*again), 0x11, 256);
  plain->allocator().free(*again);
  EXPECT_EQ(plain->at<unsigned char>(*again)[255], 0x11);  // off: the free leaves the bytes
}

TEST(Allocator, OutOfSpaceLeavesThePoolUsable) {
  TempDir dir;
  auto pool = MakePool(dir.file("a.pool"), 4 << 20);
  Allocator& a = pool->allocator();
  std::vector<uint64_t> got;
  Status last;
  for (;;) {
    auto r = a.allocate(1024);
    if (!r.ok()) {
      last = r.status();
      break;
    }
    got.push_back(*r);
  }
  EXPECT_TRUE(last.IsOutOfSpace()) << last.ToString();
  EXPECT_GT(got.size(), 1000u);
  uint64_t bulk[4];
  EXPECT_TRUE(a.allocate_bulk(1024, 4, bulk).IsOutOfSpace());
  for (size_t i = 0; i < 10; ++i) a.free(got[i]);
  for (size_t i = 0; i < 10; ++i) EXPECT_TRUE(a.allocate(1024).ok());
  EXPECT_TRUE(a.allocate(1024).status().IsOutOfSpace());
}

TEST(Allocator, RebuildFreesUnreachableBlocksAndKeepsReachableOnes) {
  TempDir dir;
  std::string path = dir.file("a.pool");
  std::vector<uint64_t> reachable, leaked;
  {
    auto pool = MakePool(path);
    Allocator& a = pool->allocator();
    for (int i = 0; i < 300; ++i) {
      auto r = a.allocate(i % 2 ? 128 : 5000);
      ASSERT_TRUE(r.ok());
      (i % 3 == 0 ? leaked : reachable).push_back(*r);
    }
    auto big = a.allocate(600 << 10);
    ASSERT_TRUE(big.ok());
    leaked.push_back(*big);
    // No close: every open rebuilds anyway.
  }
  auto pool = Reopen(path);
  Allocator& a = pool->allocator();
  ASSERT_TRUE(a.rebuild(ListVisitor(reachable)).ok());
  std::set<uint64_t> live(reachable.begin(), reachable.end());
  std::set<uint64_t> reused;
  for (int i = 0; i < 300; ++i) {
    auto r = a.allocate(i % 2 ? 128 : 5000);
    ASSERT_TRUE(r.ok());
    EXPECT_EQ(live.count(*r), 0u) << "handed out a reachable block";
    reused.insert(*r);
  }
  size_t leaked_reused = 0;
  for (uint64_t l : leaked) leaked_reused += reused.count(l);
  EXPECT_GT(leaked_reused, 0u) << "unreachable blocks were not reclaimed";
  EXPECT_EQ(a.allocated_bytes() >= reachable.size() * 128, true);
}

TEST(Allocator, RebuildUncarvesChunksWithNothingReachable) {
  TempDir dir;
  std::string path = dir.file("a.pool");
  {
    auto pool = MakePool(path);
    for (int i = 0; i < 100; ++i) ASSERT_TRUE(pool->allocator().allocate(4096).ok());
    ASSERT_TRUE(pool->allocator().allocate(700 << 10).ok());
    EXPECT_GT(pool->allocator().carved_chunks(), 2u);
  }
  auto pool = Reopen(path);
  ASSERT_TRUE(pool->allocator().rebuild(ListVisitor({})).ok());
  EXPECT_EQ(pool->allocator().carved_chunks(), 0u);
  EXPECT_EQ(pool->allocator().allocated_bytes(), 0u);
}

TEST(Allocator, RebuildReportsCorruption) {
  TempDir dir;
  std::string path = dir.file("a.pool");
  uint64_t b;
  {
    auto pool = MakePool(path);
    b = *pool->allocator().allocate(256);
  }
  auto pool = Reopen(path);
  Allocator& a = pool->allocator();
  Status twice = a.rebuild(ListVisitor({b, b}));
  EXPECT_TRUE(twice.IsCorruption());
  EXPECT_NE(twice.ToString().find("twice"), std::string::npos) << twice.ToString();
  EXPECT_TRUE(a.rebuild(ListVisitor({b + 64})).IsCorruption());  // not a block boundary
  EXPECT_TRUE(a.rebuild(ListVisitor({pool->size() - 64})).IsCorruption());  // uncarved chunk
  EXPECT_TRUE(a.rebuild(ListVisitor({64})).IsCorruption());  // inside the header
  EXPECT_TRUE(a.rebuild(ListVisitor({b})).ok());
}

TEST(Allocator, RetiredBlocksWaitForOpenGuards) {
  TempDir dir;
  auto pool = MakePool(dir.file("a.pool"));
  Allocator& a = pool->allocator();
  uint64_t victim = *a.allocate(64);
  std::atomic<bool> guard_open{false}, release{false};
  std::thread reader([&] {
    auto g = a.epoch_guard();
    guard_open = true;
    while (!release) std::this_thread::yield();
  });
  while (!guard_open) std::this_thread::yield();
  a.retire(victim);
  for (int i = 0; i < 10; ++i) a.reclaim();
  std::set<uint64_t> handed;
  for (int i = 0; i < 5000; ++i) handed.insert(*a.allocate(64));
  EXPECT_EQ(handed.count(victim), 0u) << "freed while a reader could hold it";
  release = true;
  reader.join();
  for (int i = 0; i < 4; ++i) a.reclaim();
  bool reused = false;
  for (int i = 0; i < 100 && !reused; ++i) reused = *a.allocate(64) == victim;
  EXPECT_TRUE(reused);
}

TEST(Allocator, ConcurrentAllocateAndFree) {
  TempDir dir;
  auto pool = MakePool(dir.file("a.pool"), 64 << 20);
  Allocator& a = pool->allocator();
  std::vector<std::thread> threads;
  std::vector<std::vector<uint64_t>> kept(4);
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      std::mt19937_64 rng(t);
      std::vector<uint64_t> mine;
      for (uint64_t i = 0; i < testing::Scale(20000); ++i) {
        if (!mine.empty() && rng() % 3 == 0) {
          a.free(mine.back());
          mine.pop_back();
        } else {
          auto r = a.allocate(64 + rng() % 1000);
          ASSERT_TRUE(r.ok());
          *pool->at<uint64_t>(*r) = *r;
          mine.push_back(*r);
        }
      }
      kept[t] = mine;
    });
  }
  for (auto& t : threads) t.join();
  std::set<uint64_t> all;
  for (auto& v : kept) {
    for (uint64_t o : v) {
      EXPECT_TRUE(all.insert(o).second);
      EXPECT_EQ(*pool->at<uint64_t>(o), o);
    }
  }
}

TEST(Allocator, BlockSizeOutsideTheChunksIsZero) {
  // verify() asks for the block size of offsets read from a possibly damaged pool.
  TempDir dir;
  auto pool = MakePool(dir.file("p.pool"), 4 << 20);
  Allocator& a = pool->allocator();
  Result<uint64_t> b = a.allocate(100);
  ASSERT_TRUE(b.ok());
  EXPECT_EQ(a.block_size(*b), 128u);
  for (uint64_t off : {uint64_t{0}, uint64_t{64}, uint64_t{4096}, pool->size() - 64,
                       pool->size() + 4096, ~uint64_t{0}}) {
    EXPECT_EQ(a.block_size(off), 0u) << off;
  }
}

TEST(Allocator, AFullPoolServesSmallRequestsFromLargerFreeBlocks) {
  TempDir dir;
  auto pool = MakePool(dir.file("p.pool"), 4 << 20);
  Allocator& a = pool->allocator();
  std::vector<uint64_t> big;
  for (;;) {
    Result<uint64_t> r = a.allocate(1024);
    if (!r.ok()) {
      ASSERT_TRUE(r.status().IsOutOfSpace());
      break;
    }
    big.push_back(*r);
  }
  ASSERT_FALSE(a.allocate(64).ok());  // no chunk left for the 64-byte class
  a.free(big.back());
  Result<uint64_t> small = a.allocate(64);
  ASSERT_TRUE(small.ok()) << small.status().ToString();
  EXPECT_EQ(*small, big.back());
  EXPECT_EQ(a.block_size(*small), 1024u);  // it keeps its class
  a.free(*small);
  EXPECT_TRUE(a.allocate(1024).ok());
}

TEST(Allocator, ReclaimNowFreesRetiredBlocksOfAFullPool) {
  TempDir dir;
  auto pool = MakePool(dir.file("p.pool"), 4 << 20);
  Allocator& a = pool->allocator();
  std::vector<uint64_t> blocks;
  for (;;) {
    Result<uint64_t> r = a.allocate(4096);
    if (!r.ok()) break;
    blocks.push_back(*r);
  }
  {
    auto guard = a.epoch_guard();
    a.retire(blocks.back());  // fewer than a batch: retire() does not reclaim by itself
  }
  EXPECT_FALSE(a.allocate(4096).ok());
  EXPECT_TRUE(a.reclaim_now());
  EXPECT_TRUE(a.allocate(4096).ok());
  EXPECT_FALSE(a.reclaim_now());  // nothing left to reclaim
}

}  // namespace
}  // namespace pmindex::pm

namespace pmindex::pm {
namespace {

// A reader on the 300th live thread (more than any fixed slot table held) is protected by
// its epoch guard like the first: a block retired while it holds the guard is not freed.
TEST(AllocatorEpochs, GuardProtectsOnAnyThreadCount) {
  testing::TempDir dir;
  auto pool = MakePool(dir.file("a.pool"));
  Allocator& a = pool->allocator();
  Result<uint64_t> block = a.allocate(256);
  ASSERT_TRUE(block.ok());
  constexpr int kIdle = 299;
  std::atomic<int> started{0};
  std::atomic<bool> release{false};
  std::vector<std::thread> idle;
  for (int i = 0; i < kIdle; ++i) {
    idle.emplace_back([&] {
      { auto g = a.epoch_guard(); }  // takes a thread id and an epoch slot
      started.fetch_add(1);
      while (!release.load()) std::this_thread::yield();
    });
  }
  while (started.load() < kIdle) std::this_thread::yield();
  std::atomic<bool> guarded{false}, done{false};
  std::thread reader([&] {
    auto g = a.epoch_guard();
    guarded.store(true);
    while (!done.load()) std::this_thread::yield();
  });
  while (!guarded.load()) std::this_thread::yield();
  const uint64_t held = a.allocated_bytes();
  a.retire(*block);
  for (int i = 0; i < 5; ++i) a.reclaim();
  EXPECT_EQ(a.allocated_bytes(), held) << "freed while a guard could still hold it";
  done.store(true);
  reader.join();
  for (int i = 0; i < 5; ++i) a.reclaim();
  EXPECT_EQ(a.allocated_bytes(), held - 256);
  release.store(true);
  for (auto& t : idle) t.join();
}

}  // namespace
}  // namespace pmindex::pm

// The epoch itself (pm/epoch.h), with owners that record what they were handed.
namespace pmindex::pm {
namespace {

struct Recorder final : Reclaimer {
  std::vector<uint64_t> reclaimed;
  void Reclaim(uint64_t offset, void* aux) override {
    EXPECT_EQ(aux, reinterpret_cast<void*>(offset + 1));
    reclaimed.push_back(offset);
  }
};

// Opens and closes a guard on another thread: from then on the epoch has a reader besides
// the caller, and retirements queue (without one they are reclaimed at once).
void CountAnotherThread(Epoch& epoch) {
  std::thread([&] { Epoch::Guard g(epoch); }).join();
}

// While no other thread ever opened a guard, a retirement outside the caller's own guard is
// reclaimed at once; one inside it queues, unless asked to wait for the guard's close
// (after_guard): then it is reclaimed there. Once another thread opened a guard, it queues
// (also one held in a guard that another thread's guard then overlapped).
TEST(Epoch, RetireWithNoOtherGuardReclaimsAtOnce) {
  Epoch epoch;
  Recorder r;
  epoch.Retire(&r, 1, reinterpret_cast<void*>(2));
  EXPECT_EQ(r.reclaimed, (std::vector<uint64_t>{1}));
  {
    Epoch::Guard own(epoch);
    epoch.Retire(&r, 3, reinterpret_cast<void*>(4), 0, /*after_guard=*/true);
    EXPECT_EQ(r.reclaimed.size(), 1u);  // its own guard may hold it
    EXPECT_EQ(epoch.pending(), 1u);
    {
      Epoch::Guard nested(epoch);
    }  // a nested guard's close releases nothing
    EXPECT_EQ(r.reclaimed.size(), 1u);
  }
  EXPECT_EQ(r.reclaimed, (std::vector<uint64_t>{1, 3}));  // at the guard's close
  epoch.Retire(&r, 5, reinterpret_cast<void*>(6));  // own slot counted: still at once
  EXPECT_EQ(r.reclaimed, (std::vector<uint64_t>{1, 3, 5}));
  {
    Epoch::Guard own(epoch);
    epoch.Retire(&r, 7, reinterpret_cast<void*>(8), 0, /*after_guard=*/true);  // held
    CountAnotherThread(epoch);  // then another thread opens a guard
  }
  EXPECT_EQ(r.reclaimed.size(), 3u);  // queued at the close, not reclaimed
  epoch.Retire(&r, 9, reinterpret_cast<void*>(10));
  EXPECT_EQ(r.reclaimed.size(), 3u);
  EXPECT_EQ(epoch.pending(), 2u);
  EXPECT_EQ(epoch.Collect(), 2u);
  Epoch plain;  // without after_guard, a retirement inside the own guard queues
  {
    Epoch::Guard own(plain);
    plain.Retire(&r, 11, reinterpret_cast<void*>(12));
  }
  EXPECT_EQ(plain.pending(), 1u);
  EXPECT_EQ(plain.Collect(), 1u);
}

TEST(Epoch, AnItemWaitsForEveryGuardOpenWhenItWasRetired) {
  Epoch epoch;
  Recorder r;
  {
    Epoch::Guard outer(epoch);
    {
      Epoch::Guard nested(epoch);  // does not end the outer guard's protection
    }
    epoch.Retire(&r, 10, reinterpret_cast<void*>(11));
    EXPECT_EQ(epoch.Collect(), 0u);
    std::thread other([&] { EXPECT_EQ(epoch.Collect(), 0u); });  // held back by this thread
    other.join();
  }
  // A guard opened after the retirement does not hold it back.
  Epoch::Guard later(epoch);
  EXPECT_EQ(epoch.Collect(), 1u);
  EXPECT_EQ(r.reclaimed, std::vector<uint64_t>{10});
  EXPECT_EQ(epoch.pending(), 0u);
}

TEST(Epoch, InstancesAreIndependentAndDrainAndDiscardTakeOnlyTheirOwner) {
  Epoch a, b;
  Recorder ra, rb;
  Epoch::Guard in_b(b);  // a guard of b does not hold back a
  CountAnotherThread(a);
  a.Retire(&ra, 1, reinterpret_cast<void*>(2));
  EXPECT_EQ(a.Collect(), 1u);
  b.Retire(&ra, 3, reinterpret_cast<void*>(4));
  b.Retire(&rb, 5, reinterpret_cast<void*>(6));
  b.Retire(&rb, 7, reinterpret_cast<void*>(8));
  b.Drain(&ra);
  EXPECT_EQ(ra.reclaimed, (std::vector<uint64_t>{1, 3}));
  b.Discard(&rb);
  EXPECT_TRUE(rb.reclaimed.empty());
  EXPECT_EQ(b.pending(), 0u);
}

// A thread's retirements wait in its own queue until its batch is full; a Collect of another
// thread stamps them too, and pending() counts them.
TEST(Epoch, CollectReachesTheQueuesOfOtherThreads) {
  Epoch epoch;
  Recorder r;
  { Epoch::Guard once(epoch); }  // this thread's slot counted: the retirer's items queue
  std::thread retirer([&] {
    for (uint64_t i = 0; i < 3; ++i) epoch.Retire(&r, i, reinterpret_cast<void*>(i + 1));
  });
  retirer.join();
  EXPECT_TRUE(r.reclaimed.empty());  // fewer than a batch: still queued
  EXPECT_EQ(epoch.pending(), 3u);
  {
    Epoch::Guard open(epoch);  // opened before the stamp: holds the items back
    EXPECT_EQ(epoch.Collect(), 0u);
    EXPECT_EQ(epoch.pending(), 3u);
  }
  EXPECT_EQ(epoch.Collect(), 3u);
  EXPECT_EQ(r.reclaimed, (std::vector<uint64_t>{0, 1, 2}));
  std::thread again([&] { epoch.Retire(&r, 9, reinterpret_cast<void*>(10)); });
  again.join();
  epoch.Drain(&r);  // queued items drain as well
  EXPECT_EQ(r.reclaimed.back(), 9u);
  EXPECT_EQ(epoch.pending(), 0u);
}

// Full batches are stamped; they wait for a fence until kFenceItems stamped items add up,
// and that fence reclaims them all (no guard open). A batch after it reclaims nothing: its
// stamps are past what the fence allowed.
TEST(Epoch, RetireFencesOnceTheStampedItemsAddUp) {
  static_assert(Epoch::kFenceItems % Epoch::kBatch == 0);
  Epoch epoch;
  Recorder r;
  CountAnotherThread(epoch);
  for (uint64_t i = 0; i + 1 < Epoch::kFenceItems; ++i) {
    epoch.Retire(&r, i, reinterpret_cast<void*>(i + 1));
  }
  EXPECT_TRUE(r.reclaimed.empty());
  EXPECT_EQ(epoch.pending(), Epoch::kFenceItems - 1);
  epoch.Retire(&r, 999, reinterpret_cast<void*>(1000));
  EXPECT_EQ(r.reclaimed.size(), Epoch::kFenceItems);
  for (uint64_t i = 0; i < Epoch::kBatch; ++i) {
    epoch.Retire(&r, 2000 + i, reinterpret_cast<void*>(2001 + i));
  }
  EXPECT_EQ(r.reclaimed.size(), Epoch::kFenceItems);
  EXPECT_EQ(epoch.pending(), Epoch::kBatch);
  EXPECT_EQ(epoch.Collect(), Epoch::kBatch);
}

// A batch reclaims what the last fence allowed and fences only once enough was stamped since:
// an item a guard held back at its fence waits, after the guard closed, for the next one.
TEST(Epoch, ABatchReclaimsWhatTheLastFenceAllowed) {
  Epoch epoch;
  Recorder r;
  CountAnotherThread(epoch);
  {
    Epoch::Guard open(epoch);
    epoch.Retire(&r, 1, reinterpret_cast<void*>(2), Epoch::kFenceBytes);  // fenced at once
    EXPECT_TRUE(r.reclaimed.empty());  // held back by the open guard
  }
  std::thread other([&] {
    for (uint64_t i = 0; i < Epoch::kBatch; ++i) {
      epoch.Retire(&r, 10 + i, reinterpret_cast<void*>(11 + i));
    }
  });
  other.join();  // one batch stamped, no fence
  EXPECT_TRUE(r.reclaimed.empty());
  EXPECT_EQ(epoch.pending(), 1 + Epoch::kBatch);
  EXPECT_EQ(epoch.Collect(), 1 + Epoch::kBatch);  // fences: another thread's items too
}

// The stamped items hold back at most about kFenceBytes: a block that large is stamped and
// fenced (and, with no guard open, reclaimed) at once, smaller ones once their bytes add up.
TEST(Epoch, RetireFencesOnceTheStampedBytesAddUp) {
  Epoch epoch;
  Recorder r;
  CountAnotherThread(epoch);
  epoch.Retire(&r, 1, reinterpret_cast<void*>(2), Epoch::kFenceBytes);
  EXPECT_EQ(r.reclaimed, (std::vector<uint64_t>{1}));
  const size_t quarter = Epoch::kFenceBytes / 4;
  static_assert(Epoch::kFenceBytes / 4 >= Epoch::kBatchBytes);  // each one stamped at once
  for (uint64_t i = 0; i < 3; ++i) {
    epoch.Retire(&r, 10 + i, reinterpret_cast<void*>(11 + i), quarter);
  }
  EXPECT_EQ(r.reclaimed.size(), 1u);  // three quarters stamped
  EXPECT_EQ(epoch.pending(), 3u);
  epoch.Retire(&r, 13, reinterpret_cast<void*>(14), quarter);
  EXPECT_EQ(r.reclaimed.size(), 5u);
  EXPECT_EQ(epoch.pending(), 0u);
}

}  // namespace
}  // namespace pmindex::pm
