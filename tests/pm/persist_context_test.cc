// Each pool has its own persistence seam: its mode, counters, media model and hook belong to
// it alone, and two pools of one process never change each other's durability.
#include <gtest/gtest.h>
#include <sys/vfs.h>
#include <unistd.h>

#include <string>

#include "common/test_util.h"
#include "pm/persist.h"
#include "pmindex/index.h"

namespace pmindex {
namespace {

using testing::TempDir;

Options PoolOptions(PersistMode mode, PersistHook* hook = nullptr) {
  Options o;
  o.pool_size = 16 << 20;
  o.mode = mode;
  o.persist_hook = hook;
  return o;
}

class CountingHook : public PersistHook {
 public:
  void on_map(void* base, size_t size) override { ++maps; }
  void on_flush(uintptr_t, size_t lines) override { flushed += lines; }
  void on_fence() override { ++fences; }
  uint64_t maps = 0, flushed = 0, fences = 0;
};

void InsertKeys(Index& index, uint64_t from, uint64_t n) {
  for (uint64_t k = from; k < from + n; ++k)
    ASSERT_TRUE(index.insert(IntKey(k), IntValue(k)).ok()) << k;
}

TEST(PersistContext, TwoPoolsKeepTheirOwnModes) {
  TempDir dir;
  auto adr = CreateIndex("rntree", dir.file("adr.pool"), PoolOptions(PersistMode::kAdr));
  ASSERT_TRUE(adr.ok()) << adr.status().ToString();
  // Opening an eadr pool after the adr one must not turn the adr pool's flushes off.
  auto eadr = CreateIndex("rntree", dir.file("eadr.pool"), PoolOptions(PersistMode::kEadr));
  ASSERT_TRUE(eadr.ok()) << eadr.status().ToString();
  for (uint64_t round = 0; round < 10; ++round) {
    InsertKeys(*adr.value(), round * 100, 100);
    InsertKeys(*eadr.value(), round * 100, 100);
  }
  const pm::PersistContext& a = adr.value()->pool()->persist_context();
  const pm::PersistContext& e = eadr.value()->pool()->persist_context();
  EXPECT_EQ(a.mode(), PersistMode::kAdr);
  EXPECT_EQ(e.mode(), PersistMode::kEadr);
  // The counters count what each index asked for, in its own pool only.
  const PersistCounters ca = a.counters(), ce = e.counters();
  EXPECT_GE(ca.fences, 2000u);
  EXPECT_EQ(ca.fences, ce.fences) << "same index, same operations, same fences asked";
  // What ran: every adr fence an sfence, every flushed line written back; eadr nothing.
  EXPECT_EQ(a.executed().sfences, ca.fences);
  EXPECT_EQ(a.executed().lines_written_back, ca.flushes);
  EXPECT_EQ(e.executed().sfences, 0u);
  EXPECT_EQ(e.executed().lines_written_back, 0u);
}

TEST(PersistContext, AHookSeesOnlyItsOwnPool) {
  TempDir dir;
  CountingHook hook;
  auto tracked =
      CreateIndex("wort", dir.file("tracked.pool"), PoolOptions(PersistMode::kAdr, &hook));
  ASSERT_TRUE(tracked.ok()) << tracked.status().ToString();
  auto other = CreateIndex("wort", dir.file("other.pool"), PoolOptions(PersistMode::kAdr));
  ASSERT_TRUE(other.ok()) << other.status().ToString();
  EXPECT_EQ(hook.maps, 1u);
  InsertKeys(*tracked.value(), 0, 500);
  const uint64_t fences = hook.fences;
  InsertKeys(*other.value(), 0, 500);  // another pool's fences are not this hook's
  EXPECT_EQ(hook.fences, fences);
  // From the generation bump at open on, the hook saw every fence and line of its pool.
  const PersistCounters c = tracked.value()->pool()->counters();
  EXPECT_EQ(hook.fences, c.fences);
  EXPECT_EQ(hook.flushed, c.flushes);
  EXPECT_GT(other.value()->pool()->counters().fences, 0u);
}

TEST(PersistContext, MediaModelIsOffByDefaultAndPerPool) {
  TempDir dir;
  Options modeled = PoolOptions(PersistMode::kAdr);
  modeled.model_media = true;
  auto plain = CreateIndex("rntree", dir.file("plain.pool"), PoolOptions(PersistMode::kAdr));
  auto model = CreateIndex("rntree", dir.file("model.pool"), modeled);
  ASSERT_TRUE(plain.ok() && model.ok());
  InsertKeys(*plain.value(), 0, 2000);
  InsertKeys(*model.value(), 0, 2000);
  plain.value()->pool()->persist_context().drain_media();
  model.value()->pool()->persist_context().drain_media();
  EXPECT_EQ(plain.value()->pool()->counters().media_writes, 0u);
  EXPECT_GT(model.value()->pool()->counters().media_writes, 0u);
}

bool InMemory(const std::string& dir) {
  struct statfs fs;
  if (statfs(dir.c_str(), &fs) != 0) return false;
  const unsigned long t = static_cast<unsigned long>(fs.f_type);
  return t == 0x01021994ul || t == 0x858458f6ul || t == 0x958458f6ul;
}

TEST(PersistContext, TmpfsPoolSaysPowerLossNeedsPm) {
  TempDir dir;
  if (!InMemory(dir.path())) GTEST_SKIP() << dir.path() << " is not in memory";
  auto index = CreateIndex("rntree", dir.file("p.pool"), PoolOptions(PersistMode::kAdr));
  ASSERT_TRUE(index.ok());
  EXPECT_TRUE(index.value()->pool()->memory_backed());
  EXPECT_FALSE(index.value()->pool()->persist_context().uses_msync());
  EXPECT_EQ(index.value()->pool()->durability(),
            "survives process crash; power loss needs PM (file in memory: tmpfs)");
}

// An ordinary file on a disk file system maps with page granularity: clwb does not reach
// the disk, so adr persists by msync and says so.
TEST(PersistContext, PageGranularityFileSystemPersistsByMsync) {
  std::string base;
  for (const char* d : {"/var/tmp", "/tmp", "."}) {
    if (access(d, W_OK) == 0 && !InMemory(d)) {
      base = d;
      break;
    }
  }
  if (base.empty()) GTEST_SKIP() << "no writable directory on a disk file system";
  const std::string path = base + "/pmindex-msync-" + std::to_string(getpid()) + ".pool";
  ::unlink(path.c_str());
  {
    Options options = PoolOptions(PersistMode::kAdr);
    options.pool_size = 4 << 20;
    options.huge_pages = false;
    auto index = CreateIndex("rntree", path, options);
    ASSERT_TRUE(index.ok()) << index.status().ToString();
    Pool* pool = index.value()->pool();
    if (pool->granularity() != StoreGranularity::kPage)
      GTEST_SKIP() << base << " is DAX: cache flushes are enough there";
    EXPECT_TRUE(pool->persist_context().uses_msync());
    EXPECT_EQ(pool->durability(), "survives power loss (msync of touched pages per flush)");
    InsertKeys(*index.value(), 0, 200);
    EXPECT_EQ(pool->persist_context().executed().lines_written_back, pool->counters().flushes);
    // eadr on the same medium makes no durability claim beyond a process crash.
    EXPECT_EQ(DescribeDurability(PersistMode::kEadr, StoreGranularity::kPage, ""),
              "survives process crash; power loss needs msync (adr mode)");
  }
  auto reopened = OpenIndex(path, PoolOptions(PersistMode::kAdr), "rntree");
  ASSERT_TRUE(reopened.ok()) << reopened.status().ToString();
  std::string v;
  EXPECT_TRUE(reopened.value()->lookup(IntKey(199), &v).ok());
  reopened.value().reset();
  ::unlink(path.c_str());
}

}  // namespace
}  // namespace pmindex
