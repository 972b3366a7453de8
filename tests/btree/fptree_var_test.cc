// fptree-var (FPTree with out-of-line byte-string keys, src/btree/hybrid/fptree_var.h):
// lockstep against a model with keys of 1..200 bytes (keys that are prefixes of others, keys
// that share a fingerprint), the key limits and 0..8-byte values, recovery with nothing
// leaked and orphan key blocks reclaimed, and readers beside writers (label tsan).
#include <gtest/gtest.h>

#include <atomic>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "btree/btree_concurrent_checks.h"
#include "btree/btree_test_util.h"
#include "btree/hybrid/fptree_var.h"
#include "common/model_checker.h"
#include "common/test_util.h"
#include "pm/alloc.h"

namespace pmindex::testing {
namespace {

using btree::FPTreeVar;
constexpr char kName[] = "fptree-var";

// Keys of 1..200 bytes over a 3-letter alphabet: prefixes of one another are common.
std::string PrefixKey(std::mt19937_64& rng, const std::vector<std::string>& stems) {
  const std::string& stem = stems[rng() % stems.size()];
  return stem.substr(0, 1 + rng() % stem.size());
}

std::vector<std::string> Stems(std::mt19937_64& rng, size_t n) {
  std::vector<std::string> out;
  for (size_t i = 0; i < n; ++i) {
    std::string s(200, 'a');
    for (char& c : s) c = static_cast<char>('a' + rng() % 3);
    out.push_back(std::move(s));
  }
  return out;
}

// `n` distinct keys that all have the fingerprint of "fp-target" (more than a leaf holds).
std::vector<std::string> SameFingerprint(size_t n) {
  const uint8_t target = FPTreeVar::Fingerprint("fp-target");
  std::vector<std::string> out;
  for (uint64_t i = 0; out.size() < n; ++i) {
    std::string k = "fp/" + std::to_string(i);
    if (FPTreeVar::Fingerprint(k) == target) out.push_back(std::move(k));
  }
  return out;
}

std::string Val(std::mt19937_64& rng) {
  std::string v = std::string(IntValue(rng()));
  v.resize(rng() % 9);  // 0..8 bytes
  return v;
}

TEST(FPTreeVarTest, LockstepWithPrefixAndFingerprintSharingKeys) {
  ModelChecker checker(TestSeed(1616));
  TempDir dir;
  ASSERT_NO_FATAL_FAILURE(checker.create(kName, dir.file("pool"), BTreeOptions(64ull << 20)));
  std::mt19937_64 rng(checker.seed());
  const std::vector<std::string> stems = Stems(rng, 40);
  const std::vector<std::string> twins = SameFingerprint(100);
  const OpMix mix{.insert = 4, .update = 1, .upsert = 2, .remove = 3, .lookup = 2, .scan = 1,
                  .scan_limit = 30};
  const uint64_t ops = Scale(40000);
  for (uint64_t i = 0; i < ops; ++i) {
    const std::string key = (i % 3 == 0) ? twins[rng() % twins.size()] : PrefixKey(rng, stems);
    ASSERT_NO_FATAL_FAILURE(checker.random_op(rng, key, Val(rng), mix));
    if ((i + 1) % (ops / 8) != 0) continue;
    ASSERT_NO_FATAL_FAILURE(checker.check_all({"", "a", "ab", "b", "fp/", "fp/5", "c"}, &rng));
    if ((i + 1) % (ops / 4) == 0) {
      ASSERT_NO_FATAL_FAILURE(checker.reopen());
    }
  }
  ASSERT_NO_FATAL_FAILURE(checker.remove_all(rng));
  ASSERT_NO_FATAL_FAILURE(checker.check_all());
}

// 8-byte keys in a small, skewed key space: many splits, merges and unlinks.
TEST(FPTreeVarTest, LockstepWithIntegerKeys) {
  ModelChecker checker(TestSeed(1617));
  TempDir dir;
  ASSERT_NO_FATAL_FAILURE(checker.create(kName, dir.file("pool"), BTreeOptions(64ull << 20)));
  std::mt19937_64 rng(checker.seed());
  const OpMix mix{.insert = 2, .update = 1, .upsert = 0, .remove = 2, .lookup = 2, .scan = 1,
                  .scan_limit = 200};
  const uint64_t ops = Scale(60000);
  for (uint64_t i = 0; i < ops; ++i) {
    const uint64_t k = rng() % 2 ? rng() % 250 : rng() % 4000;
    ASSERT_NO_FATAL_FAILURE(checker.random_op(rng, K(k), V(rng()), mix));
    if ((i + 1) % (ops / 10) == 0) {
      ASSERT_NO_FATAL_FAILURE(checker.check_all());
    }
  }
}

TEST(FPTreeVarTest, KeyLimitsAndShortValues) {
  TempDir dir;
  auto made = CreateIndex(kName, dir.file("pool"), BTreeOptions(16ull << 20));
  ASSERT_TRUE(made.ok()) << made.status().ToString();
  Index& index = *made.value();
  const std::string longest(FPTreeVar::kMaxKeySize, 'k');
  EXPECT_TRUE(index.insert(longest, "v").ok());
  EXPECT_TRUE(index.insert(longest + "k", "v").IsInvalidArgument());
  EXPECT_TRUE(index.insert("", "v").IsInvalidArgument());
  EXPECT_TRUE(index.insert("nine", "123456789").IsInvalidArgument());
  for (size_t n = 0; n <= 8; ++n) {
    const std::string key = "v" + std::to_string(n);
    ASSERT_TRUE(index.insert(key, std::string(n, static_cast<char>('0' + n))).ok());
  }
  std::string got;
  for (size_t n = 0; n <= 8; ++n) {
    ASSERT_TRUE(index.lookup("v" + std::to_string(n), &got).ok());
    EXPECT_EQ(got, std::string(n, static_cast<char>('0' + n)));
  }
  ASSERT_TRUE(index.lookup(longest, &got).ok());
  EXPECT_EQ(got, "v");
  EXPECT_TRUE(index.verify().ok());
}

// Every allocated byte is a leaf or a live entry's key block: stats().pm_bytes counts exactly
// those, so allocated == pm_bytes means no key block was leaked by updates, removes, splits
// or merges; a reopen's rebuild (which keeps only what visit_blocks reports) agrees.
void ExpectNothingLeaked(Index& index) {
  const uint64_t allocated = index.pool()->allocator().allocated_bytes();
  EXPECT_EQ(allocated, index.stats().pm_bytes) << "bytes allocated beyond leaves and live keys";
}

void Churn(Index& index, uint64_t seed, uint64_t ops, std::map<std::string, std::string>* model) {
  std::mt19937_64 rng(seed);
  const std::vector<std::string> stems = Stems(rng, 30);
  for (uint64_t i = 0; i < ops; ++i) {
    const std::string key = PrefixKey(rng, stems);
    const std::string value = Val(rng);
    if (rng() % 3 == 0) {
      if (index.remove(key).ok()) model->erase(key);
    } else {
      ASSERT_TRUE(index.upsert(key, value).ok());
      (*model)[key] = value;
    }
  }
}

void ExpectContents(Index& index, const std::map<std::string, std::string>& model) {
  ASSERT_TRUE(index.verify().ok()) << index.verify().ToString();
  std::map<std::string, std::string> seen;
  index.scan("\x01", SIZE_MAX, [&](std::string_view k, std::string_view v) {
    seen.emplace(std::string(k), std::string(v));
    return true;
  });
  EXPECT_EQ(seen, model);
}

TEST(FPTreeVarTest, RecoveryKeepsLiveKeysAndLeaksNothing) {
  TempDir dir;
  const std::string path = dir.file("pool");
  std::map<std::string, std::string> model;
  {
    auto idx = CreateIndex(kName, path, BTreeOptions(64ull << 20));
    ASSERT_TRUE(idx.ok()) << idx.status().ToString();
    ASSERT_NO_FATAL_FAILURE(Churn(*idx.value(), 7, Scale(30000), &model));
    ExpectNothingLeaked(*idx.value());
    // A "crash" with an orphan key block (allocated, written, never published): the copy
    // is what a power failure right before an insert's commit would leave.
    Result<uint64_t> orphan = idx.value()->pool()->allocator().allocate(100);
    ASSERT_TRUE(orphan.ok());
    std::filesystem::copy_file(path, dir.file("crash"));
    ASSERT_TRUE(idx.value()->close().ok());
  }
  for (const char* name : {"pool", "crash"}) {
    SCOPED_TRACE(name);
    auto idx = OpenIndex(dir.file(name), BTreeOptions(64ull << 20), kName);
    ASSERT_TRUE(idx.ok()) << idx.status().ToString();
    ASSERT_NO_FATAL_FAILURE(ExpectContents(*idx.value(), model));
    ExpectNothingLeaked(*idx.value());  // the orphan was reclaimed by the rebuild
    std::map<std::string, std::string> more = model;
    ASSERT_NO_FATAL_FAILURE(Churn(*idx.value(), 8, Scale(5000), &more));
    ASSERT_NO_FATAL_FAILURE(ExpectContents(*idx.value(), more));
    ExpectNothingLeaked(*idx.value());
  }
}

TEST(FPTreeVarTest, RefusesOtherLayout) {
  TempDir dir;
  {
    auto idx = CreateIndex(kName, dir.file("pool"), BTreeOptions(8ull << 20));
    ASSERT_TRUE(idx.ok());
  }
  EXPECT_FALSE(OpenIndex(dir.file("pool"), BTreeOptions(8ull << 20), "fptree").ok());
}

// A key reference outside the pool is Corruption at open, and the refused open writes nothing.
TEST(FPTreeVarTest, BadKeyReferenceIsRefused) {
  TempDir dir;
  const std::string path = dir.file("pool");
  {
    auto idx = CreateIndex(kName, path, BTreeOptions(8ull << 20));
    ASSERT_TRUE(idx.ok());
    for (int i = 0; i < 10; ++i) {
      ASSERT_TRUE(idx.value()->insert("key" + std::to_string(i), "v").ok());
    }
  }
  auto read_all = [&] {
    std::ifstream f(path, std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(f), {});
  };
  std::string bytes = read_all();
  uint64_t head = 0;
  std::memcpy(&head, bytes.data() + 1024 + 16, 8);  // BTreeRoot::head in the root area
  ASSERT_NE(head, 0u);
  const uint64_t bad = uint64_t{1} << 50;
  std::memcpy(bytes.data() + head + offsetof(btree::FPTreeVarLeaf, kv), &bad, 8);
  { std::ofstream(path, std::ios::binary | std::ios::trunc) << bytes; }
  auto idx = OpenIndex(path, BTreeOptions(8ull << 20), kName);
  ASSERT_FALSE(idx.ok());
  EXPECT_TRUE(idx.status().IsCorruption()) << idx.status().ToString();
  EXPECT_EQ(read_all(), bytes) << "the refused open wrote the file";
}

// 8-byte keys through the hybrid B+trees' concurrency checks (disjoint ranges against
// per-thread models; overlapping keys with value provenance and sorted scans).
TEST(FPTreeVarConcurrentTest, IntegerKeyChecks) {
  TempDir dir;
  for (const char* pool : {"disjoint", "overlapping"}) {  // one index each
    auto idx = CreateIndex(kName, dir.file(pool), BTreeOptions());
    ASSERT_TRUE(idx.ok()) << idx.status().ToString();
    if (pool[0] == 'd') {
      CheckDisjointRanges(*idx.value());
    } else {
      CheckOverlappingKeys(*idx.value());
    }
  }
}

// Byte-string keys: two writers on their own keys, two readers checking that every value
// they find belongs to its key and that scans are strictly ordered.
TEST(FPTreeVarConcurrentTest, ByteKeysReadersBesideWriters) {
  TempDir dir;
  auto made = CreateIndex(kName, dir.file("pool"), BTreeOptions());
  ASSERT_TRUE(made.ok()) << made.status().ToString();
  Index& index = *made.value();
  auto key_of = [](int t, uint64_t i) {
    return "thread" + std::to_string(t) + "/" + std::string(i % 40, 'x') + std::to_string(i);
  };
  auto value_of = [](const std::string& key) {
    return std::string(IntValue(FPTreeVar::Fingerprint(key) * 7919ull + key.size()));
  };
  const uint64_t per_thread = Scale(6000);
  std::atomic<int> writers{2};
  std::vector<std::thread> threads;
  for (int t = 0; t < 2; ++t) {
    threads.emplace_back([&, t] {
      for (uint64_t i = 0; i < per_thread; ++i) {
        const std::string k = key_of(t, i);
        EXPECT_TRUE(index.insert(k, value_of(k)).ok());
        if (i % 3 == 0) (void)index.remove(key_of(t, i / 2));  // present or not
      }
      writers.fetch_sub(1);
    });
  }
  for (int r = 0; r < 2; ++r) {
    threads.emplace_back([&, r] {
      std::mt19937_64 rng(r);
      while (writers.load() > 0) {
        const std::string k = key_of(static_cast<int>(rng() % 2), rng() % per_thread);
        std::string v;
        if (index.lookup(k, &v).ok()) {
          EXPECT_EQ(v, value_of(k)) << k;
        }
        std::string last;
        index.scan(k, 50, [&](std::string_view key, std::string_view value) {
          EXPECT_TRUE(last.empty() || std::string(key) > last);
          EXPECT_EQ(std::string(value), value_of(std::string(key)));
          last = std::string(key);
          return true;
        });
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_TRUE(index.verify().ok()) << index.verify().ToString();
  ExpectNothingLeaked(index);
}

}  // namespace
}  // namespace pmindex::testing
