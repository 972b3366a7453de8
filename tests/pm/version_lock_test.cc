// VersionLock (pm/version_lock.h): the word's states, generations, release without a read,
// and mutual exclusion with optimistic readers under oversubscribed threads.
#include "pm/version_lock.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <thread>
#include <vector>

namespace pmindex::pm {
namespace {

TEST(VersionLockTest, LockFromOlderGenerationIsFree) {
  uint64_t word = 0;
  ASSERT_TRUE(VersionLock::Lock(&word, 5));
  EXPECT_FALSE(VersionLock::TryLock(&word, 5));  // held in this generation
  uint64_t v;
  // A reopened pool (generation 6) sees the crashed holder's lock as free.
  ASSERT_TRUE(VersionLock::ReadBegin(&word, 6, &v));
  ASSERT_TRUE(VersionLock::TryLock(&word, 6));
  EXPECT_FALSE(VersionLock::ReadValidate(&word, v));
  VersionLock::MarkObsolete(&word, 6);
  EXPECT_FALSE(VersionLock::TryLock(&word, 6));
  EXPECT_TRUE(VersionLock::IsObsolete(&word, 6));
  EXPECT_FALSE(VersionLock::IsObsolete(&word, 7));  // an obsolete mark from a crash is void
  EXPECT_TRUE(VersionLock::TryLock(&word, 7));
}

TEST(VersionLockTest, ReleaseStoresWhatUnlockWould) {
  // Versions mid-range and at the wrap, words of an older generation, bump or not.
  for (const uint64_t start : {uint64_t{0}, uint64_t{0x40}, uint64_t{0xFFFFFFFC},
                               (uint64_t{3} << 32) | 0x1234, (uint64_t{9} << 32) | 0xFFFFFFFE}) {
    for (const bool bump : {false, true}) {
      SCOPED_TRACE(::testing::Message() << std::hex << start << " bump " << bump);
      uint64_t a = start, b = start, held = 0, held_inline = 0;
      ASSERT_TRUE(VersionLock::Lock(&a, 5, &held));
      ASSERT_TRUE(VersionLock::LockInline(&b, 5, &held_inline));
      EXPECT_EQ(held, a);  // the word as locked
      EXPECT_EQ(held_inline, b);
      uint64_t c = a;
      VersionLock::Unlock(&a, 5, bump);
      VersionLock::Release(&c, held, bump);
      EXPECT_EQ(c, a);
      EXPECT_FALSE(VersionLock::Held(c, 5));
      EXPECT_TRUE(VersionLock::TryLock(&c, 5));
    }
  }
}

TEST(VersionLockTest, ReadersFailAfterAChangeOnly) {
  // A word of generation 1 (the first lock in a generation writes it into the word, and a
  // reader's version holds the whole word).
  uint64_t word = uint64_t{1} << 32;
  uint64_t v;
  ASSERT_TRUE(VersionLock::ReadBegin(&word, 1, &v));
  EXPECT_TRUE(VersionLock::ReadValidate(&word, v));
  // A writer that changed nothing readers see unlocks without a bump: the view stands.
  ASSERT_TRUE(VersionLock::Lock(&word, 1));
  EXPECT_FALSE(VersionLock::ReadValidate(&word, v));  // mid-change for waiting readers
  EXPECT_TRUE(VersionLock::ReadValidate(&word, v, /*wait_for_writer=*/false));
  VersionLock::Unlock(&word, 1, /*bump=*/false);
  EXPECT_TRUE(VersionLock::ReadValidate(&word, v));
  // One that changed it bumps the version: every reader that began before fails.
  ASSERT_TRUE(VersionLock::Lock(&word, 1));
  VersionLock::Unlock(&word, 1);
  EXPECT_FALSE(VersionLock::ReadValidate(&word, v));
  EXPECT_FALSE(VersionLock::ReadValidate(&word, v, /*wait_for_writer=*/false));
  // Readers that do not wait take a version while the lock is held, without the lock bit.
  ASSERT_TRUE(VersionLock::Lock(&word, 1));
  uint64_t during;
  ASSERT_TRUE(VersionLock::ReadBegin(&word, 1, &during, /*wait_for_writer=*/false));
  EXPECT_EQ(during & VersionLock::kLocked, 0u);
  VersionLock::Unlock(&word, 1);
  EXPECT_FALSE(VersionLock::ReadValidate(&word, during, /*wait_for_writer=*/false));
}

TEST(VersionLockTest, TryUpgradeKeepsTheReadersViewOrFails) {
  uint64_t word = uint64_t{2} << 32;  // TryUpgrade needs a word of the caller's generation
  uint64_t v;
  ASSERT_TRUE(VersionLock::ReadBegin(&word, 2, &v));
  ASSERT_TRUE(VersionLock::TryUpgrade(&word, v));  // nothing changed: locked
  EXPECT_TRUE(VersionLock::Held(word, 2));
  EXPECT_FALSE(VersionLock::TryUpgrade(&word, v));  // held
  VersionLock::Unlock(&word, 2);
  EXPECT_FALSE(VersionLock::TryUpgrade(&word, v));  // changed since v
}

TEST(VersionLockTest, VersionWrapsWithinItsBitsAndKeepsTheGeneration) {
  uint64_t word = (uint64_t{4} << 32) | 0xFFFFFFFC;  // the highest version, unlocked
  uint64_t held = 0;
  ASSERT_TRUE(VersionLock::Lock(&word, 4, &held));
  VersionLock::Release(&word, held);
  EXPECT_EQ(word, uint64_t{4} << 32);  // version 0, not locked, generation 4
  ASSERT_TRUE(VersionLock::Lock(&word, 4));
  VersionLock::MarkObsolete(&word, 4);
  EXPECT_TRUE(VersionLock::Obsolete(word, 4));
  EXPECT_TRUE(VersionLock::Held(word, 4));  // an obsolete node stays locked
  uint64_t v;
  EXPECT_FALSE(VersionLock::ReadBegin(&word, 4, &v));
  EXPECT_FALSE(VersionLock::Lock(&word, 4));
}

// Writers keep two counters equal under the lock (Lock, LockInline or TryLock, then Unlock
// or Release); optimistic readers that validate must never see them differ, and no increment
// may be lost. More threads than cores: holders get descheduled (Backoff's yield path).
// Writers go on past their increments until readers have validated kMinValidated reads (for
// at most 20 s: on a loaded machine the readers may wait long for a core), so the torn-read
// check saw reads that raced the writers, however the threads were scheduled.
TEST(VersionLockTest, WritersExcludeEachOtherAndReadersSeeOneState) {
  constexpr int kWriters = 4;
  constexpr int kReaders = 2;
  constexpr int kIncrements = 20000;
  constexpr uint32_t kGen = 3;
  constexpr uint64_t kMinValidated = 200;
  uint64_t word = 0;
  std::atomic<uint64_t> a{0}, b{0};
  std::atomic<bool> done{false};
  std::atomic<uint64_t> torn{0}, validated{0}, increments{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kWriters; ++t) {
    threads.emplace_back([&, t] {
      int i = 0;
      const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
      for (; i < kIncrements || (validated.load(std::memory_order_relaxed) < kMinValidated &&
                                 (i % 1024 != 0 || std::chrono::steady_clock::now() < deadline));
           ++i) {
        uint64_t held = 0;
        switch ((t + i) % 3) {
          case 0:
            ASSERT_TRUE(VersionLock::Lock(&word, kGen, &held));
            break;
          case 1:
            ASSERT_TRUE(VersionLock::LockInline(&word, kGen, &held));
            break;
          default:
            while (!VersionLock::TryLock(&word, kGen)) VersionLock::Backoff(64);
            held = __atomic_load_n(&word, __ATOMIC_RELAXED);
            break;
        }
        a.store(a.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
        b.store(b.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
        if (i % 2 == 0) {
          VersionLock::Unlock(&word, kGen);
        } else {
          VersionLock::Release(&word, held);
        }
      }
      increments.fetch_add(static_cast<uint64_t>(i));
    });
  }
  for (int r = 0; r < kReaders; ++r) {
    threads.emplace_back([&] {
      while (!done.load(std::memory_order_acquire)) {
        uint64_t v;
        if (!VersionLock::ReadBegin(&word, kGen, &v)) continue;
        const uint64_t x = a.load(std::memory_order_relaxed);
        const uint64_t y = b.load(std::memory_order_relaxed);
        if (!VersionLock::ReadValidate(&word, v)) continue;
        validated.fetch_add(1, std::memory_order_relaxed);
        if (x != y) torn.fetch_add(1, std::memory_order_relaxed);
      }
    });
  }
  for (int t = 0; t < kWriters; ++t) threads[t].join();
  done.store(true, std::memory_order_release);
  for (size_t t = kWriters; t < threads.size(); ++t) threads[t].join();
  EXPECT_GE(increments.load(), uint64_t{kWriters} * kIncrements);
  EXPECT_EQ(a.load(), increments.load());
  EXPECT_EQ(b.load(), a.load());
  EXPECT_GE(validated.load(), kMinValidated);
  EXPECT_EQ(torn.load(), 0u) << "of " << validated.load() << " validated reads";
  EXPECT_FALSE(VersionLock::Held(word, kGen));
}

}  // namespace
}  // namespace pmindex::pm
