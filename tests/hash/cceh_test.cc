// CCEH's own tests: a lockstep model with verify() on small segments (many splits and
// doublings), every 8-byte key storable, a split and a doubling interrupted at every fence
// (crash images recovered with nothing leaked, a lock the crash left set free again), crash
// images sampled over a random workload, the persistence cost of each operation, and the
// two reader-visibility rules (readers see only persisted values and directories), each
// shown to catch its mutant. Concurrency: cceh_concurrent_test.cc.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <fstream>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "common/test_util.h"
#include "hash/cceh/cceh.h"
#include "pm/alloc.h"
#include "pm/mutant.h"
#include "pm/persist.h"
#include "pmindex/index.h"

namespace pmindex::testing {
namespace {

using hash::cceh::CcehIndex;
using Model = std::map<uint64_t, uint64_t>;

constexpr const char* kSmall = "cceh segment_bytes=512 probe=4";  // 7 buckets, 21 slots

Options PoolOptions() {
  Options o;
  o.pool_size = 4ull << 20;
  return o;
}

std::string K(uint64_t k) { return std::string(IntKey(k).view()); }
std::string V(uint64_t v) { return std::string(IntValue(v)); }

std::unique_ptr<CcehIndex> CreateCceh(const std::string& path, const char* params = kSmall) {
  auto pool = Pool::Create(path, hash::cceh::kCcehKind, params, PoolOptions());
  EXPECT_TRUE(pool.ok()) << pool.status().ToString();
  if (!pool.ok()) return nullptr;
  auto idx = CcehIndex::Attach(std::move(pool).value(), true);
  EXPECT_TRUE(idx.ok()) << idx.status().ToString();
  if (!idx.ok()) return nullptr;
  return std::unique_ptr<CcehIndex>(static_cast<CcehIndex*>(idx.value().release()));
}

// The index holds exactly `model` (lookups and the full iteration).
void ExpectHolds(Index& index, const Model& model) {
  std::string v;
  for (const auto& [k, val] : model) {
    ASSERT_TRUE(index.lookup(K(k), &v).ok()) << k;
    ASSERT_EQ(IntValue::Decode(v), val) << k;
  }
  Model seen;
  ASSERT_TRUE(index.for_each([&](std::string_view key, std::string_view value) {
                     EXPECT_TRUE(seen.emplace(IntKey::Decode(key), IntValue::Decode(value)).second)
                         << "key reported twice";
                     return true;
                   }).ok());
  ASSERT_EQ(seen, model);
}

TEST(CcehTest, LockstepWithModel) {
  const uint64_t seed = TestSeed(30);
  SCOPED_TRACE(SeedTrace(seed));
  TempDir dir;
  auto index = CreateCceh(dir.file("pool"));
  ASSERT_NE(index, nullptr);
  std::mt19937_64 rng(seed);
  Model model;
  const uint64_t ops = Scale(20000), space = Scale(3000);
  for (uint64_t i = 0; i < ops; ++i) {
    const uint64_t k = rng() % space * 0x9E3779B97F4A7C15ull;  // spread, and key 0
    const uint64_t v = rng();
    const int dice = static_cast<int>(rng() % 10);
    const bool present = model.count(k) != 0;
    std::string got;
    Status s;
    if (dice < 4) {
      s = index->insert(K(k), V(v));
      ASSERT_EQ(s.ok(), !present) << i << " " << s.ToString();
      if (!present) model[k] = v;
    } else if (dice < 5) {
      s = index->update(K(k), V(v));
      ASSERT_EQ(s.ok(), present) << i;
      if (present) model[k] = v;
    } else if (dice < 6) {
      ASSERT_TRUE(index->upsert(K(k), V(v)).ok());
      model[k] = v;
    } else if (dice < 8) {
      ASSERT_EQ(index->remove(K(k)).ok(), present) << i;
      model.erase(k);
    } else {
      s = index->lookup(K(k), &got);
      ASSERT_EQ(s.ok(), present) << i;
      if (present) {
        ASSERT_EQ(IntValue::Decode(got), model[k]);
      }
    }
    if (i % 997 == 0) {
      ASSERT_TRUE(index->verify().ok()) << i << ": " << index->verify().ToString();
    }
  }
  ASSERT_TRUE(index->verify().ok()) << index->verify().ToString();
  ExpectHolds(*index, model);
  EXPECT_GE(index->global_depth(), 5u);
  EXPECT_EQ(index->stats().keys, model.size());
  index.reset();
  auto reopened = OpenIndex(dir.file("pool"), PoolOptions(), "cceh");
  ASSERT_TRUE(reopened.ok()) << reopened.status().ToString();
  ExpectHolds(**reopened, model);
}

TEST(CcehTest, EveryEightByteKeyIsStorable) {
  TempDir dir;
  auto index = CreateCceh(dir.file("pool"));
  ASSERT_NE(index, nullptr);
  const uint64_t keys[] = {0, UINT64_MAX, 1, UINT64_MAX - 1, 1ull << 63, 0xFFFFFFFFull,
                           0xA5A5A5A5A5A5A5A5ull};
  Model model;
  for (uint64_t k : keys) {
    ASSERT_TRUE(index->insert(K(k), V(k == 0 ? UINT64_MAX : 0)).ok()) << k;
    model[k] = k == 0 ? UINT64_MAX : 0;
    EXPECT_TRUE(index->insert(K(k), V(5)).IsAlreadyExists()) << k;
  }
  ExpectHolds(*index, model);
  for (uint64_t i = 0; i < 200; ++i) {  // splits move them between segments
    ASSERT_TRUE(index->insert(K(i * 7919 + 3), V(i)).ok());
    model[i * 7919 + 3] = i;
  }
  ASSERT_TRUE(index->update(K(0), V(0)).ok());
  model[0] = 0;
  ASSERT_TRUE(index->remove(K(UINT64_MAX)).ok());
  model.erase(UINT64_MAX);
  EXPECT_TRUE(index->remove(K(UINT64_MAX)).IsNotFound());
  ASSERT_TRUE(index->verify().ok()) << index->verify().ToString();
  ExpectHolds(*index, model);
  index.reset();
  auto reopened = OpenIndex(dir.file("pool"), PoolOptions(), "cceh");
  ASSERT_TRUE(reopened.ok()) << reopened.status().ToString();
  ExpectHolds(**reopened, model);
}

TEST(CcehTest, GeometryFromParameters) {
  EXPECT_TRUE(hash::cceh::ParseGeometry(hash::cceh::kDefaultParams).ok());
  EXPECT_TRUE(hash::cceh::ParseGeometry(hash::cceh::kCampaignParams).ok());
  auto g = hash::cceh::ParseGeometry("cceh segment_bytes=16384 probe=4");
  ASSERT_TRUE(g.ok());
  EXPECT_EQ(g->buckets(), 255u);
  EXPECT_FALSE(hash::cceh::ParseGeometry("segment_bytes=100").ok());
  EXPECT_FALSE(hash::cceh::ParseGeometry("segment_bytes=256 probe=9").ok());
}

// Fences per operation: an insert into an empty slot 2 (pair, then valid bit), an update 1,
// a remove 1; a split persists the new segment, the directory entries and the old shape.
TEST(CcehTest, FencesPerOperation) {
  TempDir dir;
  auto index = CreateCceh(dir.file("pool"), hash::cceh::kCampaignParams);
  ASSERT_NE(index, nullptr);
  ASSERT_TRUE(index->insert(K(1), V(1)).ok());  // makes the table
  auto cost = [&](const std::function<void()>& op) {
    const PersistCounters before = index->pool()->persist_context().thread_counters();
    op();
    return index->pool()->persist_context().thread_counters() - before;
  };
  PersistCounters c = cost([&] { ASSERT_TRUE(index->insert(K(2), V(2)).ok()); });
  EXPECT_EQ(c.fences, 2u);
  EXPECT_EQ(c.flushes, 2u);
  c = cost([&] { ASSERT_TRUE(index->update(K(2), V(3)).ok()); });
  EXPECT_EQ(c.fences, 1u);
  c = cost([&] { ASSERT_TRUE(index->remove(K(2)).ok()); });
  EXPECT_EQ(c.fences, 1u);
  EXPECT_EQ(c.flushes, 1u);
}

// A crash image of the pool: "old" holds what was fenced, "new" every store issued.
class FenceImages : public PersistHook {
 public:
  using Check = std::function<void(const std::vector<char>& image, uint64_t fence, const char* which)>;
  FenceImages(Pool& pool, uint64_t every, Check check)
      : base_(pool.base()), size_(pool.size()), every_(every), check_(std::move(check)),
        durable_(base_, base_ + size_) {}
  void on_flush(uintptr_t first, size_t lines) override {
    for (size_t i = 0; i < lines; ++i) {
      const uintptr_t line = first + 64 * i;
      const uintptr_t b = reinterpret_cast<uintptr_t>(base_);
      if (line < b || line + 64 > b + size_) continue;
      Pending p;
      p.offset = line - b;
      std::memcpy(p.bytes, reinterpret_cast<const void*>(line), 64);
      pending_.push_back(p);
    }
  }
  void on_fence() override {
    if (++fences_ % every_ == 0) {
      check_(durable_, fences_, "old");
      check_(std::vector<char>(base_, base_ + size_), fences_, "new");
      ++checked_;
    }
    for (const Pending& p : pending_) std::memcpy(&durable_[p.offset], p.bytes, 64);
    pending_.clear();
  }
  uint64_t checked() const { return checked_; }

 private:
  struct Pending {
    uint64_t offset;
    char bytes[64];
  };
  char* base_;
  size_t size_;
  uint64_t every_;
  Check check_;
  std::vector<char> durable_;
  std::vector<Pending> pending_;
  uint64_t fences_ = 0, checked_ = 0;
};

// Recovers `image` (written to `path`) and checks it holds `before`, with `key` either
// absent/old or `after_value`; nothing leaked; the index takes more writes. Returns the
// first failure as a string ("" = fine); `locked` counts segment locks the crash left set.
std::string CheckImage(const std::vector<char>& image, const std::string& path, const Model& before,
                       uint64_t key, const uint64_t* after_value) {
  std::ofstream(path, std::ios::binary | std::ios::trunc)
      .write(image.data(), static_cast<std::streamsize>(image.size()));
  auto idx = OpenIndex(path, PoolOptions(), "cceh");
  if (!idx.ok()) return "open: " + idx.status().ToString();
  Index& index = **idx;
  if (Status s = index.verify(); !s.ok()) return "verify: " + s.ToString();
  if (index.pool()->allocator().allocated_bytes() != index.stats().pm_bytes) return "leaked";
  std::string v;
  for (const auto& [k, val] : before) {
    if (k == key) continue;
    if (!index.lookup(K(k), &v).ok()) return "lost key " + std::to_string(k);
    if (IntValue::Decode(v) != val) return "wrong value of " + std::to_string(k);
  }
  if (index.lookup(K(key), &v).ok()) {
    auto b = before.find(key);
    const uint64_t got = IntValue::Decode(v);
    if (!(b != before.end() && b->second == got) && !(after_value && *after_value == got))
      return "interrupted key " + std::to_string(key) + " holds " + std::to_string(got) +
             ", a value never written";
  }
  size_t n = 0;
  if (!index.for_each([&](std::string_view, std::string_view) { return ++n, true; }).ok())
    return "for_each failed";
  if (n + 1 < before.size() || n > before.size() + 1) return "for_each count";
  for (uint64_t i = 0; i < 64; ++i) {  // every segment takes writes: no lock left held
    if (!index.upsert(K(i * 0x9E3779B97F4A7C15ull + 11), V(i)).ok()) return "upsert after";
  }
  if (Status s = index.verify(); !s.ok()) return "verify after writes: " + s.ToString();
  return "";
}

// Keys 1, 2, 3, ... inserted into a fresh small table until the one whose insert splits
// (more than 2 fences), for a split that doubles (`doubling`) or one that does not.
std::vector<uint64_t> KeysUpToSplit(const std::string& path, bool doubling) {
  auto index = CreateCceh(path);
  std::vector<uint64_t> keys;
  for (uint64_t k = 1; k < 5000; ++k) {
    const uint32_t g = index->global_depth();
    const PersistCounters before = index->pool()->persist_context().thread_counters();
    EXPECT_TRUE(index->insert(K(k), V(k)).ok());
    keys.push_back(k);
    const uint64_t fences = (index->pool()->persist_context().thread_counters() - before).fences;
    if (fences > 2 && g > 0 && (index->global_depth() != g) == doubling) break;
  }
  return keys;
}

// The split's (and doubling's) every fence crashed, both images each: the mutant named, if
// any, is switched on for the run. Returns the failures found.
std::vector<std::string> CrashSplitAtEveryFence(bool doubling, const char* mutant,
                                                uint64_t* locked_images) {
  TempDir dir;
  const std::vector<uint64_t> keys = KeysUpToSplit(dir.file("probe"), doubling);
  pm::set_mutant(mutant);
  auto index = CreateCceh(dir.file("pool"));
  Model model;
  for (size_t i = 0; i + 1 < keys.size(); ++i) {
    EXPECT_TRUE(index->insert(K(keys[i]), V(keys[i])).ok());
    model[keys[i]] = keys[i];
  }
  const uint64_t last = keys.back();
  std::vector<std::string> failures;
  const uint32_t gen = static_cast<uint32_t>(index->pool()->generation());
  FenceImages hook(*index->pool(), 1, [&](const std::vector<char>& image, uint64_t fence,
                                          const char* which) {
    for (size_t off = 0; off + 64 <= image.size(); off += 64) {  // a locked segment in the image
      uint64_t w[3];
      std::memcpy(w, &image[off], sizeof(w));
      if (w[2] == hash::cceh::kSegmentMagic && (w[0] & 1) && (w[0] >> 32) == gen) {
        ++*locked_images;
        break;
      }
    }
    std::string f = CheckImage(image, dir.file("crashed"), model, last, &last);
    if (!f.empty()) failures.push_back("fence " + std::to_string(fence) + " " + which + ": " + f);
  });
  index->pool()->persist_context().set_hook(&hook);
  EXPECT_TRUE(index->insert(K(last), V(last)).ok());
  index->pool()->persist_context().set_hook(nullptr);
  pm::set_mutant("");
  EXPECT_GE(hook.checked(), 5u);
  return failures;
}

TEST(CcehCrashTest, SplitWithDoublingAtEveryFence) {
  uint64_t locked = 0;
  for (const std::string& f : CrashSplitAtEveryFence(true, "", &locked)) ADD_FAILURE() << f;
  EXPECT_GT(locked, 0u) << "no image held a segment locked by the crash";
}

TEST(CcehCrashTest, SplitWithoutDoublingAtEveryFence) {
  uint64_t locked = 0;
  for (const std::string& f : CrashSplitAtEveryFence(false, "", &locked)) ADD_FAILURE() << f;
  EXPECT_GT(locked, 0u);
}

// The persist-order mutants of the split and the doubling break these images.
TEST(CcehCrashTest, SplitMutantsAreCaught) {
  PMINDEX_REQUIRE_MUTANTS();
  struct Case {
    const char* mutant;
    bool doubling;
  };
  for (const Case& c : {Case{"cceh.shape_before_dir", false},
                        Case{"cceh.segment_before_persist", false},
                        Case{"cceh.switch_before_dir_persist", true},
                        Case{"cceh.lock_ignores_generation", false}}) {
    uint64_t locked = 0;
    EXPECT_FALSE(CrashSplitAtEveryFence(c.doubling, c.mutant, &locked).empty()) << c.mutant;
  }
}

// Crash images at a sample of the fences of a random workload on small segments.
TEST(CcehCrashTest, RandomWorkloadImagesRecoverWithNothingLeaked) {
  const uint64_t seed = TestSeed(31);
  SCOPED_TRACE(SeedTrace(seed));
  TempDir dir;
  auto index = CreateCceh(dir.file("pool"));
  std::mt19937_64 rng(seed);
  Model model;
  uint64_t key = 0, value = 0;
  bool writes = false;
  std::vector<std::string> failures;
  FenceImages hook(*index->pool(), Sanitized() ? 11 : 7,
                   [&](const std::vector<char>& image, uint64_t fence, const char* which) {
                     std::string f = CheckImage(image, dir.file("crashed"), model, key,
                                                writes ? &value : nullptr);
                     if (!f.empty()) failures.push_back(std::to_string(fence) + which + ": " + f);
                   });
  index->pool()->persist_context().set_hook(&hook);
  for (uint64_t i = 0; i < Scale(900) && failures.empty(); ++i) {
    key = rng() % 300 + 1;
    value = rng();
    const int dice = static_cast<int>(rng() % 10);
    writes = dice < 7;
    if (dice < 7) {
      ASSERT_TRUE(index->upsert(K(key), V(value)).ok());
      model[key] = value;
    } else {
      const bool present = model.count(key) != 0;
      EXPECT_EQ(index->remove(K(key)).ok(), present);
      model.erase(key);
    }
  }
  index->pool()->persist_context().set_hook(nullptr);
  EXPECT_GT(hook.checked(), Sanitized() ? 15u : 60u);
  for (const std::string& f : failures) ADD_FAILURE() << f;
}

// Watches the root's directory word through the flush/fence stream: at every fence the
// directory readers use must be the durable one.
class DirectoryWatch : public PersistHook {
 public:
  DirectoryWatch(CcehIndex& index, const uint64_t* root_dir)
      : index_(index), root_dir_(root_dir), durable_(*root_dir) {}
  void on_flush(uintptr_t first, size_t lines) override {
    const uintptr_t line = reinterpret_cast<uintptr_t>(root_dir_) & ~uintptr_t{63};
    if (line >= first && line < first + 64 * lines) pending_ = *root_dir_;
  }
  void on_fence() override {
    if (index_.published_directory() != durable_) ++violations_;
    if (pending_) durable_ = *pending_;
    pending_.reset();
  }
  uint64_t violations() const { return violations_; }

 private:
  CcehIndex& index_;
  const uint64_t* root_dir_;
  uint64_t durable_;
  std::optional<uint64_t> pending_;
  uint64_t violations_ = 0;
};

// The mutant selected, if any, must be selected before the index is made.
uint64_t DirectoryViolations() {
  TempDir dir;
  auto index = CreateCceh(dir.file("pool"));
  const auto* root = reinterpret_cast<const hash::cceh::Root*>(index->pool()->root_area());
  DirectoryWatch watch(*index, &root->dir);
  index->pool()->persist_context().set_hook(&watch);
  for (uint64_t k = 0; k < 400; ++k) EXPECT_TRUE(index->insert(K(k), V(k)).ok());
  index->pool()->persist_context().set_hook(nullptr);
  EXPECT_GE(index->global_depth(), 4u);
  return watch.violations();
}

TEST(CcehVisibilityTest, ReadersSeeOnlyPersistedDirectory) {
  EXPECT_EQ(DirectoryViolations(), 0u);
  if (!pm::kMutantsCompiled) return;
  ASSERT_TRUE(pm::set_mutant("cceh.publish_dir_before_persist"));
  EXPECT_GT(DirectoryViolations(), 0u);
  pm::set_mutant("");
}

// At every fence of an update and of an insert, a reader on another thread looks the key up:
// until the writer's last fence it must not return the new value.
class ReaderAtFences : public PersistHook {
 public:
  ReaderAtFences(Index& index, uint64_t key, uint64_t fresh) : index_(index), key_(key), fresh_(fresh) {}
  void on_flush(uintptr_t, size_t) override {}
  void on_fence() override {
    auto done = std::make_shared<std::atomic<int>>(0);  // 1: returned old/absent, 2: new value
    readers_.emplace_back([this, done] {
      std::string v;
      const bool hit = index_.lookup(K(key_), &v).ok();
      done->store(hit && IntValue::Decode(v) == fresh_ ? 2 : 1);
    });
    const auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(150);
    while (done->load() == 0 && std::chrono::steady_clock::now() < until)
      std::this_thread::sleep_for(std::chrono::microseconds(200));
    if (done->load() == 2) ++early_;
  }
  // Joins the readers (after the writer returned). How many saw the value before its fence.
  uint64_t finish() {
    for (std::thread& t : readers_) t.join();
    return early_;
  }

 private:
  Index& index_;
  uint64_t key_, fresh_;
  std::vector<std::thread> readers_;
  uint64_t early_ = 0;
};

uint64_t EarlyReads() {
  TempDir dir;
  auto index = CreateCceh(dir.file("pool"));
  EXPECT_TRUE(index->insert(K(7), V(1)).ok());
  uint64_t early = 0;
  {
    ReaderAtFences readers(*index, 7, 2);
    index->pool()->persist_context().set_hook(&readers);
    EXPECT_TRUE(index->update(K(7), V(2)).ok());
    index->pool()->persist_context().set_hook(nullptr);
    early += readers.finish();
  }
  {
    ReaderAtFences readers(*index, 8, 3);
    index->pool()->persist_context().set_hook(&readers);
    EXPECT_TRUE(index->insert(K(8), V(3)).ok());
    index->pool()->persist_context().set_hook(nullptr);
    early += readers.finish();
  }
  return early;
}

TEST(CcehVisibilityTest, ReadersSeeOnlyPersistedValues) {
  EXPECT_EQ(EarlyReads(), 0u);
  if (!pm::kMutantsCompiled) return;
  ASSERT_TRUE(pm::set_mutant("cceh.unlock_before_persist"));
  EXPECT_GT(EarlyReads(), 0u);
  pm::set_mutant("");
}

}  // namespace
}  // namespace pmindex::testing
