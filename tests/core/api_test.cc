// The promises of the public API that hold for every registered index: operations on a
// closed index return a Status (never crash), keys beyond the limits are errors (reads
// included), and the open options are honoured.
#include <gtest/gtest.h>

#include <string>

#include "bench/baselines/baselines.h"
#include "common/test_util.h"
#include "pmindex/index.h"

namespace pmindex {
namespace {

using testing::TempDir;

Options SmallOptions() {
  Options o;
  o.pool_size = 8 << 20;
  return o;
}

std::string KeyFor(const IndexTraits& t, uint64_t i) {
  return std::string(IntKey(i).view());
}

class ApiTest : public ::testing::TestWithParam<std::string> {};

TEST_P(ApiTest, EveryOperationOnAClosedIndexReturnsAStatus) {
  TempDir dir;
  auto made = CreateIndex(GetParam(), dir.file("p"), SmallOptions());
  ASSERT_TRUE(made.ok()) << made.status().ToString();
  Index& index = *made.value();
  const IndexTraits traits = index.traits();
  ASSERT_TRUE(index.insert(KeyFor(traits, 1), IntValue(1)).ok());
  ASSERT_TRUE(index.close().ok());
  EXPECT_TRUE(index.close().ok()) << "close is idempotent";
  const std::string k = KeyFor(traits, 1);
  EXPECT_TRUE(index.insert(KeyFor(traits, 2), IntValue(2)).IsInvalidArgument());
  EXPECT_TRUE(index.update(k, IntValue(3)).IsInvalidArgument());
  EXPECT_TRUE(index.upsert(k, IntValue(3)).IsInvalidArgument());
  EXPECT_TRUE(index.remove(k).IsInvalidArgument());
  std::string v;
  EXPECT_TRUE(index.lookup(k, &v).IsInvalidArgument());
  EXPECT_EQ(index.scan({}, 10, [](std::string_view, std::string_view) { return true; }), 0u);
  size_t count = 1;
  EXPECT_TRUE(index.scan_checked({}, 10, [](std::string_view, std::string_view) { return true; },
                                 &count)
                  .IsInvalidArgument());
  EXPECT_EQ(count, 0u);
  EXPECT_FALSE(index.verify().ok());
  EXPECT_EQ(index.stats().keys, 0u);
  EXPECT_EQ(index.pool(), nullptr);
}

TEST_P(ApiTest, ScanCheckedCountsAnOrderedRangeAndRefusesAnUnorderedOne) {
  TempDir dir;
  auto made = CreateIndex(GetParam(), dir.file("p"), SmallOptions());
  ASSERT_TRUE(made.ok()) << made.status().ToString();
  Index& index = *made.value();
  for (uint64_t i = 1; i <= 5; ++i)
    ASSERT_TRUE(index.insert(KeyFor(index.traits(), i), IntValue(i)).ok());
  size_t count = 99;
  size_t calls = 0;
  const Status s = index.scan_checked(
      KeyFor(index.traits(), 3), 10, [&](std::string_view, std::string_view) { return ++calls; },
      &count);
  if (index.traits().ordered) {
    ASSERT_TRUE(s.ok()) << s.ToString();
    EXPECT_EQ(count, 3u);
    EXPECT_EQ(calls, 3u);
  } else {
    EXPECT_TRUE(s.IsNotSupported()) << s.ToString();
    EXPECT_EQ(count, 0u);
    EXPECT_EQ(calls, 0u);
  }
}

// Options::index_params replaces the registration's default parameters in a new pool, and
// an open reads them from the pool, whatever its options say.
TEST_P(ApiTest, IndexParamsChooseANewPoolsParameters) {
  const IndexRegistration* reg = FindIndex(GetParam());
  if (reg->attach == nullptr || reg->campaign_params.empty())
    GTEST_SKIP() << "no pool, or no parameters other than the defaults";
  TempDir dir;
  Options o = SmallOptions();
  o.index_params = reg->campaign_params;
  auto made = CreateIndex(GetParam(), dir.file("p"), o);
  ASSERT_TRUE(made.ok()) << made.status().ToString();
  auto recorded = [](Index& index) {
    const std::string_view p = index.pool()->index_params();
    return std::string(p.substr(0, p.find('\0')));
  };
  EXPECT_EQ(recorded(*made.value()), reg->campaign_params);
  ASSERT_TRUE(made.value()->insert(KeyFor(reg->traits, 1), IntValue(1)).ok());
  ASSERT_TRUE(made.value()->close().ok());
  auto opened = OpenIndex(dir.file("p"), SmallOptions());
  ASSERT_TRUE(opened.ok()) << opened.status().ToString();
  EXPECT_EQ(recorded(*opened.value()), reg->campaign_params);
  auto fresh = CreateIndex(GetParam(), dir.file("q"), SmallOptions());
  ASSERT_TRUE(fresh.ok()) << fresh.status().ToString();
  EXPECT_EQ(recorded(*fresh.value()), reg->params);
}

TEST_P(ApiTest, KeysBeyondTheLimitsAreErrorsForReadsToo) {
  TempDir dir;
  auto made = CreateIndex(GetParam(), dir.file("p"), SmallOptions());
  ASSERT_TRUE(made.ok()) << made.status().ToString();
  Index& index = *made.value();
  const IndexTraits& t = index.traits();
  const std::string too_long(t.max_key_size + 1, 'k');
  std::string v;
  EXPECT_TRUE(index.lookup(too_long, &v).IsInvalidArgument());
  EXPECT_TRUE(index.remove(too_long).IsInvalidArgument());
  EXPECT_TRUE(index.insert(too_long, IntValue(1)).IsInvalidArgument());
  EXPECT_TRUE(index.lookup({}, &v).IsInvalidArgument());
  EXPECT_TRUE(index.insert(KeyFor(t, 1), std::string(t.max_value_size + 1, 'v'))
                  .IsInvalidArgument());
  EXPECT_TRUE(index.lookup(KeyFor(t, 1), &v).IsNotFound()) << "nothing was written";
  EXPECT_TRUE(index.verify().ok());
}

std::vector<std::string> Names() {
  bench::RegisterBaselines();  // stdmap, lmdb, rocksdb: every registered index, not only pools
  std::vector<std::string> names;
  for (const std::string& n : RegisteredIndexNames()) {
    if (n.rfind("test", 0) == 0) continue;  // test-only registrations
    names.push_back(n);
  }
  return names;
}

INSTANTIATE_TEST_SUITE_P(Registered, ApiTest, ::testing::ValuesIn(Names()),
                         [](const auto& info) {
                           std::string s = info.param;
                           for (char& c : s)
                             if (c == '-') c = '_';
                           return s;
                         });

TEST(OpenOptions, CreateIfMissingAndErrorIfExists) {
  TempDir dir;
  const std::string path = dir.file("p");
  Options o = SmallOptions();
  EXPECT_TRUE(OpenIndex(path, o, "rntree").status().IsNotFound());
  o.create_if_missing = true;
  EXPECT_TRUE(OpenIndex(path, o).status().IsInvalidArgument()) << "no name to create";
  {
    auto created = OpenIndex(path, o, "rntree");
    ASSERT_TRUE(created.ok()) << created.status().ToString();
    ASSERT_TRUE(created.value()->insert(IntKey(5), IntValue(6)).ok());
  }
  o.error_if_exists = true;
  EXPECT_TRUE(OpenIndex(path, o, "rntree").status().IsAlreadyExists());
  EXPECT_TRUE(OpenOrCreateIndex("rntree", path, o).status().IsAlreadyExists());
  o.error_if_exists = false;
  auto reopened = OpenOrCreateIndex("rntree", path, o);
  ASSERT_TRUE(reopened.ok()) << reopened.status().ToString();
  std::string v;
  EXPECT_TRUE(reopened.value()->lookup(IntKey(5), &v).ok());
}

}  // namespace
}  // namespace pmindex
