// The node organisations (src/primitives/node.h): each against a std::map model in lockstep
// with Verify after every step, split/merge/balance against the model, the per-operation
// bytes modified and fences of insert (E4) and erase (E8) pinned by organisation and
// position, and Table 4's capacities.
#include <gtest/gtest.h>

#include <cstdlib>
#include <map>
#include <memory>
#include <random>

#include "common/test_util.h"
#include "primitives/node.h"

namespace pmindex::primitives {
namespace {

constexpr size_t kSizes[] = {256, 512, 1024, 2048, 4096};

struct Buf {
  explicit Buf(size_t n) : p(static_cast<char*>(std::aligned_alloc(64, n))) {}
  ~Buf() { std::free(p); }
  char* p;
};

Value V(Key k) { return {k * 3, ~k}; }

void ExpectModel(const Node& n, const std::map<Key, Value>& model, uint64_t seed) {
  ASSERT_TRUE(n.Verify()) << OrgName(n.layout().org) << " seed " << seed;
  auto pairs = n.Sorted();
  ASSERT_EQ(pairs.size(), model.size()) << OrgName(n.layout().org) << " seed " << seed;
  size_t i = 0;
  for (auto& [k, v] : model) {
    ASSERT_EQ(pairs[i].first, k);
    ASSERT_EQ(pairs[i].second, v);
    ++i;
  }
}

class OrgTest : public ::testing::TestWithParam<Org> {};

TEST_P(OrgTest, LockstepWithModel) {
  const Org org = GetParam();
  const uint64_t seed = pmindex::testing::TestSeed(42);
  SCOPED_TRACE(pmindex::testing::SeedTrace(seed));
  std::mt19937_64 rng(seed);
  pm::PersistContext ctx;
  for (size_t bytes : kSizes) {
    const Layout l = MakeLayout(org, bytes);
    Buf a(bytes), b(bytes);
    Node n(&l, a.p, &ctx, Persist::kIndividual), m(&l, b.p, &ctx, Persist::kIndividual);
    n.Format();
    std::map<Key, Value> model;
    for (uint64_t step = 0; step < pmindex::testing::Scale(4000); ++step) {
      const Key k = rng() % (3 * l.capacity) + 1;
      const int op = static_cast<int>(rng() % 10);
      if (op < 5) {
        const bool fits = !model.count(k) && model.size() < l.capacity;
        if (fits) { ASSERT_TRUE(n.Insert(k, V(k))); model[k] = V(k); }
      } else if (op < 8) {
        ASSERT_EQ(n.Erase(k), model.erase(k) == 1);
      } else {
        Value v;
        ASSERT_EQ(n.Get(k, &v), model.count(k) == 1);
        ASSERT_EQ(n.Find(k, Search::kLinear) >= 0, model.count(k) == 1);
      }
      if (model.size() == l.capacity && rng() % 4 == 0) {  // split, check, merge back
        m.Format();
        n.Split(m, rng() % 2 ? SplitMode::kCopy : SplitMode::kMove);
        ASSERT_TRUE(n.Verify() && m.Verify());
        ASSERT_EQ(n.Size() + m.Size(), model.size());
        ASSERT_LT(n.Sorted().back().first, m.Sorted().front().first);
        n.MergeFrom(m);
      }
      ASSERT_NO_FATAL_FAILURE(ExpectModel(n, model, seed));
    }
  }
}

TEST_P(OrgTest, BalanceMovesQuarter) {
  const Org org = GetParam();
  pm::PersistContext ctx;
  for (size_t bytes : kSizes) {
    const Layout l = MakeLayout(org, bytes);
    Buf a(bytes), b(bytes);
    Node full(&l, a.p, &ctx, Persist::kIndividual), half(&l, b.p, &ctx, Persist::kIndividual);
    full.Format();
    half.Format();
    std::map<Key, Value> model;
    for (Key k = 1; k <= l.capacity; ++k) { full.Insert(k, V(k)); model[k] = V(k); }
    for (Key k = 1000; k < 1000 + l.capacity / 2 - 1; ++k) { half.Insert(k, V(k)); model[k] = V(k); }
    full.MoveTo(half, l.capacity / 4, /*largest=*/true);
    ASSERT_TRUE(full.Verify() && half.Verify());
    ASSERT_EQ(full.Size(), l.capacity - l.capacity / 4);
    auto a1 = full.Sorted(), b1 = half.Sorted();
    a1.insert(a1.end(), b1.begin(), b1.end());
    std::sort(a1.begin(), a1.end(), [](auto& x, auto& y) { return x.first < y.first; });
    ASSERT_EQ(a1.size(), model.size());
  }
}

INSTANTIATE_TEST_SUITE_P(All, OrgTest, ::testing::ValuesIn(kAllOrgs),
                         [](const auto& info) {
                           std::string s(OrgName(info.param));
                           for (char& c : s) if (c == '+') c = '_';
                           return s;
                         });

// Bytes modified by one insert into a node with one free place (E4), key at sorted position
// p, and one erase from a full node (E8): the primitives' pinned counts.
struct Cost {
  uint64_t bytes, fences;
};

Cost Measure(Org org, size_t bytes, size_t p, bool insert) {
  const Layout l = MakeLayout(org, bytes);
  Buf a(bytes);
  pm::PersistContext ctx;
  Node n(&l, a.p, &ctx, Persist::kIndividual);
  n.Format();
  for (size_t i = 0; i < l.capacity; ++i)
    if (!insert || i != p) n.Insert(10 * (i + 1), V(i));
  n.cost() = {};
  const PersistCounters before = ctx.thread_counters();
  if (insert) {
    n.Insert(10 * (p + 1), V(p));
  } else {
    n.EraseAt(n.Find(10 * (p + 1)));
  }
  return {n.cost().bytes_modified, (ctx.thread_counters() - before).fences};
}

TEST(PrimitiveCosts, InsertBytesPinnedAndSortedWorst) {
  for (size_t bytes : kSizes) {
    for (size_t which = 0; which < 3; ++which) {
      const size_t m = Capacity(Org::kSorted, bytes), mi = Capacity(Org::kIndirection, bytes);
      const size_t p = which == 0 ? 0 : which == 1 ? m / 2 : m - 1;
      const size_t pi = which == 0 ? 0 : which == 1 ? mi / 2 : mi - 1;
      SCOPED_TRACE(::testing::Message() << bytes << " B, position " << which);
      EXPECT_EQ(Measure(Org::kSorted, bytes, p, true).bytes, (m - 1 - p) * 24 + 32);
      EXPECT_EQ(Measure(Org::kUnsorted, bytes, p, true).bytes, 32u);
      EXPECT_EQ(Measure(Org::kUnsortedBitmap, bytes, p, true).bytes, 40u);
      EXPECT_EQ(Measure(Org::kBitmap, bytes, p, true).bytes, 32u);
      EXPECT_EQ(Measure(Org::kHashing, bytes, pi, true).bytes, 33u);
      EXPECT_EQ(Measure(Org::kIndirection, bytes, pi, true).bytes, 34u + (mi - 1 - pi));
      for (Org o : kAllOrgs)
        EXPECT_EQ(Measure(o, bytes, 0, true).fences, o == Org::kIndirection ? 3u : 2u);
      if (which == 0) {
        for (Org o : kAllOrgs)
          EXPECT_GE(Measure(Org::kSorted, bytes, 0, true).bytes, Measure(o, bytes, 0, true).bytes);
      }
    }
  }
}

TEST(PrimitiveCosts, EraseBytesPinnedAndSortedWorst) {
  for (size_t bytes : kSizes) {
    const size_t m = Capacity(Org::kSorted, bytes), mi = Capacity(Org::kIndirection, bytes);
    for (size_t which = 0; which < 3; ++which) {
      const size_t p = which == 0 ? 0 : which == 1 ? m / 2 : m - 1;
      const size_t pi = which == 0 ? 0 : which == 1 ? mi / 2 : mi - 1;
      SCOPED_TRACE(::testing::Message() << bytes << " B, position " << which);
      EXPECT_EQ(Measure(Org::kSorted, bytes, p, false).bytes, (m - 1 - p) * 24 + 8);
      EXPECT_EQ(Measure(Org::kUnsorted, bytes, p, false).bytes, p == m - 1 ? 8u : 32u);
      EXPECT_EQ(Measure(Org::kUnsortedBitmap, bytes, p, false).bytes, 8u);
      EXPECT_EQ(Measure(Org::kBitmap, bytes, p, false).bytes, 8u);
      EXPECT_EQ(Measure(Org::kHashing, bytes, pi, false).bytes, 8u);
      EXPECT_EQ(Measure(Org::kIndirection, bytes, pi, false).bytes, 9u + (mi - 1 - pi));
    }
    for (Org o : kAllOrgs)
      EXPECT_GE(Measure(Org::kSorted, bytes, 0, false).bytes, Measure(o, bytes, 0, false).bytes);
  }
}

TEST(Table4, CapacitiesPinned) {
  const size_t base[] = {9, 19, 41, 83, 169}, aligned[] = {8, 18, 40, 82, 168};
  const size_t hashing[] = {8, 18, 40, 80, 160}, indirection[] = {8, 18, 39, 80, 160};
  for (size_t i = 0; i < 5; ++i) {
    EXPECT_EQ(BaseCapacity(kSizes[i]), base[i]);
    EXPECT_EQ(Capacity(Org::kSorted, kSizes[i]), aligned[i]);
    EXPECT_EQ(Capacity(Org::kBitmap, kSizes[i]), aligned[i]);
    EXPECT_EQ(Capacity(Org::kHashing, kSizes[i]), hashing[i]);
    EXPECT_EQ(Capacity(Org::kIndirection, kSizes[i]), indirection[i]);
    const Layout l = MakeLayout(Org::kIndirection, kSizes[i]);
    EXPECT_LE(l.values_off + 16 * l.capacity, kSizes[i]);
    EXPECT_EQ(l.keys_off % 64, 0u);
  }
}

}  // namespace
}  // namespace pmindex::primitives
