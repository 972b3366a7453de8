// Bad input: random byte corruption of a copy of a pool, header and body. Opening or
// verify() may report an error, but nothing may crash, trip a sanitizer or hang; a damaged
// static header is always refused (its checksum).
#include <fcntl.h>
#include <unistd.h>

#include <random>

#include <gtest/gtest.h>

#include "common/test_util.h"
#include "crashtest/child.h"
#include "crashtest/workload.h"
#include "pmindex/index.h"

namespace pmindex::crashtest {
namespace {

using pmindex::testing::Scale;
using pmindex::testing::SeedTrace;
using pmindex::testing::TempDir;
using pmindex::testing::TestSeed;

std::vector<std::string> PersistentIndexes() {
  std::vector<std::string> out;
  for (const std::string& name : RegisteredIndexNames()) {
    const IndexRegistration* reg = FindIndex(name);
    if (reg->attach == nullptr || !reg->traits.persistent || name == "testlist-broken") continue;
    out.push_back(name);
  }
  return out;
}

Options Small() {
  Options o;
  o.pool_size = 8ull << 20;
  o.huge_pages = false;
  return o;
}

void FlipBytes(const std::string& path, uint64_t lo, uint64_t hi, int count, std::mt19937_64& rng) {
  int fd = ::open(path.c_str(), O_RDWR);
  ASSERT_GE(fd, 0);
  for (int i = 0; i < count; ++i) {
    const off_t off = static_cast<off_t>(lo + rng() % (hi - lo));
    unsigned char b = 0;
    ASSERT_EQ(::pread(fd, &b, 1, off), 1);
    b ^= static_cast<unsigned char>(1 + rng() % 255);
    ASSERT_EQ(::pwrite(fd, &b, 1, off), 1);
  }
  ::close(fd);
}

class CorruptionTest : public ::testing::TestWithParam<std::string> {};

TEST_P(CorruptionTest, NeverCrashes) {
  const uint64_t seed = TestSeed(21);
  SCOPED_TRACE(SeedTrace(seed));
  TempDir dir;
  const std::string pool = dir.file("orig.pool");
  uint64_t used = 0;
  {
    Result<std::unique_ptr<Index>> index = CreateIndex(GetParam(), pool, Small());
    ASSERT_TRUE(index.ok()) << index.status().ToString();
    OpGenerator gen(index.value()->traits(), seed, 200);
    Model model;
    for (int i = 0; i < 400; ++i) {
      Status s = RunOp(*index.value(), model, gen.next(), !index.value()->traits().byte_keys);
      ASSERT_TRUE(s.ok()) << s.ToString();
    }
  }
  Result<PoolInfo> info = Pool::ReadInfo(pool);
  ASSERT_TRUE(info.ok());
  used = info.value().used_bytes;
  std::mt19937_64 rng(seed);
  const int trials = static_cast<int>(Scale(40));
  int detected = 0;
  for (int t = 0; t < trials; ++t) {
    const std::string copy = dir.file("copy.pool");
    ASSERT_TRUE(CopyFile(pool, copy).ok());
    // Trials alternate: the checksummed static header, the dynamic header and root area,
    // and the body (chunk table and blocks).
    const int region = t % 3;
    const uint64_t lo = region == 0 ? 0 : region == 1 ? 256 : 4096;
    const uint64_t hi = region == 0 ? 252 : region == 1 ? 4096 : used;
    FlipBytes(copy, lo, hi, 1 + static_cast<int>(rng() % (region == 2 ? 256 : 8)), rng);
    SCOPED_TRACE("trial " + std::to_string(t) + " region " + std::to_string(region));
    bool refused = false;
    Status s = RunInChild(
        [&]() -> Status {
          Result<std::unique_ptr<Index>> index = OpenIndex(copy, Small());
          if (!index.ok()) return Status::Corruption("refused");  // reported, fine
          Index& idx = *index.value();
          if (Status v = idx.verify(); !v.ok()) return Status::Corruption("refused by verify");
          size_t n = 0;
          idx.scan(idx.traits().byte_keys ? std::string() : std::string(IntKey(0).view()), 100000,
                   [&](std::string_view k, std::string_view) {
                     std::string v;
                     (void)idx.lookup(k, &v).ok();
                     return ++n < 100000;
                   });
          return Status::OK();
        },
        30);
    if (!s.ok() && s.message().find("refused") != std::string::npos) refused = true;
    EXPECT_TRUE(s.ok() || refused) << GetParam() << ": " << s.ToString();
    if (region == 0) {
      EXPECT_TRUE(refused) << "a damaged static header was accepted";
    }
    detected += refused;
  }
  std::printf("%s: %d of %d corrupted copies refused by open or verify()\n", GetParam().c_str(),
              detected, trials);
}

INSTANTIATE_TEST_SUITE_P(Registry, CorruptionTest, ::testing::ValuesIn(PersistentIndexes()),
                         [](const auto& info) {
                           std::string n = info.param;
                           for (char& c : n)
                             if (!isalnum(static_cast<unsigned char>(c))) c = '_';
                           return n;
                         });

}  // namespace
}  // namespace pmindex::crashtest
