// The paths every unordered index takes, on the test-only "test-hashmap": a full iteration
// through Index::for_each that the model checks compare as a set, `dump` printing every
// pair, and the workbench skipping scan workloads with a stated reason.
#include <gtest/gtest.h>

#include <cstdio>
#include <map>
#include <random>
#include <string>

#include "bench/dump.h"
#include "bench/runner.h"
#include "common/model_checker.h"
#include "common/test_util.h"
#include "pmindex/index.h"

namespace pmindex::testing {
namespace {

std::unique_ptr<Index> MakeHashMap(const TempDir& dir) {
  auto idx = CreateIndex("test-hashmap", dir.path() + "/h", Options());
  EXPECT_TRUE(idx.ok()) << idx.status().ToString();
  return idx.ok() ? std::move(idx.value()) : nullptr;
}

TEST(UnorderedIndex, ForEachReturnsEveryPairOnceAndScanNothing) {
  TempDir dir;
  const uint64_t seed = TestSeed(5);
  SCOPED_TRACE(SeedTrace(seed));
  std::unique_ptr<Index> index = MakeHashMap(dir);
  ASSERT_NE(index, nullptr);
  ASSERT_FALSE(index->traits().ordered);
  std::mt19937_64 rng(seed);
  std::map<std::string, std::string> model;
  for (int i = 0; i < 2000; ++i) {
    const std::string k = "k" + std::to_string(rng() % 1500);
    if (rng() % 4 == 0) {
      EXPECT_EQ(index->remove(k).ok(), model.erase(k) == 1);
    } else {
      ASSERT_TRUE(index->upsert(k, "v" + std::to_string(i)).ok());
      model[k] = "v" + std::to_string(i);
    }
  }
  ASSERT_NO_FATAL_FAILURE(ExpectSameAsModel(*index, model));
  EXPECT_EQ(index->scan("", 10, [](std::string_view, std::string_view) { return true; }), 0u);
  // scan_checked says why there is nothing: an unordered index has no key-order scan.
  size_t count = 1;
  const Status refused =
      index->scan_checked("", 10, [](std::string_view, std::string_view) { return true; }, &count);
  EXPECT_TRUE(refused.IsNotSupported()) << refused.ToString();
  EXPECT_NE(refused.ToString().find("unordered"), std::string::npos) << refused.ToString();
  EXPECT_EQ(count, 0u);
  // for_each stops when the callback says so.
  size_t calls = 0;
  ASSERT_TRUE(index->for_each([&](std::string_view, std::string_view) { return ++calls < 3; })
                  .ok());
  EXPECT_EQ(calls, 3u);
  ASSERT_TRUE(index->close().ok());
  EXPECT_TRUE(index->for_each([](std::string_view, std::string_view) { return true; })
                  .IsInvalidArgument());
}

TEST(UnorderedIndex, DumpPrintsEveryPairAndRefusesAStartKey) {
  TempDir dir;
  std::unique_ptr<Index> index = MakeHashMap(dir);
  ASSERT_NE(index, nullptr);
  for (int i = 0; i < 100; ++i)
    ASSERT_TRUE(index->insert("key" + std::to_string(i), "value").ok());
  std::FILE* out = std::tmpfile();
  ASSERT_NE(out, nullptr);
  uint64_t printed = 0;
  ASSERT_TRUE(bench::DumpIndex(*index, "", 0, bench::BytesFormat::kAuto,
                               bench::BytesFormat::kAuto, out, &printed)
                  .ok());
  EXPECT_EQ(printed, 100u);
  EXPECT_TRUE(bench::DumpIndex(*index, "key5", 0, bench::BytesFormat::kAuto,
                               bench::BytesFormat::kAuto, out, &printed)
                  .IsInvalidArgument());
  std::fclose(out);
}

TEST(UnorderedIndex, WorkbenchSkipsScanWorkloadsWithAReason) {
  TempDir dir;
  bench::BenchConfig c;
  c.indexes = {"test-hashmap"};
  std::string err;
  ASSERT_TRUE(bench::ParseWorkloads("load,a,e,c", &c.workloads, &err)) << err;
  c.keys = 500;
  c.ops = 500;
  c.pool_dir = dir.path();
  c.progress = false;
  bench::BenchReport report;
  ASSERT_TRUE(bench::RunBench(c, &report).ok());
  std::vector<std::string> ran;
  for (const bench::BenchResult& r : report.results) {
    ran.push_back(r.workload);
    EXPECT_EQ(r.failed, 0u) << r.workload;
    EXPECT_TRUE(r.note.empty()) << r.workload << ": " << r.note;
  }
  EXPECT_EQ(ran, (std::vector<std::string>{"load", "a", "c"}));
  ASSERT_EQ(report.skipped.size(), 1u);
  EXPECT_NE(report.skipped[0].find("unordered"), std::string::npos) << report.skipped[0];
}

}  // namespace
}  // namespace pmindex::testing
