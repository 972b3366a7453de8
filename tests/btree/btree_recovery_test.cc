// Recovery of every hybrid B+tree: a clean close and reopen through OpenIndex (recover +
// allocator rebuild), and a "crash" taken by copying the pool file's bytes while the index
// is open (nothing closed, volatile leaf fields as they were) and opening the copy.
#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <random>
#include <string>

#include "btree/btree_test_util.h"
#include "common/test_util.h"

namespace pmindex::testing {
namespace {

class BTreeRecoveryTest : public ::testing::TestWithParam<std::string> {
 protected:
  // Random inserts, updates and removes; returns the model.
  std::map<uint64_t, uint64_t> Fill(Index& index, uint64_t seed, uint64_t n) {
    std::mt19937_64 rng(seed);
    std::map<uint64_t, uint64_t> model;
    for (uint64_t i = 0; i < n; ++i) {
      const uint64_t k = rng() % (n * 2);
      const uint64_t v = rng();
      switch (rng() % 5) {
        case 0:
          if (index.remove(IntKey(k)).ok()) model.erase(k);
          break;
        case 1:
          if (index.update(IntKey(k), IntValue(v)).ok()) model[k] = v;
          break;
        default:
          EXPECT_TRUE(index.upsert(IntKey(k), IntValue(v)).ok());
          model[k] = v;
      }
    }
    return model;
  }

  void ExpectSame(Index& index, const std::map<uint64_t, uint64_t>& model) {
    Status v = index.verify();
    ASSERT_TRUE(v.ok()) << v.ToString();
    ASSERT_EQ(Contents(index), model);
    std::string got;
    for (const auto& [k, val] : model) {
      ASSERT_TRUE(index.lookup(IntKey(k), &got).ok());
      ASSERT_EQ(IntValue::Decode(got), val);
    }
  }

  TempDir dir_;
};

TEST_P(BTreeRecoveryTest, CloseAndReopen) {
  const std::string path = dir_.file("pool");
  std::map<uint64_t, uint64_t> model;
  {
    auto idx = CreateIndex(GetParam(), path, BTreeOptions());
    ASSERT_TRUE(idx.ok()) << idx.status().ToString();
    model = Fill(*idx.value(), 1, Scale(40000));
    ASSERT_TRUE(idx.value()->close().ok());
  }
  for (int round = 0; round < 2; ++round) {
    auto idx = OpenIndex(path, BTreeOptions(), GetParam());
    ASSERT_TRUE(idx.ok()) << idx.status().ToString();
    ASSERT_NO_FATAL_FAILURE(ExpectSame(*idx.value(), model));
    // The reopened tree keeps working: more operations, then again.
    auto more = Fill(*idx.value(), 10 + round, Scale(5000));
    for (const auto& [k, v] : more) model[k] = v;
    model = Contents(*idx.value());
  }
  // Empty tree reopens as empty and works.
  const std::string empty = dir_.file("empty");
  {
    auto idx = CreateIndex(GetParam(), empty, BTreeOptions());
    ASSERT_TRUE(idx.ok());
  }
  auto idx = OpenIndex(empty, BTreeOptions(), GetParam());
  ASSERT_TRUE(idx.ok()) << idx.status().ToString();
  ASSERT_NO_FATAL_FAILURE(ExpectSame(*idx.value(), {}));
  ASSERT_TRUE(idx.value()->insert(IntKey(5), IntValue(6)).ok());
  ASSERT_NO_FATAL_FAILURE(ExpectSame(*idx.value(), {{5, 6}}));
}

TEST_P(BTreeRecoveryTest, ReopenWithoutClose) {
  const std::string path = dir_.file("pool");
  const std::string copy = dir_.file("copy");
  auto idx = CreateIndex(GetParam(), path, BTreeOptions());
  ASSERT_TRUE(idx.ok()) << idx.status().ToString();
  auto model = Fill(*idx.value(), 2, Scale(30000));
  // The image a power failure would leave if everything reached media (in adr mode every
  // acknowledged write was flushed; the copy also carries the volatile fields as they were).
  std::filesystem::copy_file(path, copy);
  auto more = Fill(*idx.value(), 3, Scale(3000));  // the original moves on
  auto reopened = OpenIndex(copy, BTreeOptions(), GetParam());
  ASSERT_TRUE(reopened.ok()) << reopened.status().ToString();
  ASSERT_NO_FATAL_FAILURE(ExpectSame(*reopened.value(), model));
  auto after = Fill(*reopened.value(), 4, Scale(3000));
  ASSERT_TRUE(reopened.value()->verify().ok());
  (void)more;
  (void)after;
}

TEST_P(BTreeRecoveryTest, RefusesOtherLayout) {
  const std::string path = dir_.file("pool");
  {
    auto idx = CreateIndex(GetParam(), path, BTreeOptions());
    ASSERT_TRUE(idx.ok());
  }
  const std::string other = GetParam() == "rntree" ? "fptree" : "rntree";
  auto idx = OpenIndex(path, BTreeOptions(), other);
  EXPECT_FALSE(idx.ok());
}

// A pool whose leaves have another layout version of the same tree (written by an older or
// newer build) is refused with NotSupported rather than misread. The root area's kind word
// (pool offset 1024 + 8) carries the version minus one in its upper half.
TEST_P(BTreeRecoveryTest, RefusesOtherLeafLayoutVersion) {
  const std::string path = dir_.file("pool");
  {
    auto idx = CreateIndex(GetParam(), path, BTreeOptions());
    ASSERT_TRUE(idx.ok());
    ASSERT_TRUE((*idx)->insert(IntKey(1), IntValue(2)).ok());
  }
  {
    std::FILE* f = std::fopen(path.c_str(), "r+b");
    ASSERT_NE(f, nullptr);
    uint64_t kind = 0;
    ASSERT_EQ(std::fseek(f, 1024 + 8, SEEK_SET), 0);
    ASSERT_EQ(std::fread(&kind, 8, 1, f), 1u);
    kind = static_cast<uint32_t>(kind) | uint64_t{41} << 32;  // layout 42
    ASSERT_EQ(std::fseek(f, 1024 + 8, SEEK_SET), 0);
    ASSERT_EQ(std::fwrite(&kind, 8, 1, f), 1u);
    std::fclose(f);
  }
  auto idx = OpenIndex(path, BTreeOptions(), GetParam());
  ASSERT_FALSE(idx.ok());
  EXPECT_TRUE(idx.status().IsNotSupported()) << idx.status().ToString();
  EXPECT_NE(idx.status().ToString().find("layout 42"), std::string::npos)
      << idx.status().ToString();
}

INSTANTIATE_TEST_SUITE_P(All, BTreeRecoveryTest, ::testing::ValuesIn(BTreeNames()),
                         [](const auto& info) {
                           std::string n = info.param;
                           for (char& c : n) {
                             if (c == '-') c = '_';
                           }
                           return n;
                         });

}  // namespace
}  // namespace pmindex::testing
