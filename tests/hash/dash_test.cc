// Dash's own tests: lockstep against a model (both geometries, every kind of 8-byte key),
// the stash and its overflow counter, recovery with nothing leaked, and crash images at
// every fence of splits with directory doubling, of a displacement and of stash inserts
// and removes (each recovered, verified, checked against the completed operations, leak-free,
// and writable again: a lock the crash left held is free). Concurrency:
// dash_concurrent_test.cc.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <future>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "common/model_checker.h"
#include "common/test_util.h"
#include "crashtest/campaign.h"
#include "hash/dash/layout.h"
#include "pm/alloc.h"
#include "pm/mutant.h"
#include "pm/persist.h"
#include "pmindex/index.h"

namespace pmindex::testing {
namespace {

using hash::dash::KeyHash;
using hash::dash::kLargeGeometry;
using hash::dash::kSmallGeometry;

Options SmallPool() {  // small geometry: 4 + 2 buckets of 4 slots per segment
  Options o;
  o.pool_size = 8ull << 20;
  o.index_params = hash::dash::kSmallParams;
  return o;
}
Options LargePool() {  // the shipped geometry: 60 + 3 buckets of 14 slots
  Options o;
  o.pool_size = 64ull << 20;
  return o;
}

std::string K(uint64_t k) { return std::string(IntKey(k).view()); }
std::string V(uint64_t v) { return std::string(IntValue(v)); }

uint64_t Node(Index& index, const std::string& name) {
  for (const auto& [n, c] : index.stats().nodes)
    if (n == name) return c;
  return 0;
}

// The first n keys >= from whose home bucket (in a segment of `normal` buckets) is `home`.
std::vector<uint64_t> KeysWithHome(uint32_t home, size_t n, uint32_t normal, uint64_t from) {
  std::vector<uint64_t> out;
  for (uint64_t k = from; out.size() < n; ++k)
    if (KeyHash(k).Home(normal) == home) out.push_back(k);
  return out;
}

void Lockstep(const Options& options, uint64_t key_space, uint64_t ops, uint64_t seed) {
  TempDir dir;
  ModelChecker c(seed);
  ASSERT_NO_FATAL_FAILURE(c.create("dash", dir.file("pool"), options));
  std::mt19937_64 rng(seed);
  const OpMix mix{.insert = 5, .update = 1, .upsert = 2, .remove = 2, .lookup = 2};
  for (uint64_t i = 0; i < ops; ++i) {
    const uint64_t k = rng() % key_space;
    // Spread keys and dense ones, 0 and the largest among them.
    const uint64_t key = (k & 1) ? k * 0x9E3779B97F4A7C15ull : k;
    ASSERT_NO_FATAL_FAILURE(c.random_op(rng, K(key), V(rng()), mix));
    if (i % 1024 == 0) {
      ASSERT_NO_FATAL_FAILURE(c.verify());
    }
    if (i == ops / 2) {
      ASSERT_NO_FATAL_FAILURE(c.check_all());
      ASSERT_NO_FATAL_FAILURE(c.reopen());
      EXPECT_EQ(c.index().pool()->allocator().allocated_bytes(), c.index().stats().pm_bytes);
    }
  }
  ASSERT_NO_FATAL_FAILURE(c.check_all());
  EXPECT_GT(Node(c.index(), "segments"), 1u);
  EXPECT_GT(Node(c.index(), "directory_entries"), 1u);
  ASSERT_NO_FATAL_FAILURE(c.remove_all(rng));
  ASSERT_NO_FATAL_FAILURE(c.check_all());
}

TEST(DashModelTest, LockstepSmallGeometry) {
  const uint64_t seed = TestSeed(11);
  Lockstep(SmallPool(), Scale(2000), Scale(20000), seed);
}

TEST(DashModelTest, LockstepLargeGeometry) {
  const uint64_t seed = TestSeed(12);
  Lockstep(LargePool(), Scale(8000), Scale(30000), seed);
}

// Layout 2 (index parameter layout=2: a pad before the buckets staggers segments across
// cache sets): lockstep with a reopen in both geometries; its geometry word carries the
// stagger, the default's (layout 1, the pools made before layout 2) nothing above bit 47. The
// segments of a grown table (small geometry: 2 KiB blocks) take all four pads, so every
// bucket placement runs. An unknown layout is refused.
TEST(DashModelTest, LayoutTwoStaggersSegments) {
  const uint64_t seed = TestSeed(15);
  Options small = SmallPool();
  small.index_params = std::string(hash::dash::kSmallParams) + " layout=2";
  Lockstep(small, Scale(1000), Scale(8000), seed);
  Options large = LargePool();
  large.index_params = "dash layout=2";
  Lockstep(large, 4000, 12000, seed + 1);  // unscaled: the large segments must split
  static_assert(hash::dash::kSmallGeometry.Encode() >> 48 == 0);
  static_assert(hash::dash::kSmallGeometryV2.Encode() >> 48 == 4);

  TempDir dir;
  ModelChecker c(TestSeed(16));
  ASSERT_NO_FATAL_FAILURE(c.create("dash", dir.file("pool"), small));
  for (uint64_t k = 0; k < 400; ++k) ASSERT_NO_FATAL_FAILURE(c.insert(K(k), V(k)));
  struct Pads : BlockVisitor {
    uint32_t seen = 0;
    Status visit(uint64_t off) override {
      seen |= 1u << ((off >> 11) & 3);  // the pad's k (the directory's block counts too)
      return Status::OK();
    }
  } pads;
  ASSERT_TRUE(c.index().visit_blocks(pads).ok());
  EXPECT_GT(Node(c.index(), "segments"), 16u);
  EXPECT_EQ(pads.seen, 0xFu);
  ASSERT_NO_FATAL_FAILURE(c.reopen());
  ASSERT_NO_FATAL_FAILURE(c.check_all());

  Options bad = SmallPool();
  bad.index_params = "dash layout=3";
  EXPECT_TRUE(CreateIndex("dash", dir.file("pool2"), bad).status().IsInvalidArgument());
}

// Every 8-byte key is a key: 0, the largest, single bits, and keys that differ only in
// their top or bottom byte; values too (0 and all ones).
TEST(DashModelTest, EveryKindOfKeyIncludingZero) {
  TempDir dir;
  ModelChecker c(TestSeed(13));
  ASSERT_NO_FATAL_FAILURE(c.create("dash", dir.file("pool"), SmallPool()));
  std::vector<uint64_t> keys = {0, 1, ~0ull, ~0ull - 1, 1ull << 63, 0xFF, 0xFF00000000000000ull};
  for (int b = 0; b < 64; ++b) keys.push_back(1ull << b);
  for (uint64_t x = 0; x < 256; ++x) keys.push_back(x << 56 | 0x42);
  for (uint64_t k : keys) ASSERT_NO_FATAL_FAILURE(c.upsert(K(k), V(k == 0 ? ~0ull : 0)));
  ASSERT_NO_FATAL_FAILURE(c.check_all());
  for (uint64_t k : keys) ASSERT_NO_FATAL_FAILURE(c.update(K(k), V(k)));
  ASSERT_NO_FATAL_FAILURE(c.reopen());
  ASSERT_NO_FATAL_FAILURE(c.check_all());
  for (uint64_t k : keys) ASSERT_NO_FATAL_FAILURE(c.remove(K(k)));
  for (uint64_t k : keys) ASSERT_NO_FATAL_FAILURE(c.lookup(K(k)));
  ASSERT_NO_FATAL_FAILURE(c.check_all());
  EXPECT_TRUE(c.index().insert(K(1), "short").IsInvalidArgument());
  EXPECT_TRUE(c.index().insert("short", V(1)).IsInvalidArgument());
}

// A large-geometry table whose keys are all homed at bucket 0: buckets 0 and 1 full (2 x 14
// keys), then `stash` keys in the stash (overflow entries in buckets 0 and 1, then bucket 0's
// counter). Returns the keys in insertion order.
std::vector<uint64_t> FillHomeZero(ModelChecker& c, const TempDir& dir, size_t stash) {
  c.create("dash", dir.file("pool"), LargePool());
  const std::vector<uint64_t> keys = KeysWithHome(0, 2 * 14 + stash, kLargeGeometry.normal, 1);
  for (uint64_t k : keys) {
    if (::testing::Test::HasFatalFailure()) return {};  // the caller asserts none
    c.insert(K(k), V(k));
  }
  return keys;
}

// Keys homed at bucket 0 fill buckets 0 and 1 (balanced insert), then the stash: its
// overflow entries (4 in bucket 0, 4 in bucket 1), then bucket 0's overflow counter.
// Every stash key is found, removes empty the stash, and no key moved out of place.
TEST(DashModelTest, StashEntriesAndCounterFindEveryKey) {
  TempDir dir;
  ModelChecker c(TestSeed(14));
  const std::vector<uint64_t> keys = FillHomeZero(c, dir, 12);
  ASSERT_FALSE(::testing::Test::HasFatalFailure());
  EXPECT_EQ(Node(c.index(), "stash_keys"), 12u);
  EXPECT_EQ(Node(c.index(), "segments"), 1u);
  ASSERT_NO_FATAL_FAILURE(c.check_all());
  for (uint64_t k : KeysWithHome(0, 200, kLargeGeometry.normal, 1u << 20))
    ASSERT_NO_FATAL_FAILURE(c.lookup(K(k)));  // absent keys of the same home
  for (size_t i = keys.size(); i-- > 28;) ASSERT_NO_FATAL_FAILURE(c.remove(K(keys[i])));
  EXPECT_EQ(Node(c.index(), "stash_keys"), 0u);
  ASSERT_NO_FATAL_FAILURE(c.check_all());
}

// A pool written before kOvfHomedMask existed has stash keys whose class bits are clear, and a
// zero flags word in its root: recovery sets the bits once, so every stash key is found. (Six
// stash keys: overflow entries in buckets 0 and 1, no counter, whose flag would send every
// lookup to the stash.)
TEST(DashRecoveryTest, PoolWithoutHomeFlagsIsMigrated) {
  TempDir dir;
  ModelChecker c(TestSeed(16));
  FillHomeZero(c, dir, 6);
  ASSERT_FALSE(::testing::Test::HasFatalFailure());
  auto* root = reinterpret_cast<hash::dash::DashRoot*>(c.index().pool()->root_area());
  ASSERT_EQ(root->flags, hash::dash::kHomedFlags);
  root->flags = 0;
  char* base = c.index().pool()->base();
  const uint64_t seg = reinterpret_cast<hash::dash::Directory*>(base + root->directory)->seg[0];
  uint32_t cleared = 0;
  for (uint32_t b = 0; b < kLargeGeometry.normal; ++b) {
    auto* bk = reinterpret_cast<hash::dash::Bucket*>(base + seg + hash::dash::kBucketBytes *
                                                                      (1 + b));
    cleared += (bk->ovf_member & hash::dash::kOvfHomedMask) != 0;
    bk->ovf_member &= static_cast<uint8_t>(~hash::dash::kOvfHomedMask);
  }
  EXPECT_EQ(cleared, 1u);  // bucket 0, the only home with stash keys
  EXPECT_FALSE(c.index().verify().ok()) << "verify must see stash keys hidden from lookups";
  ASSERT_NO_FATAL_FAILURE(c.reopen());
  EXPECT_EQ(reinterpret_cast<hash::dash::DashRoot*>(c.index().pool()->root_area())->flags,
            hash::dash::kHomedFlags);
  ASSERT_NO_FATAL_FAILURE(c.check_all());
}

TEST(DashRecoveryTest, ReopenKeepsEveryKeyAndLeaksNothing) {
  TempDir dir;
  ModelChecker c(TestSeed(15));
  ASSERT_NO_FATAL_FAILURE(c.create("dash", dir.file("pool"), LargePool()));
  for (uint64_t k = 0; k < Scale(40000); ++k) ASSERT_NO_FATAL_FAILURE(c.insert(K(k * 7), V(k)));
  for (uint64_t k = 0; k < Scale(40000); k += 3) ASSERT_NO_FATAL_FAILURE(c.remove(K(k * 7)));
  ASSERT_NO_FATAL_FAILURE(c.reopen());
  Index& index = c.index();
  EXPECT_EQ(index.pool()->allocator().allocated_bytes(), index.stats().pm_bytes) << "leaked";
  ASSERT_NO_FATAL_FAILURE(c.check_all());
}

// The persistence cost the paper's commit implies: an insert into a bucket 2 fences (pair,
// then alloc bit), an update and a remove 1.
TEST(DashModelTest, FencesPerOperation) {
  TempDir dir;
  auto idx = CreateIndex("dash", dir.file("pool"), LargePool());
  ASSERT_TRUE(idx.ok());
  Index& index = *idx.value();
  ASSERT_TRUE(index.insert(K(1), V(1)).ok());  // makes the first segment and the directory
  pm::PersistContext& pc = index.pool()->persist_context();
  auto fences = [&](const std::function<Status()>& op) {
    const uint64_t before = pc.thread_counters().fences;
    EXPECT_TRUE(op().ok());
    return pc.thread_counters().fences - before;
  };
  for (uint64_t k = 2; k < 200; ++k) {
    EXPECT_EQ(fences([&] { return index.insert(K(k), V(k)); }), 2u) << k;
    EXPECT_EQ(fences([&] { return index.update(K(k), V(k + 1)); }), 1u) << k;
  }
  for (uint64_t k = 2; k < 200; ++k) EXPECT_EQ(fences([&] { return index.remove(K(k)); }), 1u);
}

// ---- crash images ------------------------------------------------------------------------

struct Step {
  enum Kind { kInsert, kRemove } kind;
  uint64_t key;
  uint64_t value;
};
using Expect = std::map<uint64_t, uint64_t>;

// Applies the completed steps to a model.
Expect ModelAfter(const Expect& start, const std::vector<Step>& steps, size_t done) {
  Expect m = start;
  for (size_t i = 0; i < done; ++i) {
    if (steps[i].kind == Step::kInsert) {
      m[steps[i].key] = steps[i].value;
    } else {
      m.erase(steps[i].key);
    }
  }
  return m;
}

// The pool, as memory holds it at a fence (the process-crash view: a lock held there stays
// set), recovered and checked against the completed steps; the interrupted step's key may
// be either way. Then the image takes writes to that key (within 20 s: a lock the crash
// left held must be free) and is verified again.
void CheckImage(const std::vector<char>& bytes, const std::string& path, const Options& options,
                const Expect& model, const Step& interrupted) {
  std::ofstream(path, std::ios::binary | std::ios::trunc)
      .write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  auto idx = OpenIndex(path, options, "dash");
  ASSERT_TRUE(idx.ok()) << idx.status().ToString();
  Index& index = *idx.value();
  ASSERT_TRUE(index.verify().ok()) << index.verify().ToString();
  EXPECT_EQ(index.pool()->allocator().allocated_bytes(), index.stats().pm_bytes) << "leaked";
  std::string v;
  for (const auto& [k, val] : model) {
    if (k == interrupted.key) continue;
    ASSERT_TRUE(index.lookup(K(k), &v).ok()) << "key " << k << " lost";
    EXPECT_EQ(v, V(val)) << "key " << k;
  }
  const bool had = index.lookup(K(interrupted.key), &v).ok();
  const size_t expected = model.size() - model.count(interrupted.key) + (had ? 1 : 0);
  EXPECT_EQ(index.stats().keys, expected) << "a key appeared or was doubled";
  auto writes = std::async(std::launch::async, [&] {
    return index.upsert(K(interrupted.key), V(7)).ok() && index.insert(K(~0ull - 5), V(8)).ok() &&
           index.remove(K(interrupted.key)).ok();
  });
  if (writes.wait_for(std::chrono::seconds(20)) != std::future_status::ready) {
    ADD_FAILURE() << "writes hang after recovery: a lock held at the crash is still held";
    std::abort();
  }
  EXPECT_TRUE(writes.get());
  ASSERT_TRUE(index.verify().ok()) << index.verify().ToString();
}

// Calls back at every `every`-th fence of the pool it watches.
class AtFences : public PersistHook {
 public:
  AtFences(uint64_t every, std::function<void()> fn) : every_(every), fn_(std::move(fn)) {}
  void on_flush(uintptr_t, size_t) override {}
  void on_fence() override {
    if (++fences_ % every_ == 0) fn_();
  }
  uint64_t fences() const { return fences_; }

 private:
  uint64_t every_;
  std::function<void()> fn_;
  uint64_t fences_ = 0;
};

// Runs `setup` untracked, then `steps` with a crash image checked at every `every`-th
// fence; returns the number of fences the steps took.
uint64_t CrashEveryFence(const Options& options, const std::vector<Step>& setup,
                         const std::vector<Step>& steps, uint64_t every) {
  TempDir dir;
  auto idx = CreateIndex("dash", dir.file("pool"), options);
  EXPECT_TRUE(idx.ok()) << idx.status().ToString();
  if (!idx.ok()) return 0;
  Index& index = *idx.value();
  auto apply = [&](const Step& s) {
    return s.kind == Step::kInsert ? index.insert(K(s.key), V(s.value)) : index.remove(K(s.key));
  };
  for (const Step& s : setup) EXPECT_TRUE(apply(s).ok());
  const Expect start = ModelAfter({}, setup, setup.size());
  size_t done = 0;
  const Pool& pool = *index.pool();
  AtFences hook(every, [&] {
    const std::vector<char> bytes(pool.base(), pool.base() + pool.size());
    SCOPED_TRACE("crash in step " + std::to_string(done));
    CheckImage(bytes, dir.file("crashed"), options, ModelAfter(start, steps, done), steps[done]);
  });
  index.pool()->persist_context().set_hook(&hook);
  for (; done < steps.size(); ++done) EXPECT_TRUE(apply(steps[done]).ok()) << done;
  index.pool()->persist_context().set_hook(nullptr);
  EXPECT_TRUE(index.verify().ok());
  return hook.fences();
}

// Inserts that split segments (a split is 5 fences, a doubling 2 more) and double the
// directory from 1 to 8 entries and more, then removes; a crash at every fence.
TEST(DashCrashTest, SplitsAndDoublingsAtEveryFence) {
  std::vector<Step> steps;
  std::mt19937_64 rng(TestSeed(16));
  std::vector<uint64_t> keys;
  for (int i = 0; i < 90; ++i) keys.push_back(rng() % 4 == 0 ? uint64_t(i) : rng());
  for (uint64_t k : keys) steps.push_back({Step::kInsert, k, rng()});
  for (int i = 0; i < 90; i += 3) steps.push_back({Step::kRemove, keys[i], 0});
  const uint64_t fences = CrashEveryFence(SmallPool(), {}, steps, Sanitized() ? 4 : 1);
  EXPECT_GT(fences, 2 * 90u + 30u + 5 * 4u) << "fewer fences than 90 inserts and 4 splits";
}

// Bucket 1 holds two keys homed there and bucket 0's keys fill buckets 0 and 1: the next
// key of home 0 displaces a key of bucket 1 to bucket 2 (record, commit, clear: 4 fences)
// and takes its slot (2). A crash at each fence leaves the moved key exactly once.
TEST(DashCrashTest, DisplacementAtEveryFence) {
  std::vector<Step> setup;
  for (uint64_t k : KeysWithHome(1, 4, kSmallGeometry.normal, 1))
    setup.push_back({Step::kInsert, k, k});
  const std::vector<uint64_t> zero = KeysWithHome(0, 7, kSmallGeometry.normal, 1);
  for (size_t i = 0; i < 6; ++i) setup.push_back({Step::kInsert, zero[i], zero[i]});
  const uint64_t fences =
      CrashEveryFence(SmallPool(), setup, {{Step::kInsert, zero[6], 99}}, 1);
  EXPECT_EQ(fences, 6u) << "the insert did not displace";
}

// Buckets 0 and 1 full of keys of home 0 (nothing to displace): the next two go to the
// stash (2 fences each: pair and overflow entry, then the alloc bit), then are removed
// (alloc bit, then the overflow entry: 2 fences each).
TEST(DashCrashTest, StashInsertAndRemoveAtEveryFence) {
  std::vector<Step> setup;
  const std::vector<uint64_t> zero = KeysWithHome(0, 10, kSmallGeometry.normal, 1);
  for (size_t i = 0; i < 8; ++i) setup.push_back({Step::kInsert, zero[i], zero[i]});
  const std::vector<Step> steps = {{Step::kInsert, zero[8], 1},
                                   {Step::kInsert, zero[9], 2},
                                   {Step::kRemove, zero[8], 0},
                                   {Step::kRemove, zero[9], 0}};
  EXPECT_EQ(CrashEveryFence(SmallPool(), setup, steps, 1), 8u) << "not the stash path";
}


// ---- keys=bytes: the variable-length-key mode ----------------------------------------------

Options BytesPool(bool small) {
  Options o = small ? SmallPool() : LargePool();
  o.index_params = (small ? std::string(hash::dash::kSmallParams) : std::string("dash")) +
                   " keys=bytes";
  return o;
}

// Byte keys of lengths 1..kMaxKeyBytes that share prefixes: r picks a prefix, a number and,
// for some, a long tail up to the maximum length.
std::string ByteKey(uint64_t r) {
  static const char* kPrefixes[] = {"", "u", "user", "user00", "user0012", "k:", "key:abc/"};
  if (r % 97 == 0) return std::string(1, static_cast<char>('a' + r % 26));  // length 1
  if (r % 89 == 0) return std::string(hash::dash::kMaxKeyBytes - 1, 'm') + char('0' + r % 10);
  std::string k = kPrefixes[r % 7] + std::to_string(r / 7);
  if (r % 5 == 0) k += std::string(8 + r % 300, 'z');  // shared long prefix, then the tail
  return k.substr(0, hash::dash::kMaxKeyBytes);
}

void BytesLockstep(bool small, uint64_t key_space, uint64_t ops, uint64_t seed) {
  TempDir dir;
  ModelChecker c(seed);
  ASSERT_NO_FATAL_FAILURE(c.create("dash", dir.file("pool"), BytesPool(small)));
  ASSERT_TRUE(c.index().traits().byte_keys);
  ASSERT_EQ(c.index().traits().max_key_size, hash::dash::kMaxKeyBytes);
  std::mt19937_64 rng(seed);
  const OpMix mix{.insert = 5, .update = 1, .upsert = 2, .remove = 2, .lookup = 2};
  for (uint64_t i = 0; i < ops; ++i) {
    ASSERT_NO_FATAL_FAILURE(c.random_op(rng, ByteKey(rng() % key_space), V(rng()), mix));
    if (i % 1024 == 0) {
      ASSERT_NO_FATAL_FAILURE(c.verify());
    }
    if (i == ops / 2) {
      ASSERT_NO_FATAL_FAILURE(c.check_all());
      ASSERT_NO_FATAL_FAILURE(c.reopen());  // the pool keeps its mode: no parameters given
      ASSERT_TRUE(c.index().traits().byte_keys);
      // Nothing leaked: every allocated byte is a segment, the directory or a live record.
      EXPECT_EQ(c.index().pool()->allocator().allocated_bytes(), c.index().stats().pm_bytes);
    }
  }
  ASSERT_NO_FATAL_FAILURE(c.check_all());
  EXPECT_GT(Node(c.index(), "segments"), 1u);
  ASSERT_NO_FATAL_FAILURE(c.remove_all(rng));
  ASSERT_NO_FATAL_FAILURE(c.check_all());
  ASSERT_NO_FATAL_FAILURE(c.reopen());
  EXPECT_EQ(c.index().pool()->allocator().allocated_bytes(), c.index().stats().pm_bytes);
}

TEST(DashBytesTest, LockstepVariedLengthsSmallGeometry) {
  const uint64_t seed = TestSeed(31);
  SCOPED_TRACE(SeedTrace(seed));
  BytesLockstep(true, Scale(2000), Scale(16000), seed);
}

TEST(DashBytesTest, LockstepVariedLengthsLargeGeometry) {
  const uint64_t seed = TestSeed(32);
  SCOPED_TRACE(SeedTrace(seed));
  BytesLockstep(false, Scale(6000), Scale(20000), seed);
}

// Length 1 and the maximum are taken, 0 and max + 1 are not; values stay 8 bytes; keys that
// are prefixes of one another are distinct keys.
TEST(DashBytesTest, KeyLengthsAndPrefixes) {
  TempDir dir;
  auto idx = CreateIndex("dash", dir.file("pool"), BytesPool(true));
  ASSERT_TRUE(idx.ok()) << idx.status().ToString();
  Index& index = *idx.value();
  const std::string max(hash::dash::kMaxKeyBytes, 'x');
  EXPECT_TRUE(index.insert("a", V(1)).ok());
  EXPECT_TRUE(index.insert(max, V(2)).ok());
  EXPECT_TRUE(index.insert(max.substr(1), V(3)).ok());
  EXPECT_TRUE(index.insert("ab", V(4)).ok());
  EXPECT_TRUE(index.insert(std::string("a\0", 2), V(5)).ok());
  EXPECT_TRUE(index.insert("a", V(9)).IsAlreadyExists());
  EXPECT_TRUE(index.insert("", V(1)).IsInvalidArgument());
  EXPECT_TRUE(index.insert(max + "x", V(1)).IsInvalidArgument());
  EXPECT_TRUE(index.insert("b", "short").IsInvalidArgument());
  std::string v;
  ASSERT_TRUE(index.lookup("a", &v).ok());
  EXPECT_EQ(v, V(1));
  ASSERT_TRUE(index.lookup(max, &v).ok());
  EXPECT_EQ(v, V(2));
  ASSERT_TRUE(index.lookup(std::string("a\0", 2), &v).ok());
  EXPECT_EQ(v, V(5));
  EXPECT_TRUE(index.lookup("abc", &v).IsNotFound());
  EXPECT_TRUE(index.remove("ab").ok());
  EXPECT_TRUE(index.lookup("ab", &v).IsNotFound());
  EXPECT_TRUE(index.verify().ok());
  size_t n = 0;
  ASSERT_TRUE(index.for_each([&](std::string_view k, std::string_view) {
    n += k == "a" || k == max;
    return true;
  }).ok());
  EXPECT_EQ(n, 2u);
  // An integer-mode pool still takes only 8-byte keys.
  auto ints = CreateIndex("dash", dir.file("ints"), SmallPool());
  ASSERT_TRUE(ints.ok());
  EXPECT_FALSE(ints.value()->traits().byte_keys);
  EXPECT_TRUE(ints.value()->insert("a", V(1)).IsInvalidArgument());
  Options bad = SmallPool();
  bad.index_params = "dash keys=strings";
  EXPECT_FALSE(CreateIndex("dash", dir.file("bad"), bad).ok());
}

crashtest::CampaignOptions BytesCampaign() {
  crashtest::CampaignOptions o;
  o.timeout_seconds = CampaignTimeout();
  o.index = "dash";
  o.index_params = std::string(hash::dash::kSmallParams) + " keys=bytes";
  o.seed = TestSeed(33);
  o.ops = Scale(200);
  o.points = Scale(150);  // sampled fences
  o.pool_size = 8ull << 20;
  o.images = 2;
  o.torn = true;
  o.max_failures = 1;
  return o;
}

// The ADR campaign (torn images) in keys=bytes: its workload takes the byte keys the
// variant's traits declare. The record persisted after the slot's commit
// (dash.key_record_after_commit) must fail it.
TEST(DashBytesCrashTest, CampaignInBytesMode) {
  SCOPED_TRACE(SeedTrace(TestSeed(33)));
  crashtest::CampaignResult r = crashtest::RunAdrCampaign(BytesCampaign());
  ASSERT_TRUE(r.error.ok()) << r.error.ToString();
  EXPECT_TRUE(r.failures.empty()) << crashtest::FormatResult(r);
  PMINDEX_REQUIRE_MUTANTS();
  ASSERT_TRUE(pm::set_mutant("dash.key_record_after_commit"));
  crashtest::CampaignOptions o = BytesCampaign();
  o.mutant = pm::selected_mutant();
  pm::set_mutant("");
  crashtest::CampaignResult m = crashtest::RunAdrCampaign(o);
  ASSERT_TRUE(m.error.ok()) << m.error.ToString();
  EXPECT_FALSE(m.failures.empty()) << "dash.key_record_after_commit was not caught";
}

}  // namespace
}  // namespace pmindex::testing
