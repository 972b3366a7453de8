// A rough single-thread timing (thread CPU time) of the hybrid B+trees (adr mode), until `pmindex bench`
// measures them properly. Labelled long; prints figures, asserts nothing about speed.
//   PMINDEX_BTREE_TIMING_KEYS=<n> sets the preload (default 1,000,000);
//   PMINDEX_BTREE_TIMING_TREES=a,b picks trees (default all).
#include <gtest/gtest.h>

#include <ctime>
#include <cstdlib>
#include <random>
#include <string>

#include "btree/btree_test_util.h"
#include "common/test_util.h"
#include "pm/persist.h"

namespace pmindex::testing {
namespace {

// CPU time of this thread: the machine is shared, and wall time counts other processes.
double Now() {
  timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return ts.tv_sec + ts.tv_nsec * 1e-9;
}
double Seconds(double t0) { return Now() - t0; }

TEST(BTreeTiming, SingleThread) {
  uint64_t n = 1000000;
  if (const char* e = std::getenv("PMINDEX_BTREE_TIMING_KEYS")) n = std::strtoull(e, nullptr, 10);
  const uint64_t ops = 200000;
  std::printf("%-10s %12s %8s %12s %12s %8s\n", "tree", "insert/s", "fences", "lookup/s",
              "scan100/s", "leaves");
  std::string only;
  if (const char* e = std::getenv("PMINDEX_BTREE_TIMING_TREES")) only = std::string(",") + e + ",";
  for (const std::string& name : BTreeNames()) {
    if (!only.empty() && only.find("," + name + ",") == std::string::npos) continue;
    TempDir dir;
    auto idx = CreateIndex(name, dir.file("pool"), BTreeOptions(2ull << 30));
    ASSERT_TRUE(idx.ok()) << idx.status().ToString();
    Index& index = *idx.value();
    std::mt19937_64 rng(1);
    std::vector<uint64_t> keys(n);
    for (auto& k : keys) k = rng();
    for (uint64_t i = 0; i < n; ++i) ASSERT_TRUE(index.insert(IntKey(keys[i]), IntValue(i)).ok());
    std::vector<uint64_t> fresh(ops);
    for (auto& k : fresh) k = rng();
    const PersistCounters c0 = index.pool()->persist_context().thread_counters();
    double t0 = Now();
    for (uint64_t i = 0; i < ops; ++i) (void)index.insert(IntKey(fresh[i]), IntValue(i));
    const double ins = ops / Seconds(t0);
    const double fences = static_cast<double>((index.pool()->persist_context().thread_counters() - c0).fences) / ops;
    std::string v;
    uint64_t found = 0;
    t0 = Now();
    for (uint64_t i = 0; i < 1000000; ++i) found += index.lookup(IntKey(keys[rng() % n]), &v).ok();
    const double look = 1000000 / Seconds(t0);
    EXPECT_EQ(found, 1000000u);
    const uint64_t scans = 100000;
    uint64_t sum = 0;
    t0 = Now();
    for (uint64_t i = 0; i < scans; ++i) {
      index.scan(IntKey(rng()), 100, [&](std::string_view k, std::string_view) {
        sum += static_cast<unsigned char>(k[7]);
        return true;
      });
    }
    const double scan = scans / Seconds(t0);
    std::printf("%-10s %12.0f %8.3f %12.0f %12.0f %8lu\n", name.c_str(), ins, fences, look, scan,
                static_cast<unsigned long>(index.stats().nodes[0].second));
    std::fflush(stdout);
  }
}

}  // namespace
}  // namespace pmindex::testing
