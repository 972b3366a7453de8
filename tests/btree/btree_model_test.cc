// Model tests for every hybrid B+tree layout: random insert/update/upsert/remove/lookup/scan
// against std::map in lockstep, verify() after every batch, enough keys to split (and
// compact, and unlink empty leaves) many times, a reopen in the middle.
#include <gtest/gtest.h>

#include <map>
#include <random>
#include <string>

#include "btree/btree_test_util.h"
#include "common/test_util.h"

namespace pmindex::testing {
namespace {

class BTreeModelTest : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    path_ = dir_.file("pool");
    auto idx = CreateIndex(GetParam(), path_, BTreeOptions());
    ASSERT_TRUE(idx.ok()) << idx.status().ToString();
    index_ = std::move(idx.value());
  }

  void Reopen() {
    ASSERT_TRUE(index_->close().ok());
    index_.reset();
    auto idx = OpenIndex(path_, BTreeOptions(), GetParam());
    ASSERT_TRUE(idx.ok()) << idx.status().ToString();
    index_ = std::move(idx.value());
  }

  void Check(std::mt19937_64& rng, uint64_t key_space) {
    Status v = index_->verify();
    ASSERT_TRUE(v.ok()) << v.ToString();
    ASSERT_EQ(Contents(*index_), model_);
    EXPECT_EQ(index_->stats().keys, model_.size());
    for (int s = 0; s < 30; ++s) {
      const uint64_t start = rng() % (key_space + 2);
      const size_t limit = 1 + rng() % 150;
      auto it = model_.lower_bound(start);
      size_t n = index_->scan(IntKey(start), limit, [&](std::string_view k, std::string_view val) {
        EXPECT_TRUE(it != model_.end());
        if (it == model_.end()) return false;
        EXPECT_EQ(IntKey::Decode(k), it->first);
        EXPECT_EQ(IntValue::Decode(val), it->second);
        ++it;
        return true;
      });
      ASSERT_EQ(n, std::min<size_t>(limit, std::distance(model_.lower_bound(start), model_.end())));
    }
  }

  // One random operation on index and model; the results must agree.
  void Step(std::mt19937_64& rng, uint64_t key_space, int insert_bias) {
    uint64_t k = rng() % key_space;
    if (rng() % 1000 == 0) k = rng() % 2 ? 0 : UINT64_MAX;
    const uint64_t v = rng();
    const bool present = model_.count(k) > 0;
    const int op = static_cast<int>(rng() % (6 + insert_bias));
    std::string got;
    switch (op) {
      case 0: {  // update
        Status s = index_->update(IntKey(k), IntValue(v));
        ASSERT_EQ(s.ok(), present) << s.ToString();
        if (!present) {
          ASSERT_TRUE(s.IsNotFound());
        }
        if (present) model_[k] = v;
        break;
      }
      case 1: {  // upsert
        ASSERT_TRUE(index_->upsert(IntKey(k), IntValue(v)).ok());
        model_[k] = v;
        break;
      }
      case 2:
      case 3: {  // remove
        Status s = index_->remove(IntKey(k));
        ASSERT_EQ(s.ok(), present) << s.ToString();
        if (!present) {
          ASSERT_TRUE(s.IsNotFound());
        }
        model_.erase(k);
        break;
      }
      case 4: {  // lookup
        ASSERT_EQ(index_->lookup(IntKey(k), &got), present);
        if (present) {
          ASSERT_EQ(IntValue::Decode(got), model_[k]);
        }
        break;
      }
      default: {  // insert
        Status s = index_->insert(IntKey(k), IntValue(v));
        ASSERT_EQ(s.ok(), !present) << s.ToString();
        if (present) {
          ASSERT_TRUE(s.IsAlreadyExists());
        }
        if (!present) model_[k] = v;
        break;
      }
    }
  }

  TempDir dir_;
  std::string path_;
  std::unique_ptr<Index> index_;
  std::map<uint64_t, uint64_t> model_;
};

TEST_P(BTreeModelTest, RandomOperations) {
  const uint64_t seed = TestSeed(4242);
  SCOPED_TRACE(SeedTrace(seed));
  std::mt19937_64 rng(seed);
  const uint64_t key_space = Scale(40000);
  const uint64_t ops = Scale(240000);
  const uint64_t batch = ops / 12;
  for (uint64_t i = 0; i < ops; ++i) {
    // Grow first (many splits), then churn, then shrink (compactions, empty leaves).
    const int bias = i < ops / 3 ? 8 : (i < 2 * ops / 3 ? 2 : 0);
    if (i >= 2 * ops / 3 && rng() % 3 == 0) {
      auto it = model_.lower_bound(rng() % key_space);
      if (it != model_.end()) {
        ASSERT_TRUE(index_->remove(IntKey(it->first)).ok());
        model_.erase(it);
      }
      continue;
    }
    ASSERT_NO_FATAL_FAILURE(Step(rng, key_space, bias));
    if ((i + 1) % batch == 0) {
      ASSERT_NO_FATAL_FAILURE(Check(rng, key_space));
      if ((i + 1) == ops / 2) {
        ASSERT_NO_FATAL_FAILURE(Reopen());
      }
    }
  }
  ASSERT_NO_FATAL_FAILURE(Check(rng, key_space));
  ASSERT_NO_FATAL_FAILURE(Reopen());
  ASSERT_NO_FATAL_FAILURE(Check(rng, key_space));
}

TEST_P(BTreeModelTest, SequentialGrowAndDrain) {
  const uint64_t n = Scale(30000);
  for (uint64_t k = 1; k <= n; ++k) {
    ASSERT_TRUE(index_->insert(IntKey(k * 3), IntValue(k)).ok());
    model_[k * 3] = k;
  }
  std::mt19937_64 rng(7);
  ASSERT_NO_FATAL_FAILURE(Check(rng, 3 * n));
  const uint64_t leaves_full = index_->stats().nodes[0].second;
  // Drain all but every 97th key: empty leaves are unlinked, so the chain shrinks.
  for (uint64_t k = 1; k <= n; ++k) {
    if (k % 97 == 0) continue;
    ASSERT_TRUE(index_->remove(IntKey(k * 3)).ok());
    model_.erase(k * 3);
  }
  ASSERT_NO_FATAL_FAILURE(Check(rng, 3 * n));
  const uint64_t leaves_drained = index_->stats().nodes[0].second;
  EXPECT_LT(leaves_drained, leaves_full);
  // Updates in place of the survivors churn append-only logs (compaction).
  for (int round = 0; round < 100; ++round) {
    for (auto& [k, v] : model_) {
      v = v * 31 + 1;
      ASSERT_TRUE(index_->update(IntKey(k), IntValue(v)).ok());
    }
  }
  ASSERT_NO_FATAL_FAILURE(Check(rng, 3 * n));
  ASSERT_NO_FATAL_FAILURE(Reopen());
  ASSERT_NO_FATAL_FAILURE(Check(rng, 3 * n));
}

TEST_P(BTreeModelTest, RejectsOtherSizes) {
  EXPECT_TRUE(index_->insert("short", IntValue(1)).IsInvalidArgument());
  EXPECT_TRUE(index_->insert(IntKey(1), "a value longer than 8").IsInvalidArgument());
  EXPECT_TRUE(index_->insert(IntKey(1), "").IsInvalidArgument());
  EXPECT_TRUE(index_->upsert("123456789", IntValue(1)).IsInvalidArgument());
  EXPECT_TRUE(index_->remove("").IsInvalidArgument());
  EXPECT_TRUE(index_->update(IntKey(1), IntValue(1)).IsNotFound());
  EXPECT_TRUE(index_->remove(IntKey(1)).IsNotFound());
  std::string v;
  EXPECT_FALSE(index_->lookup(IntKey(1), &v));
  EXPECT_EQ(index_->scan(IntKey(0), 10, [](std::string_view, std::string_view) { return true; }),
            0u);
  // Starts of other lengths order bytewise against the 8-byte keys.
  ASSERT_TRUE(index_->insert(IntKey(0x0100000000000000ull), IntValue(1)).ok());
  ASSERT_TRUE(index_->insert(IntKey(0x0100000000000005ull), IntValue(2)).ok());
  auto count = [&](std::string_view start) {
    return index_->scan(start, 10, [](std::string_view, std::string_view) { return true; });
  };
  EXPECT_EQ(count(""), 2u);
  EXPECT_EQ(count(std::string_view("\x01", 1)), 2u);
  EXPECT_EQ(count(std::string("\x01\0\0\0\0\0\0\0\0", 9)), 1u);
  EXPECT_EQ(count("\x02"), 0u);
  ASSERT_TRUE(index_->remove(IntKey(0x0100000000000000ull)).ok());
  ASSERT_TRUE(index_->remove(IntKey(0x0100000000000005ull)).ok());
  EXPECT_TRUE(index_->verify().ok());
}

// A full pool returns OutOfSpace, stays consistent, and takes inserts again after removes.
TEST_P(BTreeModelTest, OutOfSpaceThenRecovers) {
  const std::string small = dir_.file("small");
  auto idx = CreateIndex(GetParam(), small, BTreeOptions(4ull << 20));
  ASSERT_TRUE(idx.ok()) << idx.status().ToString();
  Index& index = *idx.value();
  std::mt19937_64 rng(3);
  std::map<uint64_t, uint64_t> model;
  Status s;
  for (uint64_t i = 0; i < 10000000; ++i) {
    const uint64_t k = rng();
    s = index.insert(IntKey(k), IntValue(i));
    if (!s.ok()) break;
    model[k] = i;
  }
  ASSERT_TRUE(s.IsOutOfSpace()) << s.ToString();
  ASSERT_TRUE(index.verify().ok());
  ASSERT_EQ(Contents(index), model);
  // Remove every other key in order: whole leaves empty out and are unlinked.
  size_t n = 0;
  for (auto it = model.begin(); it != model.end();) {
    if (n++ % 4 != 0) {
      Status r = index.remove(IntKey(it->first));
      // NV-Tree appends a removal entry: in a full leaf that needs a compacted copy, which a
      // full pool cannot give (documented); the key then stays.
      if (GetParam() == "nvtree" && r.IsOutOfSpace()) {
        ++it;
        continue;
      }
      ASSERT_TRUE(r.ok()) << r.ToString();
      it = model.erase(it);
    } else {
      ++it;
    }
  }
  uint64_t inserted = 0;
  for (int i = 0; i < 1000; ++i) {
    const uint64_t k = rng();
    if (index.insert(IntKey(k), IntValue(i)).ok()) {
      model[k] = i;
      ++inserted;
    }
  }
  if (GetParam() != "nvtree") { EXPECT_GT(inserted, 500u); }
  ASSERT_TRUE(index.verify().ok());
  ASSERT_EQ(Contents(index), model);
}

INSTANTIATE_TEST_SUITE_P(All, BTreeModelTest, ::testing::ValuesIn(BTreeNames()),
                         [](const auto& info) {
                           std::string n = info.param;
                           for (char& c : n) {
                             if (c == '-') c = '_';
                           }
                           return n;
                         });

}  // namespace
}  // namespace pmindex::testing
