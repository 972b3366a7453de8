// PFtree under concurrency: more threads than cores, writers on interleaved key sets (so they
// share leaf arrays and race on splits, compactions and node growth) while readers look up
// and scan other threads' keys. Afterwards the tree matches the union of the per-thread
// models, also after reopening. Run under TSan too (PMINDEX_SANITIZE=thread).
#include <gtest/gtest.h>

#include <atomic>
#include <map>
#include <thread>

#include "pftree/pftree_test_util.h"

namespace pmindex::testing {
namespace {

// True if v is a value ValueFor(k, version) for some version.
bool Plausible(const std::string& k, std::string_view v) {
  size_t colon = v.find(':');
  if (colon == std::string_view::npos) return false;
  uint64_t version = std::stoull(std::string(v.substr(0, colon)));
  return ValueFor(k, version) == v;
}

void RunConcurrent(Shape shape, int threads, uint64_t ops_per_thread, uint64_t seed) {
  SCOPED_TRACE(SeedTrace(seed));
  TempDir dir;
  Options options;
  options.pool_size = 256ull << 20;
  auto created = CreateIndex("pftree", dir.file("c.pool"), options);
  ASSERT_TRUE(created.ok()) << created.status().ToString();
  std::unique_ptr<Index> index = std::move(created).value();
  const uint64_t universe = Scale(40000);
  std::vector<std::map<std::string, std::string>> models(threads);
  std::atomic<uint64_t> bad_reads{0}, bad_status{0}, bad_scans{0};
  std::vector<std::thread> workers;
  for (int t = 0; t < threads; ++t) {
    workers.emplace_back([&, t] {
      KeySource keys(shape, seed, universe);  // same universe in every thread
      std::mt19937_64 rng(seed * 31 + t);
      auto& model = models[t];
      uint64_t version = static_cast<uint64_t>(t) << 40;
      for (uint64_t i = 0; i < ops_per_thread; ++i) {
        std::string k = keys.Next();
        const bool mine = KeySource::Mix(std::hash<std::string>{}(k)) % threads ==
                          static_cast<uint64_t>(t);
        unsigned op = rng() % 10;
        if (!mine || op >= 8) {
          std::string got;
          if (index->lookup(k, &got).ok() && !Plausible(k, got)) bad_reads++;
          if (op == 9) {
            std::string prev;
            bool first = true;
            index->scan(k, 20, [&](std::string_view sk, std::string_view sv) {
              if ((!first && !(prev < sk)) || sk < k || !Plausible(std::string(sk), sv))
                bad_scans++;
              prev = sk;
              first = false;
              return true;
            });
          }
          continue;
        }
        std::string v = ValueFor(k, ++version);
        bool present = model.count(k) != 0;
        Status s;
        switch (op % 4) {
          case 0:
            s = index->insert(k, v);
            if (s.ok() != !present) bad_status++;
            if (s.ok()) model[k] = v;
            break;
          case 1:
            s = index->update(k, v);
            if (s.ok() != present) bad_status++;
            if (s.ok()) model[k] = v;
            break;
          case 2:
            s = index->upsert(k, v);
            if (!s.ok()) bad_status++;
            model[k] = v;
            break;
          case 3:
            s = index->remove(k);
            if (s.ok() != present) bad_status++;
            model.erase(k);
            break;
        }
        // A writer always sees its own writes.
        std::string got;
        bool found = index->lookup(k, &got).ok();
        if (found != (model.count(k) != 0) || (found && got != model[k])) bad_reads++;
      }
    });
  }
  for (auto& w : workers) w.join();
  EXPECT_EQ(bad_reads.load(), 0u);
  EXPECT_EQ(bad_status.load(), 0u);
  EXPECT_EQ(bad_scans.load(), 0u);
  Status s = index->verify();
  ASSERT_TRUE(s.ok()) << s.ToString();
  std::map<std::string, std::string> all;
  for (auto& m : models) all.insert(m.begin(), m.end());
  ASSERT_NO_FATAL_FAILURE(ExpectSameAsModel(*index, all));
  ASSERT_TRUE(index->close().ok());
  index.reset();
  auto reopened = OpenIndex(dir.file("c.pool"), options, "pftree");
  ASSERT_TRUE(reopened.ok()) << reopened.status().ToString();
  ASSERT_TRUE(reopened.value()->verify().ok());
  ASSERT_NO_FATAL_FAILURE(ExpectSameAsModel(*reopened.value(), all));
}

TEST(PFTreeConcurrentTest, IntegerKeysEightThreads) {
  RunConcurrent(Shape::kSparse, 8, Scale(40000), TestSeed(11));
}

TEST(PFTreeConcurrentTest, DenseKeysSixThreads) {
  RunConcurrent(Shape::kDense, 6, Scale(40000), TestSeed(12));
}

TEST(PFTreeConcurrentTest, SharedPrefixKeysEightThreads) {
  RunConcurrent(Shape::kSharedPrefix, 8, Scale(25000), TestSeed(13));
}

TEST(PFTreeConcurrentTest, PrefixChainsFourThreads) {
  RunConcurrent(Shape::kPrefixChains, 4, Scale(25000), TestSeed(14));
}

// More threads alive at once than any fixed epoch table held (the limit was 1,024 and the
// next thread aborted the process): every one reads under its own epoch slot.
TEST(PFTreeConcurrentTest, MoreThreadsThanAnyFixedTable) {
  TempDir dir;
  Options options;
  options.pool_size = 16 << 20;
  auto made = CreateIndex("pftree", dir.file("t.pool"), options);
  ASSERT_TRUE(made.ok()) << made.status().ToString();
  Index& index = *made.value();
  for (uint64_t k = 0; k < 100; ++k) ASSERT_TRUE(index.insert(IntKey(k), IntValue(k)).ok());
  constexpr int kThreads = 1100;
  std::atomic<int> arrived{0}, found{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      std::string v;
      arrived.fetch_add(1);
      while (arrived.load() < kThreads) std::this_thread::yield();  // all alive at once
      found += index.lookup(IntKey(t % 100), &v).ok();
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(found.load(), kThreads);
}

}  // namespace
}  // namespace pmindex::testing
