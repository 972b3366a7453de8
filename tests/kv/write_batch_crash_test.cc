// Crash atomicity of write batches on every persistent index: a pool holding 48 keys is
// opened under the crash tracker (src/pm/crash/tracker.h) and one batch of 16 writes (8 new
// keys, 4 overwrites, 4 deletes) is written; every fence of the open, the batch and the close
// is a crash point, and every image of it must recover (OpenIndex: index recovery, allocator
// rebuild, batch replay) to a clean verify(), with all 16 writes visible or none, no batch
// record left pending and no block leaked. Images whose batch record is committed are also
// crashed again at every fence of their recovery (the replay), on a sample of points.
// The write-batch mutants must fail the same check (WriteBatchMutantTest).
#include <gtest/gtest.h>

#include <fcntl.h>
#include <unistd.h>

#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "common/test_util.h"
#include "pm/alloc.h"
#include "pm/crash/tracker.h"
#include "pm/mutant.h"
#include "pm/pool_format.h"
#include "pmindex/index.h"
#include "pmindex/write_batch.h"

namespace pmindex::testing {
namespace {

using Model = std::map<std::string, std::string>;

std::string IntK(uint64_t k) { return std::string(IntKey(k).view()); }
std::string Val(uint64_t v) { return std::string(IntValue(v)); }

constexpr uint64_t kPrefill = 48;

Options PoolOptions(const std::string& name, bool read_only, PersistHook* hook = nullptr) {
  Options o;
  o.index_params = FindIndex(name)->campaign_params;  // small hash structures: splits show
  o.pool_size = 8ull << 20;
  o.mode = PersistMode::kAdr;
  o.huge_pages = false;
  o.read_only = read_only;
  o.poison_freed = true;
  o.persist_hook = hook;
  return o;
}

struct Scenario {
  Model before, after;
  WriteBatch batch;
  std::vector<std::string> keys;  // every key either state holds or the batch names
};

Scenario MakeScenario() {
  Scenario s;
  for (uint64_t k = 0; k < kPrefill; ++k) s.before[IntK(k)] = Val(1000 + k);
  s.after = s.before;
  for (uint64_t k = 100; k < 108; ++k) {  // 8 new keys
    s.batch.Put(IntK(k), Val(2000 + k));
    s.after[IntK(k)] = Val(2000 + k);
  }
  for (uint64_t k = 0; k < 4; ++k) {  // 4 overwrites
    s.batch.Put(IntK(k), Val(3000 + k));
    s.after[IntK(k)] = Val(3000 + k);
  }
  for (uint64_t k = 4; k < 8; ++k) {  // 4 deletes
    s.batch.Delete(IntK(k));
    s.after.erase(IntK(k));
  }
  for (const auto& [k, v] : s.after) s.keys.push_back(k);
  for (uint64_t k = 4; k < 8; ++k) s.keys.push_back(IntK(k));
  return s;
}

// The committed-record word of a pool file (0: no batch pending).
uint64_t PendingRecord(const std::string& path) {
  uint64_t word = 0;
  const int fd = ::open(path.c_str(), O_RDONLY);
  if (fd >= 0) {
    if (::pread(fd, &word, 8, offsetof(pm::PoolHeader, batch_record)) != 8) word = 0;
    ::close(fd);
  }
  return word;
}

// Sums the blocks the index reaches.
class SizeVisitor : public BlockVisitor {
 public:
  explicit SizeVisitor(pm::Allocator& a) : a_(a) {}
  Status visit(uint64_t offset) override {
    bytes += a_.block_size(offset);
    return Status::OK();
  }
  uint64_t bytes = 0;

 private:
  pm::Allocator& a_;
};

// Which of the two states the index holds: "before", "after", or a description of neither.
std::string StateOf(Index& index, const Scenario& s) {
  bool is_before = true, is_after = true;
  std::string odd;  // the first key that matches neither state
  for (const std::string& k : s.keys) {
    std::string v;
    const Status st = index.lookup(k, &v);
    if (!st.ok() && !st.IsNotFound()) return "lookup: " + st.ToString();
    auto match = [&](const Model& m) {
      auto it = m.find(k);
      return it == m.end() ? st.IsNotFound() : st.ok() && v == it->second;
    };
    is_before = is_before && match(s.before);
    is_after = is_after && match(s.after);
    if (!is_before && !is_after && odd.empty()) {
      odd = "; key " + std::to_string(IntKey::Decode(k)) +
            (st.ok() ? " holds " + std::to_string(IntValue::Decode(v)) : " is absent");
    }
  }
  size_t pairs = 0;
  const Status it = index.for_each([&](std::string_view, std::string_view) {
    ++pairs;
    return true;
  });
  if (it.ok()) {
    is_before = is_before && pairs == s.before.size();
    is_after = is_after && pairs == s.after.size();
  }
  if (is_after) return "after";
  if (is_before) return "before";
  return "part of the batch is visible (" + std::to_string(pairs) + " pairs" + odd + ")";
}

// Recovers an image copy-on-write and checks it: clean verify, all-or-none, no record left
// pending. Across an open nothing can leak (the allocator is rebuilt from what the index
// and a committed record reach), so what is left to check is that recovery retires the
// record (the commit word is 0, so no later rebuild keeps its block) and, where the image
// held no committed record, that the rebuild kept nothing the index does not reach (an
// uncommitted record's block is free). After a replay the index may keep spare blocks it
// allocated while applying, so the byte count is not compared there.
Status CheckImage(const std::string& name, const std::string& path, const Scenario& s) {
  const bool pending = PendingRecord(path) != 0;
  Result<std::unique_ptr<Index>> r = OpenIndex(path, PoolOptions(name, true), name);
  if (!r.ok()) return r.status().WithContext("recovery");
  Index& index = *r.value();
  Pool& pool = *index.pool();
  SizeVisitor visitor(pool.allocator());
  if (Status v = index.visit_blocks(visitor); !v.ok()) return v;
  if (!pending && visitor.bytes != pool.allocator().allocated_bytes()) {
    return Status::Corruption("leak: " + std::to_string(pool.allocator().allocated_bytes()) +
                              " bytes allocated, " + std::to_string(visitor.bytes) +
                              " reachable");
  }
  if (reinterpret_cast<pm::PoolHeader*>(pool.base())->batch_record != 0)
    return Status::Corruption("a batch record is still pending after recovery");
  if (Status v = index.verify(); !v.ok()) return v.WithContext("verify");
  const std::string state = StateOf(index, s);
  if (state != "before" && state != "after") return Status::Corruption(state);
  return Status::OK();
}

// A second crash at every fence of the recovery (the replay) of an image whose record is
// committed: each of those images must recover as well.
Status CheckReplayCrash(const std::string& name, const std::string& image, const Scenario& s) {
  const std::string scratch = image + ".replay";
  std::error_code ec;
  std::filesystem::copy_file(image, scratch, std::filesystem::copy_options::overwrite_existing,
                             ec);
  if (ec) return Status::IOError(ec.message());
  Status result;
  {
    pm::crash::TrackerOptions t;
    t.random_images = 1;
    t.flip_each = false;
    t.max_failures = 1;
    t.timeout_seconds = CampaignTimeout();
    pm::crash::CrashTracker tracker(t, [&](const std::string& p, uint64_t, const std::string&) {
      return CheckImage(name, p, s);
    });
    tracker.use_pool_extent();
    Result<std::unique_ptr<Index>> index = OpenIndex(scratch, PoolOptions(name, false, &tracker), name);
    if (index.ok()) tracker.crash_point();
    if (!tracker.report().failures.empty()) {
      const pm::crash::CrashFailure& f = tracker.report().failures.front();
      result = Status::Corruption("crash during replay, fence " + std::to_string(f.point) +
                                  " image " + f.image + ": " + f.message);
    } else if (!index.ok()) {
      result = index.status().WithContext("replay (second-crash copy)");
    }
  }
  std::filesystem::remove(scratch, ec);
  return result;
}

struct RunResult {
  pm::crash::TrackerReport report;
  Status live;
};

// Prefills a pool, then writes the batch under the tracker, every fence a crash point.
RunResult RunBatchUnderCrashes(const std::string& name, const std::string& dir,
                               bool replay_crashes) {
  RunResult out;
  const Scenario s = MakeScenario();
  const std::string path = dir + "/pool";
  {
    Result<std::unique_ptr<Index>> r = CreateIndex(name, path, PoolOptions(name, false));
    if (!r.ok()) return {{}, r.status()};
    for (const auto& [k, v] : s.before) {
      if (Status st = r.value()->upsert(k, v); !st.ok()) return {{}, st};
    }
    if (Status st = r.value()->close(); !st.ok()) return {{}, st};
  }
  pm::crash::TrackerOptions t;
  // Every fence in every build; sanitizer builds (several times slower) check fewer images.
  t.random_images = Sanitized() ? 1 : 2;
  t.max_flip_lines = Sanitized() ? 8 : 64;
  // Torn lines (each 8-byte word old or new) too, except for fastfair, whose in-place shifts
  // need a line's stores to persist in order and fail torn images by design (doc/fastfair.md).
  t.torn_images = name == "fastfair" ? 0 : 1;
  t.max_failures = 1;
  t.image_dir = dir;
  t.timeout_seconds = CampaignTimeout();
  pm::crash::CrashTracker tracker(
      t, [&](const std::string& image, uint64_t point, const std::string& image_name) {
        Status st = CheckImage(name, image, s);
        if (st.ok() && replay_crashes && PendingRecord(image) != 0 && image_name == "new" &&
            point % (Sanitized() ? 12 : 3) == 0)
          st = CheckReplayCrash(name, image, s);
        return st;
      });
  tracker.use_pool_extent();
  {
    Result<std::unique_ptr<Index>> r = OpenIndex(path, PoolOptions(name, false, &tracker), name);
    if (!r.ok()) return {tracker.report(), r.status()};
    out.live = r.value()->Write(s.batch);
    if (out.live.ok() && StateOf(*r.value(), s) != "after")
      out.live = Status::Corruption("the live index does not hold the batch");
    tracker.crash_point();
    if (out.live.ok()) out.live = r.value()->close();
  }
  out.report = tracker.report();
  return out;
}

std::vector<std::string> PersistentIndexNames() {
  std::vector<std::string> out;
  for (const std::string& name : WorkingIndexNames()) {
    const IndexRegistration* reg = FindIndex(name);
    if (reg->attach != nullptr && reg->traits.persistent) out.push_back(name);
  }
  return out;
}

std::string Describe(const pm::crash::TrackerReport& r) {
  std::string s = std::to_string(r.fences) + " fences, " + std::to_string(r.points_checked) +
                  " points, " + std::to_string(r.images) + " images";
  for (const pm::crash::CrashFailure& f : r.failures)
    s += "\n  FAIL point " + std::to_string(f.point) + " image " + f.image + ": " + f.message;
  return s;
}

class WriteBatchCrashTest : public ::testing::TestWithParam<std::string> {};

TEST_P(WriteBatchCrashTest, SixteenWritesAllOrNoneAtEveryFence) {
  TempDir dir;
  const RunResult r = RunBatchUnderCrashes(GetParam(), dir.path(), /*replay_crashes=*/true);
  ASSERT_TRUE(r.live.ok()) << r.live.ToString();
  EXPECT_TRUE(r.report.failures.empty()) << Describe(r.report);
  EXPECT_GT(r.report.points_checked, 16u);
  std::printf("%-14s %s\n", GetParam().c_str(), Describe(r.report).c_str());
}

INSTANTIATE_TEST_SUITE_P(Registry, WriteBatchCrashTest,
                         ::testing::ValuesIn(PersistentIndexNames()),
                         pmindex::testing::IndexParamName);

// Each write-batch mutant (src/core/write_batch_log.cc) fails the crash check above. The
// caller selects the mutant; this runs the check and switches it off again.
void ExpectCaught(const std::string& index) {
  const std::string mutant = pm::selected_mutant();
  TempDir dir;
  const RunResult r = RunBatchUnderCrashes(index, dir.path(), /*replay_crashes=*/false);
  pm::set_mutant(nullptr);
  ASSERT_TRUE(r.live.ok()) << r.live.ToString();
  ASSERT_FALSE(r.report.failures.empty()) << mutant << " on " << index << " survived";
  std::printf("%s on %s caught: %s\n", mutant.c_str(), index.c_str(),
              r.report.failures[0].message.c_str());
}

TEST(WriteBatchMutantTest, CommitBeforeRecordPersistIsCaught) {
  PMINDEX_REQUIRE_MUTANTS();
  for (const char* index : {"rntree", "wort"}) {
    if (FindIndex(index) == nullptr) continue;
    ASSERT_TRUE(pm::set_mutant("write_batch.commit_before_record_persist"));
    ExpectCaught(index);
  }
}

TEST(WriteBatchMutantTest, ClearBeforeApplyIsCaught) {
  PMINDEX_REQUIRE_MUTANTS();
  for (const char* index : {"rntree", "wort"}) {
    if (FindIndex(index) == nullptr) continue;
    ASSERT_TRUE(pm::set_mutant("write_batch.clear_before_apply"));
    ExpectCaught(index);
  }
}

}  // namespace
}  // namespace pmindex::testing
