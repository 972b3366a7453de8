// Bad input: random bit flips in a copy of a pool -- the static header, the dynamic header
// and root area, the chunk table, and the blocks of carved chunks (the index's nodes). For
// every persistent index, opening, verify(), a full scan and lookups of every key must either
// report an error or work: nothing may crash, trip a sanitizer or hang (each case runs in a
// child process with a deadline), a damaged static header is always refused (its checksum),
// and a damaged pool that held keys never opens as an empty index. A failure prints the seed,
// the case and the flipped offsets, so `PMINDEX_SEED=<seed>` replays it
// (PMINDEX_CORRUPTION_CASE=<case> runs only that case, in-process, for a debugger).
#include <fcntl.h>
#include <unistd.h>

#include <cstdlib>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "common/test_util.h"
#include "crashtest/child.h"
#include "crashtest/workload.h"
#include "pm/alloc.h"
#include "pm/pool_format.h"
#include "pmindex/index.h"

namespace pmindex::crashtest {
namespace {

using pmindex::testing::Sanitized;
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

enum Region { kStaticHeader, kRootArea, kChunkTable, kNodes, kRegions };
const char* RegionName(int r) {
  switch (r) {
    case kStaticHeader: return "static header";
    case kRootArea: return "dynamic header / root area";
    case kChunkTable: return "chunk table";
    case kNodes: return "carved chunks";
  }
  return "?";
}

// Where the regions lie in a pool file, read from its header and chunk table.
struct Layout {
  uint64_t table_offset = 0;
  uint64_t chunk_count = 0;
  uint64_t data_offset = 0;
  std::vector<uint64_t> carved;  // chunk indexes
};

Layout ReadLayout(const std::string& path) {
  Layout l;
  int fd = ::open(path.c_str(), O_RDONLY);
  if (fd < 0) return l;
  pm::PoolHeader h;
  if (::pread(fd, &h, sizeof(h), 0) == static_cast<ssize_t>(sizeof(h))) {
    l.table_offset = h.chunk_table_offset;
    l.chunk_count = h.chunk_count;
    l.data_offset = h.data_offset;
    std::vector<uint64_t> table(h.chunk_count);
    if (::pread(fd, table.data(), table.size() * 8, static_cast<off_t>(h.chunk_table_offset)) ==
        static_cast<ssize_t>(table.size() * 8)) {
      for (uint64_t i = 0; i < table.size(); ++i) {
        if (pm::EntryState(table[i]) != pm::ChunkState::kFree) l.carved.push_back(i);
      }
    }
  }
  ::close(fd);
  return l;
}

// Flips one random bit at each of `count` offsets drawn by `pick`; returns "off^mask ...".
std::string FlipBits(const std::string& path, int count, std::mt19937_64& rng,
                     const std::function<uint64_t()>& pick) {
  std::string what;
  int fd = ::open(path.c_str(), O_RDWR);
  if (fd < 0) return "open failed";
  for (int i = 0; i < count; ++i) {
    const uint64_t off = pick();
    unsigned char b = 0;
    if (::pread(fd, &b, 1, static_cast<off_t>(off)) != 1) continue;
    const unsigned char mask = static_cast<unsigned char>(1u << (rng() % 8));
    b ^= mask;
    if (::pwrite(fd, &b, 1, static_cast<off_t>(off)) != 1) continue;
    char buf[48];
    std::snprintf(buf, sizeof(buf), "%s0x%llx^0x%02x", what.empty() ? "" : " ",
                  static_cast<unsigned long long>(off), mask);
    what += buf;
  }
  ::close(fd);
  return what;
}

// Opens the damaged copy and reads everything. Corruption reported anywhere is a pass
// ("refused"); an index that opens and verifies must also scan and look up without harm,
// and must not be empty when the original held keys.
Status ProbeDamagedPool(const std::string& path, const Model& original, bool int_keys) {
  Result<std::unique_ptr<Index>> index = OpenIndex(path, Small());
  if (!index.ok()) return Status::Corruption("refused by open: " + index.status().ToString());
  Index& idx = *index.value();
  if (Status v = idx.verify(); !v.ok()) return Status::Corruption("refused by verify: " + v.ToString());
  size_t scanned = 0;
  if (idx.traits().ordered) {
    idx.scan(idx.traits().byte_keys ? std::string() : std::string(IntKey(0).view()), 1000000,
             [&](std::string_view k, std::string_view) {
               std::string v;
               (void)idx.lookup(k, &v);
               return ++scanned < 1000000;
             });
  }
  size_t found = 0;
  for (const auto& [k, v] : original) {
    std::string got;
    found += idx.lookup(k, &got).ok();
  }
  // Probes beyond the model's keys reach other parts of the tree.
  for (uint64_t i = 0; i < 64; ++i) {
    std::string got;
    (void)idx.lookup(IntKey(Mix64(i)).view(), &got);
  }
  if (!original.empty() && scanned == 0 && found == 0) {
    return Status::InvalidArgument("a damaged pool of " + std::to_string(original.size()) +
                                   " keys opened as an empty index");
  }
  (void)int_keys;
  return Status::OK();
}

class CorruptionTest : public ::testing::TestWithParam<std::string> {};

TEST_P(CorruptionTest, NeverCrashesHangsOrLooksEmpty) {
  const uint64_t seed = TestSeed(21);
  SCOPED_TRACE(SeedTrace(seed));
  TempDir dir;
  const std::string pool = dir.file("orig.pool");
  Model model;
  bool int_keys = true;
  {
    Result<std::unique_ptr<Index>> index = CreateIndex(GetParam(), pool, Small());
    ASSERT_TRUE(index.ok()) << index.status().ToString();
    int_keys = !index.value()->traits().byte_keys;
    OpGenerator gen(index.value()->traits(), seed, 3000);
    for (int i = 0; i < 6000; ++i) {
      Status s = RunOp(*index.value(), model, gen.next(), int_keys);
      ASSERT_TRUE(s.ok()) << s.ToString();
    }
  }
  const Layout layout = ReadLayout(pool);
  ASSERT_GT(layout.chunk_count, 0u);
  ASSERT_FALSE(layout.carved.empty());
  std::mt19937_64 rng(seed);
  // Sanitized builds run 5-20x slower: fewer cases keep the test within about 2 minutes.
  const int per_region = Sanitized() ? 15 : 40;
  const double deadline_s = Sanitized() ? 60 : 20;
  int refused[kRegions] = {};
  for (int t = 0; t < per_region * kRegions; ++t) {
    const int region = t % kRegions;
    const std::string copy = dir.file("copy.pool");
    ASSERT_TRUE(CopyFile(pool, copy).ok());
    std::function<uint64_t()> pick;
    int flips = 1 + static_cast<int>(rng() % 4);
    switch (region) {
      case kStaticHeader:
        pick = [&] { return rng() % pm::kHeaderCrcCovered; };
        break;
      case kRootArea:  // generation, clean, root and the index's root area
        pick = [&] {
          return rng() % 2 ? offsetof(pm::PoolHeader, generation) + rng() % 24
                           : offsetof(pm::PoolHeader, root_area) + rng() % 64;
        };
        break;
      case kChunkTable:
        pick = [&] { return layout.table_offset + rng() % (layout.chunk_count * 8); };
        break;
      case kNodes:
        flips = 1 + static_cast<int>(rng() % 32);
        pick = [&] {
          const uint64_t c = layout.carved[rng() % layout.carved.size()];
          return layout.data_offset + c * pm::kChunkSize + rng() % pm::kChunkSize;
        };
        break;
    }
    const std::string flipped = FlipBits(copy, flips, rng, pick);
    SCOPED_TRACE("case " + std::to_string(t) + " (" + RegionName(region) + "), flipped " +
                 flipped);
    // PMINDEX_CORRUPTION_CASE=<case> replays one case in this process (for a debugger).
    if (const char* only = std::getenv("PMINDEX_CORRUPTION_CASE")) {
      if (std::to_string(t) != only) continue;
      std::printf("%s\n", ProbeDamagedPool(copy, model, int_keys).ToString().c_str());
      continue;
    }
    Status s = RunInChild([&] { return ProbeDamagedPool(copy, model, int_keys); }, deadline_s);
    const bool was_refused = !s.ok() && s.message().find("refused by") != std::string::npos;
    EXPECT_TRUE(s.ok() || was_refused) << GetParam() << ": " << s.ToString();
    if (region == kStaticHeader) {
      EXPECT_TRUE(was_refused) << "a damaged static header was accepted";
    }
    refused[region] += was_refused;
  }
  std::printf("%s: refused (of %d each): static header %d, root area %d, chunk table %d, "
              "nodes %d\n",
              GetParam().c_str(), per_region, refused[0], refused[1], refused[2], refused[3]);
}

INSTANTIATE_TEST_SUITE_P(Registry, CorruptionTest, ::testing::ValuesIn(PersistentIndexes()),
                         pmindex::testing::IndexParamName);

}  // namespace
}  // namespace pmindex::crashtest
