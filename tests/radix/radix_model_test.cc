// Model tests for the radix trees (wort, woart, art): random operations against std::map in
// lockstep, verify() and full/partial scans after every batch, and for the persistent trees
// a close/reopen (OpenIndex, i.e. recovery + allocator rebuild) in the middle of the run.
#include <gtest/gtest.h>

#include <cstdlib>
#include <map>
#include <random>
#include <string>
#include <tuple>

#include "pmindex/index.h"
#include "radix/radix_test_util.h"

namespace pmindex::testing {
namespace {

using Model = std::map<std::string, std::string>;

class RadixModelTest : public ::testing::TestWithParam<std::tuple<std::string, KeyShape>> {
 protected:
  void SetUp() override {
    name_ = std::get<0>(GetParam());
    const IndexRegistration* reg = FindIndex(name_);
    ASSERT_NE(reg, nullptr) << name_ << " is not registered";
    persistent_ = reg->traits.persistent;
    path_ = dir_.file("pool");
    auto idx = CreateIndex(name_, path_, SmallPoolOptions());
    ASSERT_TRUE(idx.ok()) << idx.status().ToString();
    index_ = std::move(idx.value());
  }

  void Reopen() {
    if (!persistent_) return;
    ASSERT_TRUE(index_->close().ok());
    index_.reset();
    auto idx = OpenIndex(path_, SmallPoolOptions(), name_);
    ASSERT_TRUE(idx.ok()) << idx.status().ToString();
    index_ = std::move(idx.value());
  }

  void CheckAll(std::mt19937_64& rng, KeyGen& gen) {
    Status v = index_->verify();
    ASSERT_TRUE(v.ok()) << v.ToString();
    // Full scan equals the model.
    auto it = model_.begin();
    size_t n = index_->scan({}, SIZE_MAX, [&](std::string_view k, std::string_view val) {
      EXPECT_TRUE(it != model_.end());
      if (it == model_.end()) return false;
      EXPECT_EQ(k, it->first);
      EXPECT_EQ(val, it->second);
      ++it;
      return true;
    });
    ASSERT_EQ(n, model_.size());
    EXPECT_EQ(index_->stats().keys, model_.size());
    // Scans from arbitrary starts, with limits and early stop.
    for (int s = 0; s < 20; ++s) {
      std::string start = gen.Next();
      if (rng() % 3 == 0) start.pop_back();
      size_t limit = 1 + rng() % 40;
      auto mit = model_.lower_bound(start);
      std::vector<std::string> got;
      index_->scan(start, limit, [&](std::string_view k, std::string_view) {
        got.emplace_back(k);
        return true;
      });
      size_t i = 0;
      for (; i < limit && mit != model_.end(); ++i, ++mit) {
        ASSERT_LT(i, got.size()) << "scan from start stopped early";
        ASSERT_EQ(got[i], mit->first);
      }
      ASSERT_EQ(got.size(), i);
    }
    // Every model key is found.
    std::string value;
    for (const auto& [k, val] : model_) {
      ASSERT_TRUE(index_->lookup(k, &value)) << "lost key of size " << k.size();
      ASSERT_EQ(value, val);
    }
  }

  void RunOps(std::mt19937_64& rng, KeyGen& gen, uint64_t ops) {
    std::string value, got;
    for (uint64_t i = 0; i < ops; ++i) {
      std::string key = gen.Next();
      if (rng() % 2) {
        value.assign(8, '\0');
        for (char& c : value) c = static_cast<char>(rng());
      } else {
        value.assign(rng() % 40, 'v');
        if (!value.empty()) value[0] = static_cast<char>(rng());
      }
      const bool present = model_.count(key) != 0;
      const unsigned op = rng() % 100;
      if (op < 40) {
        Status s = index_->insert(key, value);
        if (present) {
          ASSERT_TRUE(s.IsAlreadyExists()) << s.ToString();
        } else {
          ASSERT_TRUE(s.ok()) << s.ToString();
          model_[key] = value;
        }
      } else if (op < 55) {
        ASSERT_TRUE(index_->upsert(key, value).ok());
        model_[key] = value;
      } else if (op < 65) {
        Status s = index_->update(key, value);
        if (present) {
          ASSERT_TRUE(s.ok()) << s.ToString();
          model_[key] = value;
        } else {
          ASSERT_TRUE(s.IsNotFound()) << s.ToString();
        }
      } else if (op < 85) {
        Status s = index_->remove(key);
        if (present) {
          ASSERT_TRUE(s.ok()) << s.ToString();
          model_.erase(key);
        } else {
          ASSERT_TRUE(s.IsNotFound()) << s.ToString();
        }
      } else {
        ASSERT_EQ(index_->lookup(key, &got), present);
        if (present) { ASSERT_EQ(got, model_[key]); }
      }
      if (verify_each_) {
        Status v = index_->verify();
        ASSERT_TRUE(v.ok()) << "after op " << i << " (" << op << ") on key of size " << key.size()
                            << ": " << v.ToString();
      }
    }
  }

  std::string name_;
  bool persistent_ = false;
  TempDir dir_;
  std::string path_;
  std::unique_ptr<Index> index_;
  Model model_;
  // PMINDEX_VERIFY_EACH=1: verify() after every operation (to pinpoint a failure).
  const bool verify_each_ = std::getenv("PMINDEX_VERIFY_EACH") != nullptr;
};

TEST_P(RadixModelTest, LockstepWithStdMap) {
  const KeyShape shape = std::get<1>(GetParam());
  const uint64_t seed = TestSeed(0x5eed0000 + static_cast<uint64_t>(shape));
  SCOPED_TRACE(SeedTrace(seed));
  std::mt19937_64 rng(seed);
  const uint64_t universe = shape == KeyShape::kDense ? Scale(6000) : Scale(4000);
  KeyGen gen(shape, seed, universe);
  const uint64_t batch = Scale(3000);
  for (int b = 0; b < 6; ++b) {
    RunOps(rng, gen, batch);
    if (HasFatalFailure()) return;
    CheckAll(rng, gen);
    if (HasFatalFailure()) return;
    if (b == 2) {
      Reopen();
      if (HasFatalFailure()) return;
      CheckAll(rng, gen);
      if (HasFatalFailure()) return;
    }
  }
  // Drain to empty: every remove succeeds and the tree ends empty and valid.
  std::vector<std::string> keys;
  for (const auto& kv : model_) keys.push_back(kv.first);
  std::shuffle(keys.begin(), keys.end(), rng);
  for (const std::string& k : keys) ASSERT_TRUE(index_->remove(k).ok());
  model_.clear();
  CheckAll(rng, gen);
  EXPECT_EQ(index_->stats().keys, 0u);
  Reopen();
  CheckAll(rng, gen);
}

std::string ParamName(const ::testing::TestParamInfo<RadixModelTest::ParamType>& info) {
  return std::get<0>(info.param) + "_" + KeyShapeName(std::get<1>(info.param));
}

INSTANTIATE_TEST_SUITE_P(
    Radix, RadixModelTest,
    ::testing::Combine(::testing::Values("wort", "woart", "art"),
                       ::testing::Values(KeyShape::kDense, KeyShape::kSparse,
                                         KeyShape::kClustered, KeyShape::kRandomBytes,
                                         KeyShape::kSharedPrefix, KeyShape::kPrefixChains)),
    ParamName);

class RadixLimitsTest : public ::testing::TestWithParam<std::string> {};

TEST_P(RadixLimitsTest, KeyAndValueLimits) {
  TempDir dir;
  auto idx = CreateIndex(GetParam(), dir.file("pool"), SmallPoolOptions());
  ASSERT_TRUE(idx.ok()) << idx.status().ToString();
  Index& index = *idx.value();
  EXPECT_EQ(index.traits().max_key_size, 1024u);
  EXPECT_EQ(index.traits().max_value_size, 255u);
  EXPECT_TRUE(index.insert("", "v").IsInvalidArgument());
  EXPECT_TRUE(index.insert(std::string(1025, 'k'), "v").IsInvalidArgument());
  EXPECT_TRUE(index.insert("k", std::string(256, 'v')).IsInvalidArgument());
  EXPECT_TRUE(index.upsert(std::string(1025, 'k'), "v").IsInvalidArgument());
  const std::string big_key(1024, 'k'), big_value(255, 'v');
  ASSERT_TRUE(index.insert(big_key, big_value).ok());
  ASSERT_TRUE(index.insert(big_key.substr(0, 1023), "short").ok());
  ASSERT_TRUE(index.insert(IntKey(7), IntValue(42)).ok());
  ASSERT_TRUE(index.insert(std::string("\0", 1), "zero").ok());
  std::string v;
  ASSERT_TRUE(index.lookup(big_key, &v));
  EXPECT_EQ(v, big_value);
  ASSERT_TRUE(index.lookup(IntKey(7), &v));
  EXPECT_EQ(IntValue::Decode(v), 42u);
  ASSERT_TRUE(index.update(IntKey(7), IntValue(43)).ok());
  ASSERT_TRUE(index.lookup(IntKey(7), &v));
  EXPECT_EQ(IntValue::Decode(v), 43u);
  ASSERT_TRUE(index.lookup(std::string("\0", 1), &v));
  EXPECT_EQ(v, "zero");
  EXPECT_TRUE(index.verify().ok());
}

INSTANTIATE_TEST_SUITE_P(Radix, RadixLimitsTest, ::testing::Values("wort", "woart", "art"));

}  // namespace
}  // namespace pmindex::testing
