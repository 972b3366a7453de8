// Key types, latency histogram and dump formatting: the small pieces of the workbench.
#include <gtest/gtest.h>

#include <algorithm>
#include <set>

#include "bench/dump.h"
#include "bench/keys.h"
#include "bench/latency.h"
#include "bench/trace.h"
#include "bench/workloads.h"
#include "common/test_util.h"
#include "pmindex/index.h"

namespace pmindex::bench {
namespace {

KeyType Parse(const std::string& s) {
  KeyType t;
  std::string err;
  EXPECT_TRUE(ParseKeyType(s, &t, &err)) << err;
  return t;
}

TEST(KeysTest, IntKeysAreDistinctScrambledAndBigEndian) {
  KeyCodec scrambled(Parse("int"), true), plain(Parse("int"), false);
  std::set<std::string> seen;
  std::vector<std::string> in_id_order;
  for (uint64_t id = 0; id < 10000; id++) {
    const std::string k = scrambled.encode(id);
    ASSERT_EQ(k.size(), 8u);
    ASSERT_TRUE(seen.insert(k).second);
    EXPECT_EQ(IntKey::Decode(k), ScrambleId(id));
    EXPECT_EQ(IntKey::Decode(plain.encode(id)), id);
    in_id_order.push_back(k);
  }
  // Scrambled ids are not in key order; sequential ones are.
  EXPECT_FALSE(std::is_sorted(in_id_order.begin(), in_id_order.end()));
  for (uint64_t id = 1; id < 1000; id++) ASSERT_LT(plain.encode(id - 1), plain.encode(id));
}

TEST(KeysTest, StringKeysLookLikeYcsb) {
  KeyCodec scrambled(Parse("string"), true), plain(Parse("string"), false);
  std::set<std::string> seen;
  for (uint64_t id = 0; id < 10000; id++) {
    const std::string k = scrambled.encode(id);
    ASSERT_EQ(k.rfind("user", 0), 0u);
    ASSERT_LE(k.size(), scrambled.max_size());
    ASSERT_TRUE(seen.insert(k).second);
  }
  for (uint64_t id = 1; id < 2000; id++) ASSERT_LT(plain.encode(id - 1), plain.encode(id));
}

TEST(KeysTest, FixedLengthKeys) {
  KeyCodec long_keys(Parse("str:40"), true);
  std::set<std::string> seen;
  for (uint64_t id = 0; id < 5000; id++) {
    const std::string k = long_keys.encode(id);
    ASSERT_EQ(k.size(), 40u);
    ASSERT_TRUE(seen.insert(k).second);
  }
  // Short keys: every id below 256^LEN gets its own key.
  KeyCodec short_keys(Parse("str:2"), true);
  EXPECT_EQ(short_keys.capacity(), 65536u);
  std::set<std::string> all;
  for (uint64_t id = 0; id < 65536; id++) all.insert(short_keys.encode(id));
  EXPECT_EQ(all.size(), 65536u);
  KeyType t;
  std::string err;
  EXPECT_FALSE(ParseKeyType("str:0", &t, &err));
  EXPECT_FALSE(ParseKeyType("str:abc", &t, &err));
  EXPECT_FALSE(ParseKeyType("float", &t, &err));
}

TEST(LatencyTest, PercentilesWithinBucketResolution) {
  LatencyHistogram h;
  for (uint64_t v = 1; v <= 100000; v++) h.add(v);
  EXPECT_EQ(h.count(), 100000u);
  EXPECT_EQ(h.max(), 100000u);
  for (double q : {0.5, 0.99, 0.999}) {
    const double want = q * 100000;
    EXPECT_NEAR(static_cast<double>(h.percentile(q)), want, want * 0.02) << q;
  }
  LatencyHistogram small;
  for (int i = 0; i < 100; i++) small.add(37);
  EXPECT_EQ(small.percentile(0.5), 37u);
  LatencyHistogram merged;
  merged.merge(h);
  merged.merge(small);
  EXPECT_EQ(merged.count(), 100100u);
}

TEST(DumpFormatTest, KeysAndValuesPrintAsTwoFields) {
  EXPECT_EQ(FormatKey(IntKey(12345).view(), BytesFormat::kAuto), "12345");
  EXPECT_EQ(FormatValue(IntValue(77), BytesFormat::kAuto), "77");
  EXPECT_EQ(FormatKey("user42", BytesFormat::kAuto), "user42");
  EXPECT_EQ(FormatKey("a b\\c\n", BytesFormat::kAuto), "a\\x20b\\\\c\\x0a");
  EXPECT_EQ(FormatKey("abcdefgh", BytesFormat::kAuto), "abcdefgh");  // printable: a string
  EXPECT_EQ(FormatKey("abcdefgh", BytesFormat::kInt), std::to_string(IntKey::Decode("abcdefgh")));
  std::string key;
  ASSERT_TRUE(ParseKeyArgument("12345", &key));
  EXPECT_EQ(key, std::string(IntKey(12345).view()));
  ASSERT_TRUE(ParseKeyArgument("a\\x20b\\\\c", &key));
  EXPECT_EQ(key, "a b\\c");
  EXPECT_FALSE(ParseKeyArgument("bad\\q", &key));
}

TEST(DumpFormatTest, AutoTextReadsBackAsTheBytesItCameFrom) {
  // A byte string that would read as a decimal has its first byte escaped.
  EXPECT_EQ(FormatKey("12345", BytesFormat::kAuto), "\\x312345");
  EXPECT_EQ(FormatKey("12345", BytesFormat::kString), "12345");
  EXPECT_EQ(FormatValue("7", BytesFormat::kAuto), "\\x37");
  const std::vector<std::string> keys = {"12345", "", "a b", std::string(IntKey(9).view()),
                                         "abcdefgh", "\\", std::string("\0\xff", 2)};
  for (const std::string& k : keys) {
    std::string back;
    ASSERT_TRUE(ParseKeyText(FormatKey(k, BytesFormat::kAuto), BytesFormat::kAuto, &back)) << k;
    EXPECT_EQ(back, k);
    ASSERT_TRUE(ParseValueText(FormatValue(k, BytesFormat::kAuto), BytesFormat::kAuto, &back));
    EXPECT_EQ(back, k);
    ASSERT_TRUE(ParseKeyText(FormatKey(k, BytesFormat::kString), BytesFormat::kString, &back));
    EXPECT_EQ(back, k);
  }
  std::string v;
  ASSERT_TRUE(ParseValueText("77", BytesFormat::kInt, &v));
  EXPECT_EQ(v, std::string(IntValue(77)));
  EXPECT_FALSE(ParseValueText("x77", BytesFormat::kInt, &v));
  ASSERT_TRUE(ParseValueText("77", BytesFormat::kString, &v));
  EXPECT_EQ(v, "77");
}

TEST(WorkloadsTest, MixesSumToOneHundred) {
  for (const std::string& name : WorkloadNames()) {
    Workload w;
    ASSERT_TRUE(FindWorkload(name, &w));
    if (w.kind != Workload::Kind::kMix && w.kind != Workload::Kind::kLoad) continue;
    const OpMix& m = w.mix;
    EXPECT_EQ(m.read + m.update + m.insert + m.scan + m.rmw + m.remove, 100u) << name;
  }
  std::vector<Workload> list;
  std::string err;
  EXPECT_TRUE(ParseWorkloads("load,a,e,recover", &list, &err));
  EXPECT_EQ(list.size(), 4u);
  EXPECT_FALSE(ParseWorkloads("load,z", &list, &err));
  EXPECT_NE(err.find("'z'"), std::string::npos);
}

TEST(TraceTest, ParsesBothLineFormatsAndNumbersLines) {
  pmindex::testing::TempDir dir;
  const std::string path = dir.file("t.txt");
  std::FILE* f = std::fopen(path.c_str(), "w");
  std::fprintf(f,
               "INSERT 42\n"
               "\n"
               "INSERT usertable user7 [ field0=abc ]\n"
               "SCAN 40 10\n"
               "READ user7\n"
               "UPDATE 42\n"
               "DELETE 99999999999999999999999\n");
  std::fclose(f);
  Trace t;
  ASSERT_TRUE(ParseTrace(path, 100, &t).ok());
  ASSERT_EQ(t.ops.size(), 6u);
  EXPECT_EQ(t.lines, 7u);
  EXPECT_EQ(t.ops[0].line, 101u);
  EXPECT_EQ(t.key(t.ops[0]), std::string(IntKey(42).view()));
  EXPECT_EQ(t.ops[1].line, 103u);
  EXPECT_EQ(t.key(t.ops[1]), "user7");
  EXPECT_EQ(t.ops[2].kind, OpKind::kScan);
  EXPECT_EQ(t.ops[2].scan_count, 10u);
  EXPECT_EQ(t.ops[5].kind, OpKind::kRemove);
  EXPECT_EQ(t.key(t.ops[5]), "99999999999999999999999");  // beyond 64 bits: a byte string
  EXPECT_TRUE(t.has_byte_keys);
  EXPECT_EQ(t.inserts, 2u);

  f = std::fopen(path.c_str(), "w");
  std::fprintf(f, "INSERT 1\nFROB 2\n");
  std::fclose(f);
  Trace bad;
  const Status s = ParseTrace(path, 0, &bad);
  ASSERT_TRUE(s.IsInvalidArgument());
  EXPECT_NE(s.message().find(path + ":2"), std::string_view::npos) << s.ToString();
  EXPECT_TRUE(ParseTrace(dir.file("missing"), 0, &bad).IsNotFound());
}

}  // namespace
}  // namespace pmindex::bench
