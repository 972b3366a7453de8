// P-CLHT under concurrency (more threads than cores), from a 1-bucket table so that resizes
// freeze and copy chains while writers wait and lock-free readers read on: writers on
// disjoint keys against their own models, writers racing on shared keys, readers that must
// always find keys that never change (across every resize) and never see a value that was
// not written for the key they asked, and full iterations that see each unchanged key
// once. Run under -DPMINDEX_SANITIZE=thread too (label tsan).
#include <gtest/gtest.h>

#include <atomic>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "common/test_util.h"
#include "pm/mix64.h"
#include "pmindex/index.h"

namespace pmindex::testing {
namespace {

std::string K(uint64_t k) { return std::string(IntKey(k).view()); }
std::string V(uint64_t v) { return std::string(IntValue(v)); }

// Values carry their key in the high bits: a value read under another key is caught.
uint64_t ValueFor(uint64_t key, uint64_t version) { return (key << 20) | (version & 0xFFFFF); }
bool Belongs(uint64_t key, uint64_t value) { return (value >> 20) == (key & ((1ull << 44) - 1)); }

class PclhtConcurrentTest : public ::testing::Test {
 protected:
  void SetUp() override {
    Options o;
    o.pool_size = 64ull << 20;
    auto idx = CreateIndex("pclht", dir_.file("pool"), o);
    ASSERT_TRUE(idx.ok()) << idx.status().ToString();
    index_ = std::move(idx.value());
  }
  uint64_t resizes() {
    for (const auto& [name, n] : index_->stats().nodes)
      if (name == "resizes") return n;
    return 0;
  }
  TempDir dir_;
  std::unique_ptr<Index> index_;
};

// Writers on disjoint keys (insert, update, remove, each checked against the writer's own
// model) while readers look up stable keys (inserted before, never written again) and
// random writer keys; the table grows from 1 bucket meanwhile. At the end the index is the
// union of the models.
TEST_F(PclhtConcurrentTest, WritersAndLockFreeReadersThroughResizes) {
  constexpr int kWriters = 3, kReaders = 2;
  const uint64_t stable = 64, per_writer = Scale(12000);
  for (uint64_t s = 1; s <= stable; ++s) {
    ASSERT_TRUE(index_->insert(K(s << 40), V(ValueFor(s << 40, 1))).ok());
  }
  std::vector<std::map<uint64_t, uint64_t>> models(kWriters);
  std::atomic<int> writers_left{kWriters};
  std::atomic<int> failures{0}, missing{0}, foreign{0};
  std::vector<std::thread> threads;
  for (int w = 0; w < kWriters; ++w) {
    threads.emplace_back([&, w] {
      std::mt19937_64 rng(TestSeed(7) + w);
      auto& model = models[w];
      for (uint64_t i = 0; i < per_writer; ++i) {
        const uint64_t k = ((rng() % 6000) * kWriters + w + 1) | (static_cast<uint64_t>(w) << 32);
        const uint64_t v = ValueFor(k, i);
        const bool present = model.count(k) != 0;
        const uint64_t dice = rng() % 10;
        bool ok;
        if (dice < 6) {
          ok = index_->insert(K(k), V(v)).IsAlreadyExists() == present;
          model.emplace(k, v);
        } else if (dice < 8) {
          ok = index_->update(K(k), V(v)).ok() == present;
          if (present) model[k] = v;
        } else {
          ok = index_->remove(K(k)).ok() == present;
          model.erase(k);
        }
        if (!ok) failures.fetch_add(1);
      }
      writers_left.fetch_sub(1);
    });
  }
  for (int r = 0; r < kReaders; ++r) {
    threads.emplace_back([&, r] {
      std::mt19937_64 rng(TestSeed(8) + r);
      std::string v;
      while (writers_left.load() > 0) {
        const uint64_t s = (1 + rng() % stable) << 40;
        if (!index_->lookup(K(s), &v).ok() || IntValue::Decode(v) != ValueFor(s, 1))
          missing.fetch_add(1);
        const uint64_t w = rng() % kWriters;
        const uint64_t k = ((rng() % 6000) * kWriters + w + 1) | (w << 32);
        if (index_->lookup(K(k), &v).ok() && !Belongs(k, IntValue::Decode(v))) {
          foreign.fetch_add(1);
        }
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(failures.load(), 0) << "a writer's result disagreed with its model";
  EXPECT_EQ(missing.load(), 0) << "a reader missed a key that never changed";
  EXPECT_EQ(foreign.load(), 0) << "a reader saw a value not written for its key";
  EXPECT_GE(resizes(), 5u);
  ASSERT_TRUE(index_->verify().ok()) << index_->verify().ToString();
  std::map<uint64_t, uint64_t> all;
  for (uint64_t s = 1; s <= stable; ++s) all[s << 40] = ValueFor(s << 40, 1);
  for (const auto& m : models) all.insert(m.begin(), m.end());
  std::map<uint64_t, uint64_t> seen;
  ASSERT_TRUE(index_->for_each([&](std::string_view k, std::string_view v) {
                        seen[IntKey::Decode(k)] = IntValue::Decode(v);
                        return true;
                      }).ok());
  EXPECT_EQ(seen, all);
}

// Threads upsert and remove the same few keys (one chain's lock contended, key 0 among
// them); every value read is one written for its key, and the end state is consistent.
TEST_F(PclhtConcurrentTest, RacingWritersOnSharedKeys) {
  constexpr int kThreads = 4;
  const uint64_t ops = Scale(20000);
  std::atomic<int> foreign{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      std::mt19937_64 rng(TestSeed(9) + t);
      std::string v;
      for (uint64_t i = 0; i < ops; ++i) {
        const uint64_t k = rng() % 40;
        switch (rng() % 4) {
          case 0: index_->upsert(K(k), V(ValueFor(k, i))).IgnoreError(); break;
          case 1: index_->insert(K(k), V(ValueFor(k, i))).IgnoreError(); break;
          case 2: index_->remove(K(k)).IgnoreError(); break;
          default:
            if (index_->lookup(K(k), &v).ok() && !Belongs(k, IntValue::Decode(v)))
              foreign.fetch_add(1);
        }
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(foreign.load(), 0);
  ASSERT_TRUE(index_->verify().ok()) << index_->verify().ToString();
  uint64_t n = 0;
  ASSERT_TRUE(index_->for_each([&](std::string_view k, std::string_view v) {
                        EXPECT_TRUE(Belongs(IntKey::Decode(k), IntValue::Decode(v)));
                        ++n;
                        return true;
                      }).ok());
  EXPECT_EQ(n, index_->stats().keys);
}

// Full iterations while a writer grows the table: each stable key is seen exactly once
// (a resize during an iteration is not followed, the old frozen table is read to its end).
TEST_F(PclhtConcurrentTest, ForEachSeesUnchangedKeysOnce) {
  const uint64_t stable = 200;
  for (uint64_t s = 1; s <= stable; ++s) {
    ASSERT_TRUE(index_->insert(K(s << 40), V(ValueFor(s << 40, 1))).ok());
  }
  std::atomic<bool> done{false};
  std::thread writer([&] {
    for (uint64_t i = 1; i <= Scale(30000); ++i)
      index_->insert(K(pm::Mix64(i) >> 24), V(ValueFor(pm::Mix64(i) >> 24, 0))).IgnoreError();
    done.store(true);
  });
  int bad = 0, rounds = 0;
  while (!done.load() || rounds == 0) {
    std::map<uint64_t, int> seen;
    index_->for_each([&](std::string_view k, std::string_view) {
      const uint64_t key = IntKey::Decode(k);
      if (key >= (1ull << 40)) seen[key]++;
      return true;
    }).IgnoreError();
    bad += seen.size() != stable;
    for (const auto& [k, n] : seen) bad += n != 1;
    ++rounds;
  }
  writer.join();
  EXPECT_EQ(bad, 0) << "in " << rounds << " iterations";
  ASSERT_TRUE(index_->verify().ok()) << index_->verify().ToString();
}

}  // namespace
}  // namespace pmindex::testing
