// Level hashing's own tests: a lockstep model with verify() through several resizes, the
// persistence instructions of each write, crash images at every fence of a resize and of a
// movement (recovered, checked, nothing leaked), with the mutants that break those paths
// caught by the same images. Concurrency: levelhash_concurrent_test.cc.
#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <functional>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "common/test_util.h"
#include "pm/alloc.h"
#include "pm/mix64.h"
#include "pm/mutant.h"
#include "pm/persist.h"
#include "pmindex/index.h"

namespace pmindex::testing {
namespace {

Options PoolOptions(uint64_t mib = 2) {
  Options o;
  o.pool_size = mib << 20;
  return o;
}

std::string K(uint64_t k) { return std::string(IntKey(k).view()); }
std::string V(uint64_t v) { return std::string(IntValue(v)); }

uint64_t Stat(Index& index, const std::string& name) {
  for (const auto& [n, v] : index.stats().nodes)
    if (n == name) return v;
  return 0;
}

// Random inserts, updates, upserts, removes and lookups over a small key space (0 and
// 2^64-1 included) in lockstep with std::map; verify() and a full iteration every 500 ops.
TEST(LevelHashModelTest, LockstepWithVerifyThroughResizes) {
  const uint64_t seed = TestSeed(1);
  SCOPED_TRACE(SeedTrace(seed));
  TempDir dir;
  auto idx = CreateIndex("levelhash", dir.file("pool"), PoolOptions(16));
  ASSERT_TRUE(idx.ok()) << idx.status().ToString();
  Index& index = *idx.value();
  std::map<uint64_t, uint64_t> model;
  std::mt19937_64 rng(seed);
  const uint64_t n = Scale(40000);
  std::string v;
  for (uint64_t op = 0; op < n; ++op) {
    const uint64_t r = rng() % 3000;
    const uint64_t key = r == 0 ? 0 : r == 1 ? UINT64_MAX : pm::Mix64(r);
    const uint64_t value = rng();
    const bool present = model.count(key) != 0;
    switch (rng() % 5) {
      case 0:
      case 1:
        ASSERT_EQ(index.insert(K(key), V(value)).ok(), !present) << op;
        if (!present) model[key] = value;
        break;
      case 2:
        ASSERT_EQ(index.update(K(key), V(value)).ok(), present) << op;
        if (present) model[key] = value;
        break;
      case 3:
        ASSERT_TRUE(index.upsert(K(key), V(value)).ok()) << op;
        model[key] = value;
        break;
      default:
        ASSERT_EQ(index.remove(K(key)).ok(), present) << op;
        model.erase(key);
    }
    ASSERT_EQ(index.lookup(K(key), &v).ok(), model.count(key) != 0) << op;
    if (model.count(key)) {
      ASSERT_EQ(IntValue::Decode(v), model[key]) << op;
    }
    if (op % 500 == 499) {
      ASSERT_TRUE(index.verify().ok()) << op << ": " << index.verify().ToString();
      std::map<uint64_t, uint64_t> seen;
      ASSERT_TRUE(index.for_each([&](std::string_view k, std::string_view val) {
                         EXPECT_TRUE(seen.emplace(IntKey::Decode(k), IntValue::Decode(val)).second);
                         return true;
                       }).ok());
      ASSERT_EQ(seen, model) << op;
      ASSERT_EQ(index.stats().keys, model.size());
    }
  }
  EXPECT_GE(Stat(index, "top_buckets"), 256u) << "the table never grew";
}

// Fences per write (single thread): insert into a free slot 2 (pair, token), remove 1,
// update into a free slot of its bucket 2, update of a full bucket's item in place 1.
TEST(LevelHashModelTest, FencesPerWrite) {
  TempDir dir;
  auto idx = CreateIndex("levelhash", dir.file("pool"), PoolOptions());
  ASSERT_TRUE(idx.ok());
  Index& index = *idx.value();
  ASSERT_TRUE(index.insert(K(1), V(1)).ok());  // creates the levels
  auto fences = [&](const std::function<void()>& op) {
    const PersistCounters before = index.pool()->persist_context().thread_counters();
    op();
    return (index.pool()->persist_context().thread_counters() - before).fences;
  };
  EXPECT_EQ(fences([&] { ASSERT_TRUE(index.insert(K(2), V(2)).ok()); }), 2u);
  EXPECT_EQ(fences([&] { ASSERT_TRUE(index.update(K(2), V(3)).ok()); }), 2u);
  EXPECT_EQ(fences([&] { ASSERT_TRUE(index.remove(K(2)).ok()); }), 1u);
  EXPECT_EQ(fences([&] { ASSERT_TRUE(index.update(K(7), V(3)).IsNotFound()); }), 0u);
}

// The load factor (items / slots of both levels) at which each resize happens: one-step
// movements and B2T keep tables past the first few sizes well filled before they grow.
TEST(LevelHashModelTest, LoadFactorAtResize) {
  TempDir dir;
  auto idx = CreateIndex("levelhash", dir.file("pool"), PoolOptions(64));
  ASSERT_TRUE(idx.ok());
  Index& index = *idx.value();
  uint64_t top = 0;
  pm::PersistContext& pc = index.pool()->persist_context();
  for (uint64_t i = 1; i <= Scale(400000); ++i) {
    const uint64_t before = pc.thread_counters().fences;
    ASSERT_TRUE(index.insert(K(pm::Mix64(i)), V(i)).ok());
    if (pc.thread_counters().fences - before <= 5) continue;  // no resize (at most a move)
    const uint64_t now = Stat(index, "top_buckets");
    if (top >= 1024) {  // the load factor before this insert's resize
      const double load = double(i - 1) / double(top * 3 / 2 * 4);
      std::printf("resize %llu -> %llu top buckets at load factor %.3f\n",
                  static_cast<unsigned long long>(top), static_cast<unsigned long long>(now),
                  load);
      EXPECT_GT(load, 0.75) << "resized at " << top << " top buckets";
    }
    top = now;
  }
}

// Copies the pool's bytes at every `every`-th fence while armed (the process-crash view).
class CopyAtFences : public PersistHook {
 public:
  CopyAtFences(const Pool& pool, uint64_t every) : pool_(pool), every_(every) {}
  void on_flush(uintptr_t, size_t) override {}
  void on_fence() override {
    if (!armed_ || ++fences_ % every_ != 0) return;
    images_.emplace_back(pool_.base(), pool_.base() + pool_.size());
  }
  bool armed_ = false;
  std::vector<std::vector<char>> images_;

 private:
  const Pool& pool_;
  uint64_t every_;
  uint64_t fences_ = 0;
};

// The keys of a workload and the index of the insert whose crash images are taken.
struct Workload {
  std::vector<uint64_t> keys;
  size_t target = 0;
};

// Inserts keys until `pick` says the last insert is the one to interrupt.
using Pick = std::function<bool(Index&, uint64_t fences, uint64_t top_before)>;
Workload FindInsert(const Pick& pick) {
  TempDir dir;
  Workload w;
  auto idx = CreateIndex("levelhash", dir.file("pool"), PoolOptions());
  EXPECT_TRUE(idx.ok());
  Index& index = *idx.value();
  for (uint64_t i = 1; i < 5000; ++i) {
    const uint64_t bits = Stat(index, "top_buckets");
    const PersistCounters before = index.pool()->persist_context().thread_counters();
    EXPECT_TRUE(index.insert(K(pm::Mix64(i)), V(i)).ok());
    w.keys.push_back(pm::Mix64(i));
    const uint64_t fences = (index.pool()->persist_context().thread_counters() - before).fences;
    if (pick(index, fences, bits)) {
      w.target = w.keys.size() - 1;
      return w;
    }
  }
  ADD_FAILURE() << "no such insert";
  return w;
}

// Runs the workload with images at every fence of its target insert, then checks each:
// recovery, verify(), every earlier key with its value, the target either way, nothing
// leaked, and the table takes more writes. Returns how many images failed a check.
int CheckImagesOfTarget(const Workload& w, bool expect_clean, size_t min_images) {
  TempDir dir;
  std::vector<std::vector<char>> images;
  {
    auto idx = CreateIndex("levelhash", dir.file("pool"), PoolOptions());
    EXPECT_TRUE(idx.ok());
    Index& index = *idx.value();
    CopyAtFences copier(*index.pool(), 1);  // a resize or a move has few fences
    index.pool()->persist_context().set_hook(&copier);
    for (size_t i = 0; i <= w.target; ++i) {
      copier.armed_ = i == w.target;
      EXPECT_TRUE(index.insert(K(w.keys[i]), V(i + 1)).ok());
    }
    index.pool()->persist_context().set_hook(nullptr);
    images = std::move(copier.images_);
  }
  EXPECT_GE(images.size(), min_images);
  int failed = 0;
  for (size_t n = 0; n < images.size(); ++n) {
    SCOPED_TRACE("image at fence " + std::to_string(n));
    const std::string path = dir.file("crashed");
    std::ofstream(path, std::ios::binary | std::ios::trunc)
        .write(images[n].data(), static_cast<std::streamsize>(images[n].size()));
    auto idx = OpenIndex(path, PoolOptions(), "levelhash");
    if (!idx.ok()) {
      ++failed;
      continue;
    }
    Index& index = *idx.value();
    bool ok = index.verify().ok() &&
              index.pool()->allocator().allocated_bytes() == index.stats().pm_bytes;
    std::string v;
    for (size_t i = 0; i < w.target && ok; ++i)
      ok = index.lookup(K(w.keys[i]), &v).ok() && IntValue::Decode(v) == i + 1;
    for (size_t i = 0; i <= w.target && ok; ++i) {  // a duplicate would come back
      const bool present = index.lookup(K(w.keys[i]), nullptr).ok();
      ok = (!present || index.remove(K(w.keys[i])).ok()) &&
           !index.lookup(K(w.keys[i]), nullptr).ok();
    }
    ok = ok && index.insert(K(42), V(42)).ok() && index.verify().ok();
    if (!ok) ++failed;
    if (expect_clean) {
      EXPECT_TRUE(ok) << index.verify().ToString();
    }
  }
  return failed;
}

Workload ResizeWorkload() {
  // The second resize (top 8 -> 16): an old bottom of 4 buckets moves up.
  return FindInsert([](Index& index, uint64_t, uint64_t top_before) {
    return top_before == 8 && Stat(index, "top_buckets") == 16;
  });
}

Workload MoveWorkload() {
  // An insert that moved an item (a commit of 2 fences, the source's clear, then the
  // key's own 2) without resizing.
  return FindInsert([](Index& index, uint64_t fences, uint64_t top_before) {
    return fences == 5 && top_before == Stat(index, "top_buckets");
  });
}

TEST(LevelHashRecoveryTest, ResizeInterruptedAtEveryFence) {
  EXPECT_EQ(CheckImagesOfTarget(ResizeWorkload(), true, 8), 0);
}

TEST(LevelHashRecoveryTest, MoveInterruptedAtEveryFence) {
  EXPECT_EQ(CheckImagesOfTarget(MoveWorkload(), true, 5), 0);
}

// The same images catch the mutants of these paths.
TEST(LevelHashRecoveryTest, MutantsAreCaughtByTheImages) {
  PMINDEX_REQUIRE_MUTANTS();
  struct Case {
    const char* mutant;
    Workload w;
    size_t images;
  };
  for (const Case& c : {Case{"levelhash.publish_before_rehash", ResizeWorkload(), 8},
                        Case{"levelhash.clear_source_first", MoveWorkload(), 5},
                        Case{"levelhash.recovery_keeps_duplicate", MoveWorkload(), 5}}) {
    ASSERT_TRUE(pm::set_mutant(c.mutant));
    const int failed = CheckImagesOfTarget(c.w, false, c.images);
    ASSERT_TRUE(pm::set_mutant(""));
    EXPECT_GT(failed, 0) << c.mutant << " survived";
  }
}

// Growth from empty, closed and reopened: every key there, nothing leaked, verify clean.
TEST(LevelHashRecoveryTest, ReopenAfterGrowthLeaksNothing) {
  TempDir dir;
  const uint64_t n = Scale(20000);
  {
    auto idx = CreateIndex("levelhash", dir.file("pool"), PoolOptions(16));
    ASSERT_TRUE(idx.ok());
    for (uint64_t i = 0; i < n; ++i) ASSERT_TRUE(idx.value()->insert(K(i * 7), V(i)).ok());
    for (uint64_t i = 0; i < n; i += 3) ASSERT_TRUE(idx.value()->remove(K(i * 7)).ok());
  }
  auto idx = OpenIndex(dir.file("pool"), PoolOptions(16), "levelhash");
  ASSERT_TRUE(idx.ok()) << idx.status().ToString();
  Index& index = *idx.value();
  ASSERT_TRUE(index.verify().ok()) << index.verify().ToString();
  EXPECT_EQ(index.pool()->allocator().allocated_bytes(), index.stats().pm_bytes);
  std::string v;
  for (uint64_t i = 0; i < n; ++i) {
    ASSERT_EQ(index.lookup(K(i * 7), &v).ok(), i % 3 != 0) << i;
    if (i % 3) {
      ASSERT_EQ(IntValue::Decode(v), i);
    }
  }
  EXPECT_EQ(index.stats().keys, n - (n + 2) / 3);
}

}  // namespace
}  // namespace pmindex::testing
