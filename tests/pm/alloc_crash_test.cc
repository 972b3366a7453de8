// The allocator's chunk table under simulated power failure: carving and freeing large blocks
// (runs of chunks whose table entries span cache lines), and the rebuild that uncarves them,
// leave at every fence a table that the next open accepts (never a head whose continuations
// are lost), under every image the crash tracker builds.
#include <gtest/gtest.h>

#include <filesystem>
#include <string>

#include "common/test_kinds.h"
#include "common/test_util.h"
#include "pm/alloc.h"
#include "pm/crash/tracker.h"

namespace pmindex::pm {
namespace {

using testing::TempDir;

Status RebuildNothingReachable(Allocator& a) {
  return a.rebuild([](BlockVisitor&) { return Status::OK(); });
}

TEST(AllocatorCrash, LargeRunsKeepTheirContinuations) {
  TempDir dir;
  const std::string path = dir.file("a.pool");
  const std::string copy = dir.file("image.pool");
  crash::TrackerOptions to;
  to.max_failures = 0;  // collect all
  to.torn_images = 4;
  to.seed = testing::TestSeed(5);
  to.timeout_seconds = testing::CampaignTimeout();
  crash::CrashTracker tracker(to, [&](const std::string& img, uint64_t, const std::string&) -> Status {
    std::error_code ec;
    std::filesystem::copy_file(img, copy, std::filesystem::copy_options::overwrite_existing, ec);
    if (ec) return Status::IOError("copy: " + ec.message());
    auto pool = Pool::Open(copy, kTestListKind, Options());
    if (!pool.ok()) return pool.status().WithContext("open");
    return RebuildNothingReachable(pool.value()->allocator()).WithContext("rebuild");
  });
  tracker.use_pool_extent();
  Options o;
  o.pool_size = 16 << 20;
  o.persist_hook = &tracker;
  auto created = Pool::Create(path, kTestListKind, "", o);
  ASSERT_TRUE(created.ok()) << created.status().ToString();
  Allocator& a = created.value()->allocator();
  // Nine chunks: the run's nine 8-byte table entries always span two lines.
  const size_t big = 9 * kChunkSize - 4096;
  for (int i = 0; i < 3; ++i) {
    ASSERT_TRUE(a.allocate(4096).ok());  // a small chunk, so runs start at varied entries
    auto b = a.allocate(big);
    ASSERT_TRUE(b.ok()) << b.status().ToString();
    if (i != 1) a.free(*b);
  }
  auto c = a.allocate(2 * kChunkSize);
  ASSERT_TRUE(c.ok());
  a.free(*c);
  ASSERT_TRUE(RebuildNothingReachable(a).ok());  // uncarves the run left carved
  tracker.crash_point();
  created.value().reset();
  EXPECT_GT(tracker.report().points_checked, 6u);
  for (const crash::CrashFailure& f : tracker.report().failures)
    ADD_FAILURE() << "fence " << f.point << " image " << f.image << ": " << f.message
                  << " (seed " << to.seed << ")";
}

}  // namespace
}  // namespace pmindex::pm
