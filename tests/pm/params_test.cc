// pm::ParamValue / ParamUint / ParamChoice: the one reader of index parameters.
#include "pm/params.h"

#include <gtest/gtest.h>

namespace pmindex::pm {
namespace {

TEST(Params, FindsWholeKeysSeparatedBySpacesOrCommas) {
  EXPECT_EQ(ParamValue("rntree log_persist=parallel split=native", "split"), "native");
  EXPECT_EQ(ParamValue("leaf_bytes=1024,capacity=63", "capacity"), "63");
  EXPECT_EQ(ParamValue("leaf_bytes=1024,capacity=63", "bytes"), std::nullopt);  // not a suffix
  EXPECT_EQ(ParamValue("xsplit=a", "split"), std::nullopt);                     // not a suffix
  EXPECT_EQ(ParamValue("split", "split"), std::nullopt);                        // no value
  EXPECT_EQ(ParamValue("a=1 a=2", "a"), "2");                                   // last wins
  EXPECT_EQ(ParamValue("", "a"), std::nullopt);
  const char padded[16] = "a=7";  // a header field: NUL-padded
  EXPECT_EQ(ParamValue(std::string_view(padded, sizeof(padded)), "a"), "7");
}

TEST(Params, NumbersAndChoicesAreCheckedWithAClearStatus) {
  EXPECT_EQ(*ParamUint("x", "x n=12", "n", 5), 12u);
  EXPECT_EQ(*ParamUint("x", "x", "n", 5), 5u);
  Result<uint64_t> bad = ParamUint("x", "x n=12k", "n", 5);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().ToString().find("n must be a number"), std::string::npos);
  EXPECT_EQ(*ParamChoice("x", "x mode=b", "mode", {"a", "b"}, "a"), "b");
  EXPECT_EQ(*ParamChoice("x", "x", "mode", {"a", "b"}, "a"), "a");
  Result<std::string_view> wrong = ParamChoice("x", "x mode=c", "mode", {"a", "b"}, "a");
  ASSERT_FALSE(wrong.ok());
  EXPECT_NE(wrong.status().ToString().find("one of a, b"), std::string::npos);
}

}  // namespace
}  // namespace pmindex::pm
