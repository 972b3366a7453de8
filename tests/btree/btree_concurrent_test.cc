// Concurrency of the hybrid B+trees (rntree, rntree-ds, fptree, and nvtree, wbtree, wbtree-so,
// whose papers ran one thread), with more threads than cores: disjoint key ranges checked
// against a per-thread model; overlapping keys checked for per-key insert/remove balance,
// value provenance and sorted scans; lookups on reader threads checked against what the
// writers acknowledged (btree_concurrent_checks.h). A persist hook shows that writers of
// different leaves are inside their persists at once and writers of one leaf never are.
// Run under -DPMINDEX_SANITIZE=thread too (label tsan).
#include <gtest/gtest.h>

#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <thread>

#include "btree/btree_concurrent_checks.h"
#include "btree/btree_test_util.h"
#include "common/test_util.h"
#include "pm/persist.h"

namespace pmindex::testing {
namespace {

// Holds each thread in its first fence (after arm()) until another thread is in its own
// first fence too, or `wait` has passed; overlapped() tells whether two ever were at once.
class FenceRendezvous : public PersistHook {
 public:
  explicit FenceRendezvous(std::chrono::milliseconds wait) : wait_(wait) {}
  void arm() { armed_ = true; }
  bool overlapped() {
    std::lock_guard<std::mutex> lock(mu_);
    return overlapped_;
  }
  void on_flush(uintptr_t, size_t) override {}
  void on_fence() override {
    std::unique_lock<std::mutex> lock(mu_);
    if (!armed_ || !seen_.insert(std::this_thread::get_id()).second) return;
    ++inside_;
    if (inside_ >= 2) overlapped_ = true;
    cv_.notify_all();
    cv_.wait_for(lock, wait_, [&] { return overlapped_; });
    --inside_;
  }

 private:
  const std::chrono::milliseconds wait_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool armed_ = false;
  std::set<std::thread::id> seen_;
  int inside_ = 0;
  bool overlapped_ = false;
};

// Two threads update `a` and `b` at once, each held in its first fence as above.
bool WritersOverlap(Index& index, uint64_t a, uint64_t b, std::chrono::milliseconds wait) {
  FenceRendezvous hook(wait);
  auto& pc = index.pool()->persist_context();
  pc.set_hook(&hook);
  hook.arm();
  std::thread other([&] { EXPECT_TRUE(index.update(IntKey(b), IntValue(2)).ok()); });
  EXPECT_TRUE(index.update(IntKey(a), IntValue(1)).ok());
  other.join();
  pc.set_hook(nullptr);
  return hook.overlapped();
}

class BTreeConcurrentTest : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    auto idx = CreateIndex(GetParam(), dir_.file("pool"), BTreeOptions());
    ASSERT_TRUE(idx.ok()) << idx.status().ToString();
    index_ = std::move(idx.value());
  }
  TempDir dir_;
  std::unique_ptr<Index> index_;
};

TEST_P(BTreeConcurrentTest, DisjointRanges) { CheckDisjointRanges(*index_); }

TEST_P(BTreeConcurrentTest, OverlappingKeys) { CheckOverlappingKeys(*index_); }

// Readers on other threads than the writers (the one-writer layouts' optimistic readers).
TEST_P(BTreeConcurrentTest, AcknowledgedReads) { CheckAcknowledgedReads(*index_); }

// Writers of different leaves persist at the same time (no tree-wide writer lock); writers of
// one leaf take turns (the leaf lock is held through the persists: a Write that skipped it
// lets the second writer into its fence while the first waits in its own).
TEST_P(BTreeConcurrentTest, WritersOfDifferentLeavesOverlapOfOneLeafDoNot) {
  for (uint64_t k = 0; k < 1000; ++k) ASSERT_TRUE(index_->insert(IntKey(k), IntValue(k)).ok());
  EXPECT_TRUE(WritersOverlap(*index_, 10, 990, std::chrono::seconds(20)))
      << "writers of two leaves did not persist at the same time";
  EXPECT_FALSE(WritersOverlap(*index_, 500, 500, std::chrono::milliseconds(300)))
      << "two writers of one leaf were inside their persists at once";
  Status v = index_->verify();
  EXPECT_TRUE(v.ok()) << v.ToString();
}

INSTANTIATE_TEST_SUITE_P(All, BTreeConcurrentTest,
                         ::testing::Values("rntree", "rntree-ds", "fptree", "nvtree", "wbtree",
                                           "wbtree-so"),
                         [](const auto& info) {
                           std::string n = info.param;
                           for (char& c : n) {
                             if (c == '-') c = '_';
                           }
                           return n;
                         });

}  // namespace
}  // namespace pmindex::testing
