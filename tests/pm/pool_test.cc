// Pool creation, reopening and the bad inputs that must be refused without writing a byte.
#include "pmindex/pool.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>

#include <fstream>
#include <iterator>
#include <vector>

#include "common/test_kinds.h"
#include "common/test_util.h"
#include "pm/alloc.h"
#include "pm/crc32c.h"
#include "pm/pool_format.h"

namespace pmindex {
namespace {

using testing::TempDir;

Options SmallPool() {
  Options o;
  o.pool_size = 4 << 20;
  return o;
}

std::string ReadAll(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(f), {});
}

void WriteAll(const std::string& path, const std::string& bytes) {
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  f.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

std::string MakeClosedPool(const TempDir& dir, const std::string& name) {
  std::string path = dir.file(name);
  auto pool = Pool::Create(path, kTestListKind, "params", SmallPool());
  EXPECT_TRUE(pool.ok()) << pool.status().ToString();
  return path;
}

// The header and RNTree's slot lines depend on this being the standard CRC32C whatever the
// word steps the implementation takes.
TEST(Crc32c, MatchesTheStandardAndABytewiseReference) {
  EXPECT_EQ(pm::crc32c("123456789", 9), 0xE3069283u);
  const auto bytewise = [](const unsigned char* p, size_t n) {
    uint32_t c = ~0u;
    for (size_t i = 0; i < n; ++i) {
      c ^= p[i];
      for (int k = 0; k < 8; ++k) c = (c >> 1) ^ (0x82F63B78u & (0u - (c & 1)));
    }
    return ~c;
  };
  unsigned char buf[80];
  for (size_t i = 0; i < sizeof(buf); ++i) buf[i] = static_cast<unsigned char>(i * 37 + 11);
  for (size_t off = 0; off < 8; ++off) {
    for (size_t n = 0; n + off <= sizeof(buf); ++n) {
      ASSERT_EQ(pm::crc32c(buf + off, n), bytewise(buf + off, n)) << "off " << off << " n " << n;
    }
  }
}

// Pages not yet touched are not resident; with prefault every page of the mapping is.
TEST(Pool, PrefaultMakesEveryPageResident) {
  for (bool prefault : {false, true}) {
    TempDir dir;
    Options o = SmallPool();
    o.huge_pages = false;
    o.prefault = prefault;
    auto pool = Pool::Create(dir.file("p.pool"), kTestListKind, "", o);
    ASSERT_TRUE(pool.ok()) << pool.status().ToString();
    const size_t page = 4096, pages = (*pool)->size() / page;
    std::vector<unsigned char> vec(pages);
    ASSERT_EQ(mincore((*pool)->base(), (*pool)->size(), vec.data()), 0);
    size_t resident = 0;
    for (unsigned char v : vec) resident += v & 1;
    if (prefault) {
      EXPECT_EQ(resident, pages);
    } else {
      EXPECT_LT(resident, pages);  // the data chunks were never touched
    }
  }
}

TEST(Pool, CreateThenReopenBumpsGenerationAndKeepsRoot) {
  TempDir dir;
  std::string path = dir.file("p.pool");
  {
    auto pool = Pool::Create(path, kTestListKind, "abc", SmallPool());
    ASSERT_TRUE(pool.ok()) << pool.status().ToString();
    EXPECT_EQ((*pool)->generation(), 1u);
    EXPECT_EQ((*pool)->root(), 0u);
    EXPECT_FALSE((*pool)->was_dirty());
    (*pool)->set_root(4096 * 3);
    std::memcpy((*pool)->root_area(), "hello", 5);
    EXPECT_EQ((*pool)->index_params().substr(0, 3), "abc");
  }
  auto info = Pool::ReadInfo(path);
  ASSERT_TRUE(info.ok()) << info.status().ToString();
  EXPECT_TRUE(info->clean);
  EXPECT_EQ(info->generation, 1u);
  EXPECT_EQ(info->kind, kTestListKind);
  EXPECT_EQ(info->pool_size, 4u << 20);
  auto pool = Pool::Open(path, kTestListKind, SmallPool());
  ASSERT_TRUE(pool.ok()) << pool.status().ToString();
  EXPECT_EQ((*pool)->generation(), 2u);
  EXPECT_EQ((*pool)->root(), 4096u * 3);
  EXPECT_EQ(std::string((*pool)->root_area(), 5), "hello");
  EXPECT_FALSE((*pool)->was_dirty());
  auto busy_info = Pool::ReadInfo(path);
  ASSERT_TRUE(busy_info.ok());
  EXPECT_TRUE(busy_info->in_use);
  EXPECT_FALSE(busy_info->clean);
}

TEST(Pool, OpenAcceptsAnyKindWithNone) {
  TempDir dir;
  std::string path = MakeClosedPool(dir, "p.pool");
  auto pool = Pool::Open(path, IndexKind::kNone, SmallPool());
  ASSERT_TRUE(pool.ok());
  EXPECT_EQ((*pool)->kind(), kTestListKind);
}

TEST(Pool, CreateRefusesAnExistingFile) {
  TempDir dir;
  std::string path = MakeClosedPool(dir, "p.pool");
  std::string before = ReadAll(path);
  auto pool = Pool::Create(path, kTestListKind, "", SmallPool());
  ASSERT_FALSE(pool.ok());
  EXPECT_TRUE(pool.status().IsInvalidArgument()) << pool.status().ToString();
  EXPECT_EQ(ReadAll(path), before);
}

TEST(Pool, ReadOnlyOpenIsCopyOnWrite) {
  TempDir dir;
  std::string path = MakeClosedPool(dir, "p.pool");
  std::string before = ReadAll(path);
  Options o = SmallPool();
  o.read_only = true;
  {
    auto pool = Pool::Open(path, kTestListKind, o);
    ASSERT_TRUE(pool.ok()) << pool.status().ToString();
    (*pool)->set_root(12345);
    EXPECT_EQ((*pool)->root(), 12345u);
  }
  EXPECT_EQ(ReadAll(path), before);
}

// Each bad input: the Status code, a message naming the file, and the file left unchanged.
struct BadInput {
  const char* name;
  Status::Code code;
  const char* reason;  // a word the message must contain
};

class PoolBadInput : public ::testing::TestWithParam<BadInput> {};

void Damage(const std::string& name, const std::string& path) {
  if (name == "missing") return;
  if (name == "empty") {
    WriteAll(path, "");
    return;
  }
  if (name == "not_a_pool") {
    WriteAll(path, std::string(8192, 'x'));
    return;
  }
  std::string bytes = ReadAll(path);
  auto* h = reinterpret_cast<pm::PoolHeader*>(bytes.data());
  if (name == "truncated") {
    bytes.resize(bytes.size() / 2);
  } else if (name == "newer_version") {
    h->format_version = pm::kFormatVersion + 1;
    h->header_crc = pm::crc32c(h, pm::kHeaderCrcCovered);
  } else if (name == "bad_checksum") {
    h->pool_size ^= 1ull << 40;
  } else if (name == "other_kind") {
    h->kind = 20;  // an index kind other than the test kind the pool was made with
    h->header_crc = pm::crc32c(h, pm::kHeaderCrcCovered);
  }
  WriteAll(path, bytes);
}

TEST_P(PoolBadInput, IsRefusedWithoutWriting) {
  const BadInput& bad = GetParam();
  TempDir dir;
  std::string path = dir.file("bad.pool");
  if (std::string(bad.name) != "missing") MakeClosedPool(dir, "bad.pool");
  Damage(bad.name, path);
  std::string before = ReadAll(path);
  auto pool = Pool::Open(path, kTestListKind, SmallPool());
  ASSERT_FALSE(pool.ok());
  EXPECT_EQ(pool.status().code(), bad.code) << pool.status().ToString();
  EXPECT_NE(pool.status().message().find(path), std::string::npos) << pool.status().ToString();
  EXPECT_NE(pool.status().message().find(bad.reason), std::string::npos)
      << pool.status().ToString();
  EXPECT_EQ(ReadAll(path), before);
  if (std::string(bad.name) != "other_kind") {
    auto info = Pool::ReadInfo(path);
    ASSERT_FALSE(info.ok());
    EXPECT_EQ(info.status().code(), bad.code);
  }
}

INSTANTIATE_TEST_SUITE_P(
    All, PoolBadInput,
    ::testing::Values(BadInput{"missing", Status::Code::kNotFound, "no such file"},
                      BadInput{"empty", Status::Code::kInvalidArgument, "empty"},
                      BadInput{"not_a_pool", Status::Code::kInvalidArgument, "not a pmindex pool"},
                      BadInput{"truncated", Status::Code::kCorruption, "truncated"},
                      BadInput{"newer_version", Status::Code::kNotSupported, "newer"},
                      BadInput{"bad_checksum", Status::Code::kCorruption, "checksum"},
                      BadInput{"other_kind", Status::Code::kInvalidArgument, "wort"}),
    [](const auto& info) { return std::string(info.param.name); });

TEST(Pool, SecondOpenerInAnotherProcessIsBusy) {
  TempDir dir;
  std::string path = MakeClosedPool(dir, "p.pool");
  auto pool = Pool::Open(path, kTestListKind, SmallPool());
  ASSERT_TRUE(pool.ok());
  std::string before = ReadAll(path);
  pid_t pid = fork();
  if (pid == 0) {
    auto second = Pool::Open(path, kTestListKind, SmallPool());
    bool ok = !second.ok() && second.status().IsBusy() &&
              second.status().message().find(path) != std::string::npos;
    _exit(ok ? 0 : 1);
  }
  int status = 0;
  waitpid(pid, &status, 0);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  EXPECT_EQ(ReadAll(path), before);
}

TEST(Pool, DirtyAfterOpenWithoutClose) {
  TempDir dir;
  std::string path = MakeClosedPool(dir, "p.pool");
  {
    auto pool = Pool::Open(path, kTestListKind, SmallPool());
    ASSERT_TRUE(pool.ok());
    // Copy the bytes while open: what a crash would leave.
    WriteAll(dir.file("copy.pool"), ReadAll(path));
  }
  auto copy = Pool::Open(dir.file("copy.pool"), kTestListKind, SmallPool());
  ASSERT_TRUE(copy.ok()) << copy.status().ToString();
  EXPECT_TRUE((*copy)->was_dirty());
  EXPECT_EQ((*copy)->generation(), 3u);
}

// A FIFO (or any non-regular file) at the path is refused at once: open(2) of a FIFO for
// reading would wait for a writer forever.
TEST(Pool, FifoIsRefusedWithoutBlocking) {
  TempDir dir;
  const std::string path = dir.file("fifo");
  ASSERT_EQ(mkfifo(path.c_str(), 0644), 0);
  pid_t pid = fork();
  if (pid == 0) {
    alarm(10);  // a hang kills the child: the test fails instead of hanging
    Options ro = SmallPool();
    ro.read_only = true;
    bool ok = true;
    for (const Options& o : {ro, SmallPool()}) {
      auto pool = Pool::Open(path, IndexKind::kNone, o);
      ok = ok && !pool.ok() && pool.status().IsInvalidArgument() &&
           pool.status().message().find("not a regular file") != std::string::npos &&
           pool.status().message().find(path) != std::string::npos;
    }
    auto info = Pool::ReadInfo(path);
    ok = ok && !info.ok() && info.status().IsInvalidArgument();
    auto created = Pool::OpenOrCreate(path, kTestListKind, "", SmallPool());
    ok = ok && !created.ok();
    _exit(ok ? 0 : 1);
  }
  int status = 0;
  waitpid(pid, &status, 0);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0)
      << (WIFSIGNALED(status) ? "killed by signal " + std::to_string(WTERMSIG(status))
                              : "exit " + std::to_string(WEXITSTATUS(status)));
  struct stat st;
  ASSERT_EQ(::lstat(path.c_str(), &st), 0);
  EXPECT_TRUE(S_ISFIFO(st.st_mode));
}

// Copies `from` to `to` leaving every all-zero 4 KiB page a hole (cp --sparse=always).
void SparseCopy(const std::string& from, const std::string& to) {
  const std::string bytes = ReadAll(from);
  int fd = ::open(to.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  ASSERT_GE(fd, 0) << to << ": " << std::strerror(errno);
  const std::string zero(4096, '\0');
  for (size_t off = 0; off < bytes.size(); off += 4096) {
    if (bytes.compare(off, 4096, zero) == 0) continue;
    ASSERT_EQ(pwrite(fd, bytes.data() + off, 4096, static_cast<off_t>(off)), 4096);
  }
  ASSERT_EQ(ftruncate(fd, static_cast<off_t>(bytes.size())), 0);
  ::close(fd);
}

uint64_t AllocatedBytes(const std::string& path) {
  struct stat st;
  return ::stat(path.c_str(), &st) == 0 ? static_cast<uint64_t>(st.st_blocks) * 512 : 0;
}

// A writable open backs every byte of a sparse pool, so no later store can hit a hole.
TEST(Pool, WritableOpenAllocatesASparsePool) {
  TempDir dir;
  const std::string path = MakeClosedPool(dir, "p.pool");
  const std::string sparse = dir.file("sparse.pool");
  SparseCopy(path, sparse);
  ASSERT_LT(AllocatedBytes(sparse), 4u << 20);
  {
    Options ro = SmallPool();
    ro.read_only = true;
    ASSERT_TRUE(Pool::Open(sparse, kTestListKind, ro).ok());
    EXPECT_LT(AllocatedBytes(sparse), 4u << 20) << "a read-only open must not allocate";
  }
  auto pool = Pool::Open(sparse, kTestListKind, SmallPool());
  ASSERT_TRUE(pool.ok()) << pool.status().ToString();
  EXPECT_GE(AllocatedBytes(sparse), 4u << 20);
}

// The same on a file system that is full: refused with OutOfSpace naming the file, instead
// of a SIGBUS at the first store into a hole. Needs a tmpfs of our own (root).
TEST(Pool, SparsePoolOnAFullFileSystemIsRefused) {
  TempDir dir;
  const std::string mnt = dir.file("small-tmpfs");
  ASSERT_EQ(mkdir(mnt.c_str(), 0755), 0);
  if (mount("tmpfs", mnt.c_str(), "tmpfs", 0, "size=8m") != 0) {
    GTEST_SKIP() << "cannot mount a tmpfs here: " << std::strerror(errno);
  }
  struct Unmount {
    std::string dir;
    ~Unmount() { umount2(dir.c_str(), MNT_DETACH); }
  } unmount{mnt};
  const std::string path = MakeClosedPool(dir, "p.pool");
  const std::string sparse = mnt + "/sparse.pool";
  SparseCopy(path, sparse);
  // Fill the file system.
  int fd = ::open((mnt + "/filler").c_str(), O_WRONLY | O_CREAT, 0644);
  ASSERT_GE(fd, 0);
  const std::string chunk(65536, 'f');
  while (write(fd, chunk.data(), chunk.size()) > 0) {
  }
  ::close(fd);
  const size_t before = std::hash<std::string>()(ReadAll(sparse));
  pid_t pid = fork();
  if (pid == 0) {
    auto pool = Pool::Open(sparse, kTestListKind, SmallPool());
    if (pool.ok()) {  // the bug: touch every page, which dies of SIGBUS at the first hole
      for (uint64_t off = 8192; off < (*pool)->size(); off += 4096) (*pool)->base()[off] = 1;
      _exit(2);
    }
    const bool ok = pool.status().code() == Status::Code::kOutOfSpace &&
                    pool.status().message().find(sparse) != std::string::npos;
    _exit(ok ? 0 : 1);
  }
  int status = 0;
  waitpid(pid, &status, 0);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0)
      << (WIFSIGNALED(status) ? "killed by signal " + std::to_string(WTERMSIG(status))
                              : "exit " + std::to_string(WEXITSTATUS(status)));
  EXPECT_EQ(std::hash<std::string>()(ReadAll(sparse)), before) << "a refused open wrote the file";
}

}  // namespace
}  // namespace pmindex
