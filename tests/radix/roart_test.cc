// ROART's own tests (the registry-parametrized radix suites run it too): the structural
// changes it makes (compaction into leaf arrays, their split, node growth through every type,
// prefix splits, unlinking) in lockstep with a model for integer and byte-string keys;
// scans across unsorted leaf arrays; recovery that leaks nothing (also from crash images);
// a crash at every fence of a prefix split; and the fences and flushes of each kind of insert.
#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "common/model_checker.h"
#include "pm/alloc.h"
#include "pm/persist.h"
#include "pmindex/index.h"
#include "radix/radix_test_util.h"

namespace pmindex::testing {
namespace {

uint64_t Stat(Index& index, const std::string& name) {
  for (const auto& [n, v] : index.stats().nodes)
    if (n == name) return v;
  ADD_FAILURE() << "no stat " << name;
  return 0;
}

std::string K(uint64_t k) { return std::string(IntKey(k).view()); }
uint64_t Bytes2(uint8_t b0, uint8_t b1, uint64_t low) {
  return uint64_t{b0} << 56 | uint64_t{b1} << 48 | (low & 0xFFFFFFFFFFFFull);
}

// Keys that make every structural change: a few first bytes, each with keys spread over a
// growing number of second bytes (leaf arrays fill and split; the nodes the splits make grow
// 4 -> 16 -> 48 -> 256), long shared prefixes that later keys leave (prefix splits), and for
// byte strings keys that are prefixes of others (end words).
std::string StructuralKey(std::mt19937_64& rng, bool bytes, uint64_t round) {
  const uint64_t width = 2 + round * 40;  // second bytes in use grow with the rounds
  const uint64_t r = rng();
  if (!bytes || r % 3 == 0) {
    const uint8_t b0 = static_cast<uint8_t>(0x40 + r % 3);
    return K(Bytes2(b0, static_cast<uint8_t>((r >> 8) % width), 0x778899000000ull | ((r >> 16) % 400)));
  }
  static const char* const kStems[] = {"user/", "user/profile/", "user/profile/settings/", "u",
                                       "item:0000000000000000:"};
  std::string k = kStems[(r >> 4) % 5];
  const uint64_t n = (r >> 12) % (50 + 100 * round);
  if (n % 7 != 0) k += std::to_string(n);
  return k;
}

void StructuralLockstep(bool bytes, uint64_t seed) {
  TempDir dir;
  ModelChecker checker(TestSeed(seed));
  std::mt19937_64 rng(checker.seed());
  ASSERT_NO_FATAL_FAILURE(checker.create("roart", dir.file("pool"), SmallPoolOptions()));
  constexpr OpMix kMix{.insert = 45, .update = 10, .upsert = 15, .remove = 15, .lookup = 15};
  const uint64_t per_round = Scale(2500);
  for (uint64_t round = 0; round < 6; ++round) {
    for (uint64_t i = 0; i < per_round; ++i) {
      std::string value = rng() % 2 ? std::string(IntValue(rng())) : std::string(rng() % 30, 'v');
      ASSERT_NO_FATAL_FAILURE(checker.random_op(rng, StructuralKey(rng, bytes, round), value, kMix));
    }
    std::vector<std::string> starts;
    for (int s = 0; s < 20; ++s) starts.push_back(StructuralKey(rng, bytes, round).substr(0, 1 + rng() % 9));
    ASSERT_NO_FATAL_FAILURE(checker.check_all(starts, &rng));
    if (round == 3) {
      ASSERT_NO_FATAL_FAILURE(checker.reopen());
    }
  }
  Index& index = checker.index();
  EXPECT_GT(Stat(index, "leaf_arrays"), 0u);
  EXPECT_GT(Stat(index, "node256"), 1u);  // grown (every type on the way: NodeGrowsThroughEveryType)
  ASSERT_NO_FATAL_FAILURE(checker.remove_all(rng));
  ASSERT_NO_FATAL_FAILURE(checker.check_all({K(0)}, &rng));
  // Every subtree emptied was unlinked: only the root is left.
  EXPECT_EQ(Stat(index, "leaf_arrays"), 0u);
  EXPECT_EQ(Stat(index, "node256"), 1u);
}

TEST(RoartModelTest, StructuralChangesIntegerKeys) { StructuralLockstep(false, 0x20a47); }
TEST(RoartModelTest, StructuralChangesByteStringKeys) { StructuralLockstep(true, 0x20a48); }

// Node growth through every type, checked step by step: a split leaves a Node4 over two leaf
// arrays, and each new second byte adds a child.
TEST(RoartModelTest, NodeGrowsThroughEveryType) {
  TempDir dir;
  ModelChecker checker(TestSeed(0x9a0));
  std::mt19937_64 rng(checker.seed());
  ASSERT_NO_FATAL_FAILURE(checker.create("roart", dir.file("pool"), SmallPoolOptions()));
  for (uint64_t x = 0; x < 33; ++x)
    for (uint8_t c = 0; c < 2; ++c) checker.insert(K(Bytes2(0x33, c, x * 977)), "v");
  Index& index = checker.index();
  EXPECT_EQ(Stat(index, "node4"), 1u);
  EXPECT_EQ(Stat(index, "leaf_arrays"), 2u);
  const std::pair<uint64_t, const char*> steps[] = {{4, "node4"}, {16, "node16"}, {48, "node48"}, {256, "node256"}};
  uint64_t c = 2;
  for (const auto& [children, type] : steps) {
    for (; c < children; ++c) checker.insert(K(Bytes2(0x33, static_cast<uint8_t>(c), c)), "w");
    EXPECT_EQ(Stat(index, type), type == std::string("node256") ? 2u : 1u) << children;
    ASSERT_NO_FATAL_FAILURE(checker.check_all({K(Bytes2(0x33, 0, 0))}, &rng));
  }
  ASSERT_NO_FATAL_FAILURE(checker.reopen());  // the Node48 index and counts are rebuilt
  ASSERT_NO_FATAL_FAILURE(checker.check_all({K(Bytes2(0x33, 7, 0))}, &rng));
}

// Scans that start before, inside and after leaf arrays whose entries were inserted in random
// order (the arrays are unsorted; the scan sorts each on the fly), with every length.
TEST(RoartScanTest, AcrossUnsortedLeafArrays) {
  TempDir dir;
  auto idx = CreateIndex("roart", dir.file("pool"), SmallPoolOptions());
  ASSERT_TRUE(idx.ok()) << idx.status().ToString();
  Index& index = *idx.value();
  std::map<std::string, std::string> model;
  std::vector<uint64_t> keys;
  for (uint64_t i = 0; i < 600; ++i) keys.push_back(Bytes2(0x61, static_cast<uint8_t>(i % 5), i * 7919));
  std::shuffle(keys.begin(), keys.end(), std::mt19937_64(TestSeed(5)));
  for (uint64_t k : keys) {
    ASSERT_TRUE(index.insert(K(k), IntValue(k)).ok());
    model[K(k)] = std::string(IntValue(k));
  }
  EXPECT_GT(Stat(index, "leaf_arrays"), 5u);
  std::mt19937_64 rng(TestSeed(6));
  for (int s = 0; s < 300; ++s) {
    auto it = model.begin();
    std::advance(it, rng() % model.size());
    std::string start = it->first;
    if (s % 3 == 1) start.back() = static_cast<char>(start.back() + 1);  // between keys
    if (s % 3 == 2) start.resize(1 + rng() % 7);                         // a prefix
    ExpectScanMatchesModel(index, model, start, 1 + rng() % 300);
  }
  ExpectScanMatchesModel(index, model, "", SIZE_MAX);
  ASSERT_TRUE(index.verify().ok());
}

// After any history, the allocator holds exactly the blocks the tree reaches: recovery
// (allocator rebuild from visit_blocks) leaks nothing, and neither do crash images.
TEST(RoartRecoveryTest, NothingLeaked) {
  TempDir dir;
  Options options = SmallPoolOptions();
  const std::string path = dir.file("pool");
  std::mt19937_64 rng(TestSeed(0x1ea4));
  {
    auto idx = CreateIndex("roart", path, options);
    ASSERT_TRUE(idx.ok()) << idx.status().ToString();
    for (uint64_t i = 0; i < Scale(20000); ++i) {
      const std::string key = StructuralKey(rng, true, i % 4);
      if (rng() % 4 == 0) {
        (void)idx.value()->remove(key);
      } else {
        ASSERT_TRUE(idx.value()->upsert(key, std::string(rng() % 20, 'x')).ok());
      }
    }
  }
  for (int reopen = 0; reopen < 2; ++reopen) {
    auto idx = OpenIndex(path, options, "roart");
    ASSERT_TRUE(idx.ok()) << idx.status().ToString();
    Index& index = *idx.value();
    ASSERT_TRUE(index.verify().ok());
    EXPECT_EQ(index.pool()->allocator().allocated_bytes(), index.stats().pm_bytes);
    if (reopen == 1) break;
    for (uint64_t i = 0; i < Scale(5000); ++i) (void)index.remove(StructuralKey(rng, true, 3));
  }
}

// Copies the pool's bytes at the N-th fence (the process-crash view: every store so far
// reached memory).
class CopyAtFence : public pm::PersistHook {
 public:
  CopyAtFence(const Pool& pool, int target) : pool_(pool), target_(target) {}
  void on_flush(uintptr_t, size_t) override {}
  void on_fence() override {
    if (++fences_ == target_) image_.assign(pool_.base(), pool_.base() + pool_.size());
  }
  const std::vector<char>& image() const { return image_; }
  int fences() const { return fences_; }

 private:
  const Pool& pool_;
  int target_;
  int fences_ = 0;
  std::vector<char> image_;
};

// A crash at every fence of a prefix split, and after it (the old node's prefix word is
// stored after the commit with no fence of its own): each image opens, verifies (recover()
// rewrote a stale prefix word), holds every earlier key, the new one from the commit on, and
// leaks nothing.
TEST(RoartPersistTest, CrashInsidePrefixSplit) {
  const uint64_t base = 0x4455667788990000ull;
  const std::string split_key = K(base ^ (uint64_t{1} << 40));  // leaves the prefix at byte 2
  for (int target = 1;; ++target) {
    SCOPED_TRACE("crash at fence " + std::to_string(target));
    TempDir dir;
    Options options = SmallPoolOptions();
    options.pool_size = 8ull << 20;  // every fence's image is a copy of the pool
    std::vector<char> image;
    int fences = 0;
    {
      auto idx = CreateIndex("roart", dir.file("pool"), options);
      ASSERT_TRUE(idx.ok()) << idx.status().ToString();
      Index& index = *idx.value();
      for (uint64_t x = 0; x < 66; ++x) ASSERT_TRUE(index.insert(K(base | (x * 3)), IntValue(x)).ok());
      const uint64_t nodes = Stat(index, "node256");
      CopyAtFence hook(*index.pool(), target);
      index.pool()->persist_context().set_hook(&hook);
      ASSERT_TRUE(index.insert(split_key, IntValue(7)).ok());
      index.pool()->persist_context().set_hook(nullptr);
      fences = hook.fences();
      // New leaf, new node, commit; one more where the Node4's size class carves a chunk.
      EXPECT_GE(fences, 3);
      EXPECT_LE(fences, 4);
      EXPECT_EQ(Stat(index, "node4"), 1u);
      EXPECT_EQ(Stat(index, "node256"), nodes);
      image = target <= fences ? hook.image()
                               : std::vector<char>(index.pool()->base(),
                                                   index.pool()->base() + index.pool()->size());
    }
    const std::string crashed = dir.file("crashed");
    std::ofstream(crashed, std::ios::binary).write(image.data(), static_cast<std::streamsize>(image.size()));
    auto idx = OpenIndex(crashed, options, "roart");
    ASSERT_TRUE(idx.ok()) << idx.status().ToString();
    Index& index = *idx.value();
    ASSERT_TRUE(index.verify().ok());
    std::string v;
    for (uint64_t x = 0; x < 66; ++x) ASSERT_TRUE(index.lookup(K(base | (x * 3)), &v).ok()) << x;
    EXPECT_EQ(index.lookup(split_key, &v).ok(), target >= fences);  // the last is the commit
    EXPECT_EQ(index.pool()->allocator().allocated_bytes(), index.stats().pm_bytes);
    ASSERT_TRUE(index.insert(K(base ^ (uint64_t{1} << 32)), IntValue(8)).ok());
    ASSERT_TRUE(index.verify().ok());
    if (target > fences) break;
  }
}

// Fences and flushes of each kind of insert, single-threaded (doc/roart.md, "Persistence
// cost"): a leaf-array insert with room or a node insert in place 2 fences (leaf, entry);
// compaction, leaf-array growth and split and node growth 3 (leaf, the built blocks, the
// commit); an in-place 8-byte update and a remove 1.
TEST(RoartPersistTest, FencesAndFlushesPerInsert) {
  TempDir dir;
  auto idx = CreateIndex("roart", dir.file("pool"), SmallPoolOptions());
  ASSERT_TRUE(idx.ok()) << idx.status().ToString();
  Index& index = *idx.value();
  auto cost = [&](auto&& op) {
    const uint64_t carved = index.pool()->allocator().carved_chunks();
    const PersistCounters before = index.pool()->persist_context().thread_counters();
    op();
    PersistCounters c = index.pool()->persist_context().thread_counters() - before;
    if (index.pool()->allocator().carved_chunks() != carved) c.fences = c.flushes = 0;  // skip
    return c;
  };
  auto ins = [&](uint64_t k) { return [&, k] { ASSERT_TRUE(index.insert(K(k), IntValue(k)).ok()); }; };
  // A leaf into an empty root slot: leaf, entry.
  PersistCounters c = cost(ins(Bytes2(1, 0, 1)));
  if (c.fences) {
    EXPECT_EQ(c.fences, 2u);
    EXPECT_EQ(c.flushes, 2u);
  }
  // Compaction: leaf, the 2-line leaf array of 4, the entry.
  c = cost(ins(Bytes2(1, 0, 2)));
  if (c.fences) {
    EXPECT_EQ(c.fences, 3u);
    EXPECT_EQ(c.flushes, 1u + 2u + 1u);
  }
  // Into the leaf array with room: leaf, entry; into a full one of 4, 8, 16 or 32: leaf, a
  // copy of twice the capacity (1 + 2 capacity / 8 lines), the entry.
  for (uint64_t x = 3; x <= 64; ++x) {
    c = cost(ins(Bytes2(1, static_cast<uint8_t>(x % 2), x)));
    if (c.fences == 0) continue;
    const uint64_t held = x - 1;
    const bool grows = held == 4 || held == 8 || held == 16 || held == 32;
    EXPECT_EQ(c.fences, grows ? 3u : 2u) << x;
    EXPECT_EQ(c.flushes, grows ? 1u + (1u + 2 * held / 8) + 1u : 2u) << x;
  }
  // The 65th key splits the array: leaf, node + 2 arrays, the entry.
  c = cost(ins(Bytes2(1, 1, 65)));
  if (c.fences) {
    EXPECT_EQ(c.fences, 3u);
  }
  EXPECT_EQ(Stat(index, "node4"), 1u);
  for (uint64_t b = 2; b < 4; ++b) index.insert(K(Bytes2(1, static_cast<uint8_t>(b), 0)), IntValue(b)).IgnoreError();
  // The Node4 is full: the fifth child grows it (leaf, Node16, the entry).
  c = cost(ins(Bytes2(1, 9, 0)));
  if (c.fences) {
    EXPECT_EQ(c.fences, 3u);
  }
  EXPECT_EQ(Stat(index, "node16"), 1u);
  // An 8-byte update in place, and a remove from a leaf array: one fence each.
  c = cost([&] { ASSERT_TRUE(index.update(K(Bytes2(1, 0, 4)), IntValue(1)).ok()); });
  if (c.fences) {
    EXPECT_EQ(c.fences, 1u);
  }
  c = cost([&] { ASSERT_TRUE(index.remove(K(Bytes2(1, 0, 4))).ok()); });
  if (c.fences) {
    EXPECT_EQ(c.fences, 1u);
  }
  // Random integer keys (doc/roart.md): every compaction, growth or split adds a fence and
  // flushes whole blocks.
  std::mt19937_64 rng(TestSeed(3));
  const PersistCounters before = index.pool()->persist_context().thread_counters();
  const uint64_t n = Scale(50000);
  for (uint64_t i = 0; i < n; ++i) (void)index.insert(K(rng()), IntValue(i));
  const PersistCounters all = index.pool()->persist_context().thread_counters() - before;
  EXPECT_LE(static_cast<double>(all.fences) / n, 2.3);
  EXPECT_LE(static_cast<double>(all.flushes) / n, 4.6);
  std::printf("random inserts: %.3f fences, %.3f flushes per insert\n",
              static_cast<double>(all.fences) / n, static_cast<double>(all.flushes) / n);
  ASSERT_TRUE(index.verify().ok());
}

}  // namespace
}  // namespace pmindex::testing
