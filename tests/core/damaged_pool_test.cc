// What opening a damaged pool does: a refusal writes nothing, a lost root is Corruption (not
// an empty index), and no damage crashes the process (doc/format.md, "What to expect of a
// damaged pool").
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <fstream>
#include <functional>
#include <iterator>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "common/test_util.h"
#include "pm/crc32c.h"
#include "pm/pool_format.h"
#include "pmindex/index.h"

namespace pmindex {
namespace {

using testing::SeedTrace;
using testing::TempDir;
using testing::TestSeed;

Options Small() {
  Options o;
  o.pool_size = 8ull << 20;
  o.huge_pages = false;
  return o;
}

Options ReadOnly() {
  Options o = Small();
  o.read_only = true;
  return o;
}

std::string ReadAll(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(f), {});
}

size_t FileHash(const std::string& path) { return std::hash<std::string>()(ReadAll(path)); }

template <typename T>
T ReadAt(const std::string& path, uint64_t off) {
  T v{};
  int fd = ::open(path.c_str(), O_RDONLY);
  EXPECT_EQ(pread(fd, &v, sizeof(v), static_cast<off_t>(off)), static_cast<ssize_t>(sizeof(v)));
  ::close(fd);
  return v;
}

template <typename T>
void WriteAt(const std::string& path, uint64_t off, T v) {
  int fd = ::open(path.c_str(), O_RDWR);
  ASSERT_EQ(pwrite(fd, &v, sizeof(v), static_cast<off_t>(off)), static_cast<ssize_t>(sizeof(v)));
  ::close(fd);
}

std::vector<std::string> PoolIndexes() {
  std::vector<std::string> out;
  for (const std::string& name : RegisteredIndexNames()) {
    const IndexRegistration* reg = FindIndex(name);
    if (reg->attach != nullptr && reg->traits.persistent) out.push_back(name);
  }
  return out;
}

// Offset of `next` in each B+tree leaf layout (low_key follows it).
uint64_t LeafNextOffset(const std::string& name) {
  if (name == "nvtree") return 64;
  if (name == "fptree") return 72;
  return 0;
}

bool IsBTree(const std::string& name) {
  for (const char* b : {"nvtree", "wbtree", "wbtree-so", "fptree", "rntree", "rntree-ds"})
    if (name == b) return true;
  return false;
}

std::string Key(const Index& index, uint64_t k) {
  return index.traits().byte_keys ? "key-" + std::to_string(k * 7919)
                                  : std::string(IntKey(k).view());
}

// A closed pool of `name` holding keys 0..n-1.
std::string MakePool(const TempDir& dir, const std::string& name, int n) {
  const std::string path = dir.file(name + ".pool");
  Result<std::unique_ptr<Index>> index = CreateIndex(name, path, Small());
  EXPECT_TRUE(index.ok()) << index.status().ToString();
  if (!index.ok()) return path;
  for (int k = 0; k < n; ++k) {
    Status s = index.value()->insert(Key(*index.value(), k), IntValue(k));
    EXPECT_TRUE(s.ok()) << s.ToString();
  }
  return path;
}

// Runs `fn` in a child; a crash or hang there is this test's failure, named by `what`.
void NoCrash(const std::string& what, const std::function<void()>& fn) {
  pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    alarm(60);
    fn();
    _exit(0);
  }
  int status = 0;
  waitpid(pid, &status, 0);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0)
      << what << ": "
      << (WIFSIGNALED(status) ? "killed by signal " + std::to_string(WTERMSIG(status))
                              : "exit " + std::to_string(WEXITSTATUS(status)));
}

class PerIndex : public ::testing::TestWithParam<std::string> {};

// A writable open refused after the header checks leaves every byte of the file as it was.
TEST_P(PerIndex, RefusedOpenWritesNothing) {
  TempDir dir;
  const std::string path = MakePool(dir, GetParam(), 3000);
  // 1. An index kind this build does not know, with a valid header checksum.
  {
    const std::string copy = dir.file("unknown-kind.pool");
    ASSERT_EQ(::system(("cp " + path + " " + copy).c_str()), 0);
    std::string bytes = ReadAll(copy);
    auto* h = reinterpret_cast<pm::PoolHeader*>(bytes.data());
    h->kind = 999;
    h->header_crc = pm::crc32c(h, pm::kHeaderCrcCovered);
    std::ofstream(copy, std::ios::binary | std::ios::trunc).write(bytes.data(), bytes.size());
    const size_t before = FileHash(copy);
    Result<std::unique_ptr<Index>> r = OpenIndex(copy, Small());
    ASSERT_FALSE(r.ok());
    EXPECT_TRUE(r.status().IsNotSupported()) << r.status().ToString();
    EXPECT_EQ(FileHash(copy), before) << "unknown kind: the refused open wrote the file";
  }
  // 2. Corruption found by the allocator rebuild, after the index recovered: the chunk
  // holding the first block the index reaches is marked free in the chunk table (not simply
  // the first carved chunk: an index that replaces its first blocks, as a hash table's
  // resizes do, may have left nothing reachable there).
  {
    const std::string copy = dir.file("chunk-table.pool");
    ASSERT_EQ(::system(("cp " + path + " " + copy).c_str()), 0);
    const auto h = ReadAt<pm::PoolHeader>(copy, 0);
    struct FirstBlock : BlockVisitor {
      uint64_t offset = 0;
      Status visit(uint64_t o) override {
        if (offset == 0) offset = o;
        return Status::OK();
      }
    } first;
    {
      Result<std::unique_ptr<Index>> r = OpenIndex(copy, ReadOnly());
      ASSERT_TRUE(r.ok()) << r.status().ToString();
      ASSERT_TRUE(r.value()->visit_blocks(first).ok());
    }
    ASSERT_GE(first.offset, h.data_offset);
    const uint64_t carved = (first.offset - h.data_offset) / h.chunk_size + 1;
    WriteAt<uint64_t>(copy, h.chunk_table_offset + 8 * (carved - 1), 0);
    const size_t before = FileHash(copy);
    Result<std::unique_ptr<Index>> r = OpenIndex(copy, Small());
    ASSERT_FALSE(r.ok()) << "a reachable block in a free chunk was accepted";
    EXPECT_TRUE(r.status().IsCorruption()) << r.status().ToString();
    EXPECT_EQ(FileHash(copy), before) << "allocator rebuild: the refused open wrote the file";
  }
  // 3. B+trees: Corruption found by recovery in the second leaf, after it repaired the first.
  if (IsBTree(GetParam())) {
    const std::string copy = dir.file("leaf.pool");
    ASSERT_EQ(::system(("cp " + path + " " + copy).c_str()), 0);
    const uint64_t head = ReadAt<uint64_t>(copy, 1024 + 16);
    const uint64_t next = LeafNextOffset(GetParam());
    const uint64_t second = ReadAt<uint64_t>(copy, head + next);
    ASSERT_NE(second, 0u);
    WriteAt<uint64_t>(copy, second + next + 8, 0);  // low key out of order
    const size_t before = FileHash(copy);
    Result<std::unique_ptr<Index>> r = OpenIndex(copy, Small());
    ASSERT_FALSE(r.ok());
    EXPECT_TRUE(r.status().IsCorruption()) << r.status().ToString();
    EXPECT_EQ(FileHash(copy), before) << "recovery: the refused open wrote the file";
  }
  // And the undamaged pool still opens and keeps its keys.
  Result<std::unique_ptr<Index>> r = OpenIndex(path, Small());
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  std::string v;
  EXPECT_TRUE(r.value()->lookup(Key(*r.value(), 2999), &v).ok());
}

// Zeroing the first word of the root area (the B+trees' magic, WORT/WOART's root word) of a
// pool with data is Corruption, for read-only and writable opens, and nothing is written.
TEST_P(PerIndex, ZeroedRootWordIsCorruptionNotAnEmptyIndex) {
  TempDir dir;
  const std::string path = MakePool(dir, GetParam(), 300);
  // The hash indexes keep a magic word first in the root area, as the B+trees do.
  const std::set<std::string> magic_first = {"wort", "woart", "fastfair", "cceh",
                                             "levelhash", "pclht", "dash", "fptree-var"};
  const bool root_area_user = IsBTree(GetParam()) || magic_first.count(GetParam()) != 0;
  if (!root_area_user) {
    // PFtree keeps its root in the header's root field.
    if (GetParam() != "pftree") GTEST_SKIP() << "no root word in the root area";
    WriteAt<uint64_t>(path, 272, 0);
  } else {
    WriteAt<uint64_t>(path, 1024, 0);
  }
  const size_t before = FileHash(path);
  for (const Options& o : {ReadOnly(), Small()}) {
    Result<std::unique_ptr<Index>> r = OpenIndex(path, o);
    ASSERT_FALSE(r.ok()) << (o.read_only ? "read-only" : "writable")
                         << " open of a pool whose root is lost succeeded";
    EXPECT_TRUE(r.status().IsCorruption()) << r.status().ToString();
    EXPECT_NE(r.status().message().find(path), std::string::npos) << r.status().ToString();
  }
  EXPECT_EQ(FileHash(path), before);
}

// An index emptied by removals is still an empty index after reopening, not Corruption.
TEST_P(PerIndex, EmptiedIndexReopensEmpty) {
  TempDir dir;
  const std::string path = MakePool(dir, GetParam(), 50);
  for (int round = 0; round < 2; ++round) {
    Result<std::unique_ptr<Index>> r = OpenIndex(path, Small());
    ASSERT_TRUE(r.ok()) << "round " << round << ": " << r.status().ToString();
    for (int k = 0; k < 50; ++k) (void)r.value()->remove(Key(*r.value(), k));
    EXPECT_EQ(r.value()->stats().keys, 0u);
  }
  Result<std::unique_ptr<Index>> r = OpenIndex(path, Small());
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  ASSERT_TRUE(r.value()->insert(Key(*r.value(), 1), IntValue(1)).ok());
}

// stats() and verify() of a new, never written index.
TEST_P(PerIndex, StatsOfANewIndex) {
  TempDir dir;
  const std::string path = dir.file("new.pool");
  NoCrash(GetParam() + " stats() of a new index", [&] {
    Result<std::unique_ptr<Index>> r = CreateIndex(GetParam(), path, Small());
    if (!r.ok()) _exit(3);
    IndexStats st = r.value()->stats();
    if (st.keys != 0 || !r.value()->verify().ok()) _exit(4);
  });
  NoCrash(GetParam() + " stats() of a new index, reopened read-only", [&] {
    Result<std::unique_ptr<Index>> r = OpenIndex(path, ReadOnly());
    if (!r.ok()) _exit(3);
    if (r.value()->stats().keys != 0) _exit(4);
  });
}

INSTANTIATE_TEST_SUITE_P(Registry, PerIndex, ::testing::ValuesIn(PoolIndexes()),
                         pmindex::testing::IndexParamName);

// PFtree: a recovery that stops at Corruption must not walk the damaged tree to free its
// DRAM metadata. The image is taken while the index is open (what a crash leaves: leaf arrays
// hold DRAM pointers of that process); in it every leaf array claims current metadata
// (aux_gen = the generation the next open gets: for an even generation one flipped bit) and
// all but one have a malformed first entry, so recovery stops with leaves not yet rebuilt.
TEST(PFTreeDamage, FailedRecoveryFreesOnlyWhatItBuilt) {
  TempDir dir;
  const std::string path = dir.file("pftree.pool");
  std::string bytes;
  {
    Result<std::unique_ptr<Index>> index = CreateIndex("pftree", path, Small());
    ASSERT_TRUE(index.ok()) << index.status().ToString();
    for (int k = 0; k < 2000; ++k) {
      ASSERT_TRUE(index.value()->insert(Key(*index.value(), k), IntValue(k)).ok());
    }
    bytes = ReadAll(path);
  }
  const auto* h = reinterpret_cast<const pm::PoolHeader*>(bytes.data());
  const uint32_t gen = static_cast<uint32_t>(h->generation);
  int leaves = 0;
  for (uint64_t off = h->data_offset; off + 64 <= bytes.size(); off += 64) {
    char* p = bytes.data() + off;
    uint32_t aux_gen;
    std::memcpy(&aux_gen, p + 24, 4);
    if (p[8] != 5 || aux_gen != gen) continue;  // not a leaf array with metadata
    const uint32_t next_gen = gen + 1;
    std::memcpy(p + 24, &next_gen, 4);
    if (leaves++ > 0) {
      uint16_t bad = 0x8000;  // valid, key length 0: malformed
      std::memcpy(p + 64, &bad, 2);
    }
  }
  ASSERT_GE(leaves, 3);
  const std::string image = dir.file("image.pool");
  std::ofstream(image, std::ios::binary | std::ios::trunc).write(bytes.data(), bytes.size());
  for (const Options& o : {ReadOnly(), Small()}) {
    NoCrash(std::string("open ") + (o.read_only ? "read-only" : "writable"), [&] {
      Result<std::unique_ptr<Index>> r = OpenIndex(image, o);
      if (r.ok() || !r.status().IsCorruption()) _exit(5);  // must be refused
    });
  }
}

// A header root offset at or past the end of the pool (or inside it but too close to the end
// for a node) is Corruption, not a SIGSEGV.
TEST(PFTreeDamage, RootOffsetOutsideThePoolIsCorruption) {
  TempDir dir;
  const std::string path = MakePool(dir, "pftree", 100);
  const uint64_t size = ReadAt<pm::PoolHeader>(path, 0).pool_size;
  for (uint64_t root : {size, size + 4096, size - 64, uint64_t{1} << 60}) {
    const std::string copy = dir.file("copy.pool");
    ASSERT_EQ(::system(("cp " + path + " " + copy).c_str()), 0);
    WriteAt<uint64_t>(copy, 272, root);
    for (const Options& o : {ReadOnly(), Small()}) {
      NoCrash("root " + std::to_string(root), [&] {
        Result<std::unique_ptr<Index>> r = OpenIndex(copy, o);
        if (r.ok() || !r.status().IsCorruption()) _exit(5);
      });
    }
  }
}

// Random single-bit flips in a PFtree pool's blocks: opening may refuse, never crash.
TEST(PFTreeDamage, SingleBitFlipsNeverCrash) {
  const uint64_t seed = TestSeed(77);
  SCOPED_TRACE(SeedTrace(seed));
  TempDir dir;
  const std::string path = MakePool(dir, "pftree", 1500);
  Result<PoolInfo> info = Pool::ReadInfo(path);
  ASSERT_TRUE(info.ok());
  const std::string original = ReadAll(path);
  std::mt19937_64 rng(seed);
  const int trials = static_cast<int>(testing::Scale(40));
  for (int t = 0; t < trials && !HasFailure(); ++t) {
    std::string bytes = original;
    const uint64_t h_data = reinterpret_cast<const pm::PoolHeader*>(bytes.data())->data_offset;
    const uint64_t off = h_data + rng() % (info->used_bytes - h_data);
    bytes[off] ^= static_cast<char>(1u << (rng() % 8));
    const std::string copy = dir.file("flip.pool");
    std::ofstream(copy, std::ios::binary | std::ios::trunc).write(bytes.data(), bytes.size());
    NoCrash("trial " + std::to_string(t) + " flip at " + std::to_string(off), [&] {
      Result<std::unique_ptr<Index>> r = OpenIndex(copy, Small());
      if (r.ok()) (void)r.value()->verify();
    });
  }
}

// What the trial open costs: writable OpenIndex with and without it, on pools of 1M keys.
// Run with --gtest_also_run_disabled_tests (figures in doc/format.md).
TEST(TrialOpen, DISABLED_Cost) {
  TempDir dir;
  for (const char* name : {"rntree", "fptree", "wort", "pftree"}) {
    const std::string path = dir.file(std::string(name) + ".pool");
    Options o = Small();
    o.pool_size = 1ull << 30;
    {
      Result<std::unique_ptr<Index>> index = CreateIndex(name, path, o);
      ASSERT_TRUE(index.ok()) << index.status().ToString();
      for (uint64_t k = 0; k < 1000000; ++k) {
        ASSERT_TRUE(index.value()->insert(Key(*index.value(), k * 2654435761u % 1000003), IntValue(k)).ok());
      }
    }
    for (bool trial : {false, true, false, true}) {
      o.trial_open = trial;
      const auto t0 = std::chrono::steady_clock::now();
      Result<std::unique_ptr<Index>> r = OpenIndex(path, o);
      const double ms =
          std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
      ASSERT_TRUE(r.ok()) << r.status().ToString();
      std::printf("%-8s trial_open=%d: open %.1f ms\n", name, trial, ms);
    }
    ::unlink(path.c_str());
  }
}

}  // namespace
}  // namespace pmindex
