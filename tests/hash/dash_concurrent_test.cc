// Dash under concurrency (also run under TSan): writers on disjoint keys with splits,
// doublings, displacements and stash inserts under way, lock-free readers beside them; and
// no reader returns an insert whose commit is not yet durable (the two mutants that let one).
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <future>
#include <map>
#include <mutex>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "common/test_util.h"
#include "hash/dash/layout.h"
#include "pm/mutant.h"
#include "pm/persist.h"
#include "pmindex/index.h"

namespace pmindex::testing {
namespace {

std::string K(uint64_t k) { return std::string(IntKey(k).view()); }
std::string V(uint64_t v) { return std::string(IntValue(v)); }

// keys=bytes: keys of varied lengths, each a prefix of others ("k1", "k12", "k12pp").
std::string BytesKey(uint64_t k) { return "k" + std::to_string(k) + std::string(k % 40, 'p'); }

void WritersAndReaders(uint64_t pool_size, uint64_t seed, bool bytes = false) {
  SCOPED_TRACE(SeedTrace(seed));
  TempDir dir;
  Options o;
  o.pool_size = pool_size;
  if (pool_size <= (32ull << 20)) o.index_params = hash::dash::kSmallParams;  // small geometry
  if (bytes) o.index_params = (o.index_params.empty() ? "dash" : o.index_params) + " keys=bytes";
  auto K = [bytes](uint64_t k) { return bytes ? BytesKey(k) : testing::K(k); };
  auto idx = CreateIndex("dash", dir.file("pool"), o);
  ASSERT_TRUE(idx.ok()) << idx.status().ToString();
  Index& index = *idx.value();
  const uint64_t writers = 3, stable = Scale(2000), ops = Scale(20000);
  // Stable keys (never written again) 1..stable; writer t owns keys with k % 4 == t + 1 above.
  for (uint64_t k = 1; k <= stable; ++k) ASSERT_TRUE(index.insert(K(k), V(k * 3)).ok());
  std::vector<std::map<uint64_t, uint64_t>> models(writers);
  std::atomic<bool> done{false};
  std::atomic<uint64_t> reader_errors{0};
  std::vector<std::thread> threads;
  for (uint64_t t = 0; t < writers; ++t) {
    threads.emplace_back([&, t] {
      std::mt19937_64 rng(seed + t);
      auto& m = models[t];
      for (uint64_t i = 0; i < ops; ++i) {
        const uint64_t k = (stable + 1 + rng() % (ops / 2)) * 4 + t + 1;
        const uint64_t v = rng();
        const unsigned dice = rng() % 10;
        Status s;
        if (dice < 6) {
          s = index.upsert(K(k), V(v));
          m[k] = v;
        } else if (dice < 8) {
          s = index.remove(K(k));
          if (s.IsNotFound() && m.count(k) == 0) s = Status::OK();
          m.erase(k);
        } else {
          s = index.insert(K(k), V(v));
          if (s.IsAlreadyExists() && m.count(k) != 0) s = Status::OK();
          m.emplace(k, v);
        }
        ASSERT_TRUE(s.ok()) << s.ToString();
      }
    });
  }
  for (int r = 0; r < 2; ++r) {
    threads.emplace_back([&, r] {
      std::mt19937_64 rng(seed * 31 + r);
      std::string v;
      while (!done.load(std::memory_order_relaxed)) {
        const uint64_t k = 1 + rng() % stable;
        if (!index.lookup(K(k), &v).ok() || v != V(k * 3)) reader_errors.fetch_add(1);
        const Status s = index.lookup(K(rng()), &v);  // absent or a writer's key
        if (!s.ok() && !s.IsNotFound()) reader_errors.fetch_add(1);
      }
    });
  }
  for (uint64_t t = 0; t < writers; ++t) threads[t].join();
  done = true;
  for (size_t t = writers; t < threads.size(); ++t) threads[t].join();
  EXPECT_EQ(reader_errors.load(), 0u) << "a reader missed a stable key or saw a wrong value";
  ASSERT_TRUE(index.verify().ok()) << index.verify().ToString();
  std::map<uint64_t, uint64_t> all;
  for (uint64_t k = 1; k <= stable; ++k) all[k] = k * 3;
  for (const auto& m : models) all.insert(m.begin(), m.end());
  EXPECT_EQ(index.stats().keys, all.size());
  std::map<std::string, uint64_t> seen, want;
  for (const auto& [k, v] : all) want[K(k)] = v;
  ASSERT_TRUE(index.for_each([&](std::string_view k, std::string_view v) {
    seen[std::string(k)] = IntValue::Decode(v);
    return true;
  }).ok());
  EXPECT_TRUE(seen == want) << "iteration differs from the writers' models";
}

TEST(DashConcurrentTest, WritersAndReadersSmallSegments) {
  WritersAndReaders(16ull << 20, TestSeed(21));
}

TEST(DashConcurrentTest, WritersAndReadersLargeSegments) {
  WritersAndReaders(64ull << 20, TestSeed(22));
}

// keys=bytes: readers follow slots to key records while writers insert, remove (records
// retired through the epoch), split and displace.
TEST(DashConcurrentTest, WritersAndReadersByteKeys) {
  WritersAndReaders(16ull << 20, TestSeed(23), true);
}

// At each fence of an insert, a reader in another thread looks the key up and gets 300 ms:
// it must not find the key before the insert's last fence has completed (it waits for the
// bucket's writer, who unlocks only after the commit is durable).
class ReadAtFences : public PersistHook {
 public:
  ReadAtFences(Index& index, std::string key) : index_(index), key_(std::move(key)) {}
  void on_flush(uintptr_t, size_t) override {}
  void on_fence() override {
    if (!armed_) return;
    readers_.push_back(std::async(std::launch::async, [this] {
      std::string v;
      return index_.lookup(key_, &v).ok();
    }));
    if (readers_.back().wait_for(std::chrono::milliseconds(300)) == std::future_status::ready) {
      early_ |= readers_.back().get();
      readers_.pop_back();
    }
  }
  void arm(bool on) { armed_ = on; }
  bool early() const { return early_; }
  void join() {
    for (auto& r : readers_) r.wait();
    readers_.clear();
  }

 private:
  Index& index_;
  std::string key_;
  bool armed_ = false;
  bool early_ = false;
  std::vector<std::future<bool>> readers_;
};

bool ReaderSeesUndurableInsert() {
  TempDir dir;
  Options o;
  o.pool_size = 8ull << 20;
  o.index_params = hash::dash::kSmallParams;
  auto idx = CreateIndex("dash", dir.file("pool"), o);
  EXPECT_TRUE(idx.ok());
  Index& index = *idx.value();
  EXPECT_TRUE(index.insert(K(1), V(1)).ok());  // the table exists: no first segment below
  bool early = false;
  for (uint64_t k = 100; k < 102; ++k) {
    ReadAtFences hook(index, K(k));
    index.pool()->persist_context().set_hook(&hook);
    hook.arm(true);
    EXPECT_TRUE(index.insert(K(k), V(k)).ok());
    hook.arm(false);
    index.pool()->persist_context().set_hook(nullptr);
    hook.join();
    early |= hook.early();
  }
  EXPECT_TRUE(index.verify().ok());
  return early;
}

TEST(DashReaderTest, NoReaderSeesAnInsertBeforeItsCommitIsDurable) {
  EXPECT_FALSE(ReaderSeesUndurableInsert());
  PMINDEX_REQUIRE_MUTANTS();
  ASSERT_TRUE(pm::set_mutant("dash.unlock_before_persist"));
  const bool unlocked_early = ReaderSeesUndurableInsert();
  ASSERT_TRUE(pm::set_mutant("dash.reader_ignores_lock"));
  const bool ignored_lock = ReaderSeesUndurableInsert();
  pm::set_mutant("");
  EXPECT_TRUE(unlocked_early) << "dash.unlock_before_persist was not caught";
  EXPECT_TRUE(ignored_lock) << "dash.reader_ignores_lock was not caught";
}

}  // namespace
}  // namespace pmindex::testing
