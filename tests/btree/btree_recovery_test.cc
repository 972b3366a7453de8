// Recovery of every hybrid B+tree: a clean close and reopen through OpenIndex (recover +
// allocator rebuild), and a "crash" taken by copying the pool file's bytes while the index
// is open (nothing closed, volatile leaf fields as they were) and opening the copy.
#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <string>

#include "btree/btree_test_util.h"
#include "common/test_util.h"

namespace pmindex::testing {
namespace {

// One model per pool, kept across closes, reopens and crashes; never rebuilt from the tree.
class BTreeRecoveryTest : public ::testing::TestWithParam<std::string> {
 protected:
  TempDir dir_;
};

TEST_P(BTreeRecoveryTest, CloseAndReopen) {
  const std::string path = dir_.file("pool");
  std::map<uint64_t, uint64_t> model;
  {
    auto idx = CreateIndex(GetParam(), path, BTreeOptions());
    ASSERT_TRUE(idx.ok()) << idx.status().ToString();
    RandomWrites(*idx.value(), 1, Scale(40000), &model);
    ASSERT_TRUE(idx.value()->close().ok());
  }
  for (int round = 0; round < 2; ++round) {
    SCOPED_TRACE("reopen " + std::to_string(round));
    auto idx = OpenIndex(path, BTreeOptions(), GetParam());
    ASSERT_TRUE(idx.ok()) << idx.status().ToString();
    ASSERT_NO_FATAL_FAILURE(ExpectSameContents(*idx.value(), model));
    // The reopened tree keeps working: more operations on the same model, then again.
    RandomWrites(*idx.value(), 10 + round, Scale(5000), &model);
    ASSERT_NO_FATAL_FAILURE(ExpectSameContents(*idx.value(), model));
    ASSERT_TRUE(idx.value()->close().ok());
  }
  // Empty tree reopens as empty and works.
  const std::string empty = dir_.file("empty");
  {
    auto idx = CreateIndex(GetParam(), empty, BTreeOptions());
    ASSERT_TRUE(idx.ok());
  }
  auto idx = OpenIndex(empty, BTreeOptions(), GetParam());
  ASSERT_TRUE(idx.ok()) << idx.status().ToString();
  ASSERT_NO_FATAL_FAILURE(ExpectSameContents(*idx.value(), {}));
  ASSERT_TRUE(idx.value()->insert(IntKey(5), IntValue(6)).ok());
  ASSERT_NO_FATAL_FAILURE(ExpectSameContents(*idx.value(), {{5, 6}}));
}

TEST_P(BTreeRecoveryTest, ReopenWithoutClose) {
  const std::string path = dir_.file("pool");
  const std::string copy = dir_.file("copy");
  auto idx = CreateIndex(GetParam(), path, BTreeOptions());
  ASSERT_TRUE(idx.ok()) << idx.status().ToString();
  std::map<uint64_t, uint64_t> model;
  RandomWrites(*idx.value(), 2, Scale(30000), &model);
  // The image a power failure would leave if everything reached media (in adr mode every
  // acknowledged write was flushed; the copy also carries the volatile fields as they were).
  std::filesystem::copy_file(path, copy);
  // From here the two pools differ: each has its own model, both starting from `model`.
  std::map<uint64_t, uint64_t> original = model;
  RandomWrites(*idx.value(), 3, Scale(3000), &original);  // the original moves on
  auto reopened = OpenIndex(copy, BTreeOptions(), GetParam());
  ASSERT_TRUE(reopened.ok()) << reopened.status().ToString();
  ASSERT_NO_FATAL_FAILURE(ExpectSameContents(*reopened.value(), model));
  RandomWrites(*reopened.value(), 4, Scale(3000), &model);
  ASSERT_NO_FATAL_FAILURE(ExpectSameContents(*reopened.value(), model));
  ASSERT_NO_FATAL_FAILURE(ExpectSameContents(*idx.value(), original));
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
