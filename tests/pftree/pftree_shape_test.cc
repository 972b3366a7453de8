// PFtree's space per key stays flat as it grows: loading uniform keys at sizes on both sides
// of the point where the leaf arrays under one root slot first fill (about 400 keys per
// slot), PM bytes per key stays within 1.5x of the smallest and DRAM bytes per key within 2x
// (the figures `pmindex bench` reports, from stats(); the allocator's allocated bytes are
// checked alongside). Integer keys, YCSB-style string keys and integer keys under one root
// slot (where splits into runs of bytes decide the whole shape).
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <functional>
#include <string>
#include <vector>

#include "common/test_util.h"
#include "pftree/pftree_test_util.h"
#include "pmindex/index.h"
#include "pm/alloc.h"
#include "radix/pftree/leaf_array.h"
#include "pmindex/pool.h"

namespace pmindex::testing {
namespace {

struct Footprint {
  uint64_t keys;
  double pm, dram, allocated;  // bytes per key
};

Footprint Load(const std::string& path, uint64_t n, const std::function<std::string(uint64_t)>& key) {
  Options o;
  o.pool_size = 128ull << 20;
  auto r = CreateIndex("pftree", path, o);
  EXPECT_TRUE(r.ok()) << r.status().ToString();
  if (!r.ok()) return {};
  std::unique_ptr<Index> index = std::move(r).value();
  const std::string value(8, 'v');
  for (uint64_t i = 0; i < n; ++i) {
    Status s = index->insert(key(i), value);
    EXPECT_TRUE(s.ok()) << "key " << i << ": " << s.ToString();
    if (!s.ok()) return {};
  }
  Status v = index->verify();
  EXPECT_TRUE(v.ok()) << v.ToString();
  IndexStats st = index->stats();
  EXPECT_EQ(st.keys, n);
  Footprint f{n, double(st.pm_bytes) / n, double(st.dram_bytes) / n,
              double(index->pool()->allocator().allocated_bytes()) / n};
  EXPECT_TRUE(index->close().ok());
  return f;
}

// check_allocated: also the allocator's figure, which includes fixed costs (the root node,
// the block set aside for a full pool, blocks waiting for their grace period) that
// dominate below ~10,000 keys.
void ExpectFlat(const char* what, const std::vector<uint64_t>& sizes,
                const std::function<std::string(uint64_t)>& key, bool check_allocated = true) {
  TempDir dir;
  std::vector<Footprint> fs;
  for (uint64_t n : sizes) {
    fs.push_back(Load(dir.file(std::to_string(n) + ".pool"), n, key));
    std::printf("%s %8llu keys: %.1f PM B/key (%.1f allocated), %.1f DRAM B/key\n", what,
                static_cast<unsigned long long>(n), fs.back().pm, fs.back().allocated,
                fs.back().dram);
  }
  auto minmax = [&](double Footprint::*field) {
    auto [lo, hi] = std::minmax_element(fs.begin(), fs.end(), [&](const Footprint& a, const Footprint& b) {
      return a.*field < b.*field;
    });
    return std::make_pair((*lo).*field, (*hi).*field);
  };
  auto [pm_lo, pm_hi] = minmax(&Footprint::pm);
  auto [al_lo, al_hi] = minmax(&Footprint::allocated);
  auto [dr_lo, dr_hi] = minmax(&Footprint::dram);
  EXPECT_LE(pm_hi, 1.5 * pm_lo) << what << ": PM bytes per key";
  if (check_allocated) {
    EXPECT_LE(al_hi, 1.5 * al_lo) << what << ": allocated bytes per key";
  }
  EXPECT_LE(dr_hi, 2.0 * dr_lo) << what << ": DRAM bytes per key";
}

// A fixed permutation of ids (the bench's keys are scrambled the same way: uniform).
uint64_t Uniform(uint64_t i) { return KeySource::Mix(i); }

TEST(PFTreeShapeTest, IntegerKeysStayFlat) {
  ExpectFlat("int", {10000, 50000, 100000, 150000, 200000},
             [](uint64_t i) { return std::string(IntKey(Uniform(i)).view()); });
}

TEST(PFTreeShapeTest, StringKeysStayFlat) {
  ExpectFlat("string", {10000, 50000, 100000, 150000},
             [](uint64_t i) { return "user" + std::to_string(Uniform(i)); });
}

TEST(PFTreeShapeTest, OneRootSlotStaysFlat) {
  // From one leaf array through a Node48 and a Node256 of shared leaves.
  ExpectFlat(
      "one slot", {1000, 3000, 10000, 30000},
      [](uint64_t i) {
        return std::string(IntKey((Uniform(i) >> 8) | (uint64_t{0x5A} << 56)).view());
      },
      /*check_allocated=*/false);
}

// Pools written with fuller leaf arrays (up to 512 entries, as earlier builds wrote them)
// open, answer every key, and take new keys: their big leaves are split within this
// build's limits when they next fill.
TEST(PFTreeShapeTest, OpensPoolsWithLargerLeafArrays) {
  TempDir dir;
  const std::string path = dir.file("old.pool");
  const uint64_t n = 80000;  // not scaled: ~310 keys per root slot, one leaf array each
  const std::string value(8, 'v');
  const pftree::LargestLeaf current = pftree::Largest();
  pftree::SetLargestLeafForTesting({512, 8192});
  {
    Options o;
    o.pool_size = 64ull << 20;
    auto r = CreateIndex("pftree", path, o);
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    for (uint64_t i = 0; i < n; ++i) ASSERT_TRUE((*r)->insert(IntKey(Uniform(i)).view(), value).ok());
    const IndexStats st = (*r)->stats();
    uint64_t leaves = 0;
    for (const auto& [name, count] : st.nodes) leaves = name == "leaf_arrays" ? count : leaves;
    // Not vacuous: the pool holds leaf arrays larger than this build writes.
    ASSERT_GT(leaves, 0u);
    EXPECT_GT(n, leaves * current.entries) << leaves << " leaf arrays";
    ASSERT_TRUE((*r)->close().ok());
  }
  pftree::SetLargestLeafForTesting(current);
  auto r = OpenIndex(path, Options());
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  Index& index = **r;
  ASSERT_TRUE(index.verify().ok());
  std::string got;
  for (uint64_t i = 0; i < n; ++i) ASSERT_TRUE(index.lookup(IntKey(Uniform(i)).view(), &got).ok()) << i;
  for (uint64_t i = n; i < 2 * n; ++i) ASSERT_TRUE(index.insert(IntKey(Uniform(i)).view(), value).ok());
  Status v = index.verify();
  EXPECT_TRUE(v.ok()) << v.ToString();
  for (uint64_t i = 0; i < 2 * n; ++i) ASSERT_TRUE(index.lookup(IntKey(Uniform(i)).view(), &got).ok()) << i;
  EXPECT_EQ(index.stats().keys, 2 * n);
  ASSERT_TRUE(index.close().ok());
}

}  // namespace
}  // namespace pmindex::testing
