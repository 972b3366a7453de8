// The checkers the suites rely on must fail a broken index. BrokenIndex forwards to a real
// rntree but (a) loses one key from lookups (the first key a lookup finds is "not found"
// from then on) or (b) returns one key twice in every scan (its first entry). Each is shown
// to fail the model checker (common/model_checker.h, the model tests'), the recovery check
// (ExpectSameContents, btree_recovery_test's) and the concurrency checks
// (btree_concurrent_checks.h, btree_concurrent_test's); the same checks pass the index
// unbroken. Failures are intercepted (gtest-spi.h) and counted, not reported.
#include <gtest/gtest-spi.h>
#include <gtest/gtest.h>

#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <random>
#include <string>
#include <vector>

#include "btree/btree_concurrent_checks.h"
#include "btree/btree_test_util.h"
#include "common/model_checker.h"
#include "common/test_util.h"

namespace pmindex::testing {
namespace {

enum class Defect { kNone, kLosesAKey, kRepeatsAKey };

class BrokenIndex : public Index {
 public:
  BrokenIndex(std::unique_ptr<Index> real, Defect defect)
      : real_(std::move(real)), defect_(defect) {}

  const IndexTraits& traits() const override { return real_->traits(); }
  Status insert(std::string_view k, std::string_view v) override { return real_->insert(k, v); }
  Status update(std::string_view k, std::string_view v) override { return real_->update(k, v); }
  Status upsert(std::string_view k, std::string_view v) override { return real_->upsert(k, v); }
  Status remove(std::string_view k) override { return real_->remove(k); }
  Status lookup(std::string_view key, std::string* value) override {
    const Status s = real_->lookup(key, value);
    if (defect_ != Defect::kLosesAKey || !s.ok()) return s;
    std::lock_guard<std::mutex> guard(mu_);
    if (!lost_set_) {
      lost_.assign(key);
      lost_set_ = true;
    }
    return key == lost_ ? Status::NotFound("lost by BrokenIndex") : s;
  }
  size_t scan(std::string_view start, size_t max_count, ScanCallback fn) override {
    if (defect_ != Defect::kRepeatsAKey) return real_->scan(start, max_count, fn);
    size_t n = 0;
    real_->scan(start, max_count, [&](std::string_view k, std::string_view v) {
      ++n;
      if (n == 1 && !fn(k, v)) return false;
      return fn(k, v);  // the first entry a second time
    });
    return n;
  }
  Status verify() override { return real_->verify(); }
  IndexStats stats() override { return real_->stats(); }
  Status recover() override { return real_->recover(); }
  Status visit_blocks(BlockVisitor& visitor) override { return real_->visit_blocks(visitor); }
  Pool* pool() override { return real_->pool(); }
  Status close() override { return real_->close(); }

 private:
  std::unique_ptr<Index> real_;
  const Defect defect_;
  std::mutex mu_;
  bool lost_set_ = false;
  std::string lost_;
};

std::unique_ptr<Index> Broken(std::unique_ptr<Index> real, Defect defect) {
  if (defect == Defect::kNone) return real;
  return std::make_unique<BrokenIndex>(std::move(real), defect);
}

// The failures `check` reports (from any thread), kept out of this test's result.
std::vector<std::string> FailuresOf(const std::function<void()>& check) {
  ::testing::TestPartResultArray results;
  {
    ::testing::ScopedFakeTestPartResultReporter reporter(
        ::testing::ScopedFakeTestPartResultReporter::INTERCEPT_ALL_THREADS, &results);
    check();
  }
  std::vector<std::string> out;
  for (int i = 0; i < results.size(); ++i) {
    const ::testing::TestPartResult& r = results.GetTestPartResult(i);
    if (r.failed()) out.push_back(r.message());
  }
  return out;
}

std::string First(const std::vector<std::string>& failures) {
  return failures.empty() ? "(none)" : failures[0];
}

class BrokenIndexTest : public ::testing::TestWithParam<Defect> {
 protected:
  std::unique_ptr<Index> Create(const std::string& file) {
    auto idx = CreateIndex("rntree", dir_.file(file), BTreeOptions(64ull << 20));
    EXPECT_TRUE(idx.ok()) << idx.status().ToString();
    return idx.ok() ? std::move(idx.value()) : nullptr;
  }
  // A failure is expected iff the index is broken.
  void ExpectCaught(const std::vector<std::string>& failures, const char* checker) {
    if (GetParam() == Defect::kNone) {
      EXPECT_TRUE(failures.empty()) << checker << " failed the unbroken index: " << First(failures);
    } else {
      EXPECT_FALSE(failures.empty()) << checker << " did not catch the broken index";
    }
    std::printf("%s: %zu failures, first: %.120s\n", checker, failures.size(),
                First(failures).c_str());
  }
  TempDir dir_;
};

TEST_P(BrokenIndexTest, ModelCheckerCatchesIt) {
  ModelChecker checker(TestSeed(3));
  ASSERT_NO_FATAL_FAILURE(checker.create("rntree", dir_.file("model"), BTreeOptions(64ull << 20)));
  const Defect defect = GetParam();
  checker.wrap([defect](std::unique_ptr<Index> real) { return Broken(std::move(real), defect); });
  std::mt19937_64 rng(checker.seed());
  const OpMix mix{.insert = 4, .update = 1, .upsert = 1, .remove = 1, .lookup = 2, .scan = 1};
  ExpectCaught(FailuresOf([&] {
                 for (int i = 0; i < 3000; ++i) {
                   const uint64_t k = rng() % 1000;
                   ASSERT_NO_FATAL_FAILURE(checker.random_op(rng, K(k), V(rng()), mix));
                 }
                 ASSERT_NO_FATAL_FAILURE(checker.check_all());
               }),
               "ModelChecker");
}

TEST_P(BrokenIndexTest, RecoveryCheckCatchesIt) {
  std::map<uint64_t, uint64_t> model;
  {
    std::unique_ptr<Index> idx = Create("recovery");
    ASSERT_NE(idx, nullptr);
    RandomWrites(*idx, 4, 5000, &model);
    ASSERT_TRUE(idx->close().ok());
  }
  auto reopened = OpenIndex(dir_.file("recovery"), BTreeOptions(64ull << 20), "rntree");
  ASSERT_TRUE(reopened.ok()) << reopened.status().ToString();
  std::unique_ptr<Index> idx = Broken(std::move(reopened.value()), GetParam());
  ExpectCaught(FailuresOf([&] { ExpectSameContents(*idx, model); }), "ExpectSameContents");
}

TEST_P(BrokenIndexTest, DisjointRangesCatchesIt) {
  std::unique_ptr<Index> idx = Broken(Create("disjoint"), GetParam());
  ExpectCaught(FailuresOf([&] { CheckDisjointRanges(*idx); }), "CheckDisjointRanges");
}

TEST_P(BrokenIndexTest, OverlappingKeysCatchesIt) {
  // Its lookups check values, not presence: a lost key is the disjoint ranges' to catch.
  if (GetParam() == Defect::kLosesAKey) GTEST_SKIP() << "not a defect this check sees";
  std::unique_ptr<Index> idx = Broken(Create("overlapping"), GetParam());
  ExpectCaught(FailuresOf([&] { CheckOverlappingKeys(*idx); }), "CheckOverlappingKeys");
}

TEST_P(BrokenIndexTest, AcknowledgedReadsCatchesIt) {
  std::unique_ptr<Index> idx = Broken(Create("acknowledged"), GetParam());
  ExpectCaught(FailuresOf([&] { CheckAcknowledgedReads(*idx); }), "CheckAcknowledgedReads");
}

INSTANTIATE_TEST_SUITE_P(All, BrokenIndexTest,
                         ::testing::Values(Defect::kNone, Defect::kLosesAKey,
                                           Defect::kRepeatsAKey),
                         [](const auto& info) {
                           switch (info.param) {
                             case Defect::kLosesAKey:
                               return std::string("LosesAKey");
                             case Defect::kRepeatsAKey:
                               return std::string("RepeatsAKey");
                             default:
                               return std::string("Unbroken");
                           }
                         });

}  // namespace
}  // namespace pmindex::testing
