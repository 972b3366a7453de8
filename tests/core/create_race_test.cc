// Pool creation seen from other processes: racing creators never destroy each other's pool,
// and a creator killed at any point leaves either no file or a complete pool at the path.
#include <dirent.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <set>
#include <string>
#include <vector>

#include "common/test_kinds.h"
#include "common/test_util.h"
#include "pm/persist.h"
#include "pmindex/index.h"

namespace pmindex {
namespace {

using testing::TempDir;

Options SmallPool() {
  Options o;
  o.pool_size = 4 << 20;
  o.huge_pages = false;
  return o;
}

std::vector<std::string> DirEntries(const std::string& dir) {
  std::vector<std::string> out;
  DIR* d = opendir(dir.c_str());
  while (dirent* e = d ? readdir(d) : nullptr) {
    if (std::string(e->d_name) != "." && std::string(e->d_name) != "..") out.push_back(e->d_name);
  }
  if (d) closedir(d);
  return out;
}

// A pool-backed index whose fresh initialisation tells the test (byte on `init_pipe_fd`) and
// then waits to be killed, so a creator can be killed in the middle of CreateIndex.
int init_pipe_fd = -1;

class StuckInit : public Index {
 public:
  explicit StuckInit(std::unique_ptr<Pool> pool) : pool_(std::move(pool)) {
    traits_.name = "test-stuck-init";
    traits_.kind = kTestRegistryKind;
  }
  const IndexTraits& traits() const override { return traits_; }
  Status insert(std::string_view, std::string_view) override { return Status::NotSupported(); }
  Status update(std::string_view, std::string_view) override { return Status::NotSupported(); }
  Status upsert(std::string_view, std::string_view) override { return Status::NotSupported(); }
  Status remove(std::string_view) override { return Status::NotSupported(); }
  Status lookup(std::string_view, std::string*) override { return Status::NotFound(); }
  size_t scan(std::string_view, size_t, ScanCallback) override { return 0; }
  Status verify() override { return Status::OK(); }
  IndexStats stats() override { return {}; }
  Pool* pool() override { return pool_.get(); }

 private:
  IndexTraits traits_;
  std::unique_ptr<Pool> pool_;
};

IndexRegistration StuckRegistration() {
  IndexRegistration r;
  r.traits.name = "test-stuck-init";
  r.traits.kind = kTestRegistryKind;
  r.attach = [](std::unique_ptr<Pool> pool, bool fresh) -> Result<std::unique_ptr<Index>> {
    if (fresh) {
      std::memcpy(pool->root_area(), "half", 4);
      pool->persist_context().persist(pool->root_area(), 4);
      if (init_pipe_fd >= 0) {
        (void)!write(init_pipe_fd, "x", 1);
        for (;;) pause();
      }
    }
    return std::unique_ptr<Index>(std::make_unique<StuckInit>(std::move(pool)));
  };
  return r;
}
PMINDEX_REGISTER_INDEX(StuckRegistration());

// One round: three processes call OpenOrCreateIndex on the same new path at once; each that
// gets the index inserts its own keys and reports how many were acknowledged. Every
// acknowledged key must be in the final pool.
void RaceRound(const std::string& path, int round) {
  constexpr int kProcs = 3, kKeys = 40;
  int go[2], done[2];
  ASSERT_EQ(pipe(go), 0);
  ASSERT_EQ(pipe(done), 0);
  std::vector<pid_t> pids;
  for (int p = 0; p < kProcs; ++p) {
    pid_t pid = fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      close(go[1]);
      close(done[0]);
      char c;
      (void)!read(go[0], &c, 1);  // all start together when the parent closes the pipe
      Result<std::unique_ptr<Index>> index = OpenOrCreateIndex("rntree", path, SmallPool());
      int acked = 0;
      int code = 0;
      if (index.ok()) {
        for (int i = 0; i < kKeys; ++i) {
          if (!index.value()->insert(IntKey(p * 1000 + i), IntValue(round)).ok()) break;
          ++acked;
        }
        code = index.value()->close().ok() ? 0 : 3;
      } else if (!index.status().IsBusy()) {
        std::fprintf(stderr, "creator %d: %s\n", p, index.status().ToString().c_str());
        code = 1;
      }
      int msg[2] = {p, acked};
      (void)!write(done[1], msg, sizeof(msg));
      _exit(code);
    }
    pids.push_back(pid);
  }
  close(go[0]);
  close(done[1]);
  close(go[1]);
  std::vector<int> acked(kProcs, 0);
  int msg[2];
  while (read(done[0], msg, sizeof(msg)) == static_cast<ssize_t>(sizeof(msg))) acked[msg[0]] = msg[1];
  close(done[0]);
  for (pid_t pid : pids) {
    int status = 0;
    waitpid(pid, &status, 0);
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "round " << round;
  }
  int opened = 0;
  for (int a : acked) opened += a > 0;
  EXPECT_GE(opened, 1) << "round " << round << ": nobody got the index";
  Result<std::unique_ptr<Index>> final_index = OpenIndex(path, SmallPool(), "rntree");
  ASSERT_TRUE(final_index.ok()) << "round " << round << ": " << final_index.status().ToString();
  for (int p = 0; p < kProcs; ++p) {
    for (int i = 0; i < acked[p]; ++i) {
      std::string v;
      ASSERT_TRUE(final_index.value()->lookup(IntKey(p * 1000 + i), &v).ok())
          << "round " << round << ": process " << p << " lost acknowledged key " << i << " of "
          << acked[p];
    }
  }
}

TEST(CreateRace, RacingOpenOrCreateNeverLosesAcknowledgedInserts) {
  int rounds = 100;
  if (const char* r = std::getenv("PMINDEX_CREATE_RACE_ROUNDS")) rounds = std::atoi(r);
  TempDir dir;
  for (int round = 0; round < rounds && !HasFailure(); ++round) {
    const std::string path = dir.file("race" + std::to_string(round) + ".pool");
    RaceRound(path, round);
    ::unlink(path.c_str());
  }
  EXPECT_TRUE(DirEntries(dir.path()).empty()) << "temporary files left behind";
}

// Kills a creator inside the index initialisation; returns the child's pid (reaped).
void KillCreatorDuringInit(const std::string& path) {
  int fds[2];
  ASSERT_EQ(pipe(fds), 0);
  pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    close(fds[0]);
    init_pipe_fd = fds[1];
    (void)CreateIndex("test-stuck-init", path, SmallPool());
    _exit(1);
  }
  close(fds[1]);
  char c;
  ASSERT_EQ(read(fds[0], &c, 1), 1);
  close(fds[0]);
  kill(pid, SIGKILL);
  int status = 0;
  waitpid(pid, &status, 0);
}

TEST(CreateRace, CreatorKilledDuringInitLeavesNoPoolAtThePath) {
  TempDir dir;
  const std::string path = dir.file("p.pool");
  KillCreatorDuringInit(path);
  struct stat st;
  EXPECT_NE(::lstat(path.c_str(), &st), 0) << "a half-created pool is visible at the path";
  // The next creator succeeds and initialises the index afresh.
  {
    Result<std::unique_ptr<Index>> index = OpenOrCreateIndex("rntree", path, SmallPool());
    ASSERT_TRUE(index.ok()) << index.status().ToString();
    ASSERT_TRUE(index.value()->insert(IntKey(1), IntValue(1)).ok());
  }
  ASSERT_TRUE(OpenIndex(path, SmallPool(), "rntree").ok());
}

TEST(CreateRace, StaleTemporaryFilesOfDeadCreatorsAreRemoved) {
  TempDir dir;
  const std::string path = dir.file("p.pool");
  KillCreatorDuringInit(path);
  std::vector<std::string> left = DirEntries(dir.path());
  ASSERT_EQ(left.size(), 1u);
  EXPECT_EQ(left[0].rfind(".p.pool.creating.", 0), 0u) << left[0];
  // A fresh temporary file may belong to a creator between its open and its lock: kept.
  ASSERT_TRUE(CreateIndex("rntree", path, SmallPool()).ok());
  EXPECT_EQ(DirEntries(dir.path()).size(), 2u);
  ASSERT_EQ(::unlink(path.c_str()), 0);
  // An old one whose creator is gone (no lock) is removed by the next creation.
  struct timespec old[2] = {{std::time(nullptr) - 3600, 0}, {std::time(nullptr) - 3600, 0}};
  ASSERT_EQ(utimensat(AT_FDCWD, dir.file(left[0]).c_str(), old, 0), 0);
  ASSERT_TRUE(CreateIndex("rntree", path, SmallPool()).ok());
  EXPECT_EQ(DirEntries(dir.path()), std::vector<std::string>{"p.pool"});
}

TEST(CreateRace, CreateNeverReplacesAnExistingPool) {
  TempDir dir;
  const std::string path = dir.file("p.pool");
  {
    Result<std::unique_ptr<Index>> index = CreateIndex("rntree", path, SmallPool());
    ASSERT_TRUE(index.ok()) << index.status().ToString();
    ASSERT_TRUE(index.value()->insert(IntKey(7), IntValue(7)).ok());
  }
  Result<std::unique_ptr<Index>> again = CreateIndex("rntree", path, SmallPool());
  ASSERT_FALSE(again.ok());
  EXPECT_TRUE(again.status().IsInvalidArgument()) << again.status().ToString();
  Result<std::unique_ptr<Index>> index = OpenIndex(path, SmallPool(), "rntree");
  ASSERT_TRUE(index.ok());
  std::string v;
  EXPECT_TRUE(index.value()->lookup(IntKey(7), &v).ok());
  EXPECT_EQ(DirEntries(dir.path()), std::vector<std::string>{"p.pool"});
}

TEST(CreateRace, AnEmptyFileAtThePathIsReplacedByTheNewPool) {
  TempDir dir;
  const std::string path = dir.file("p.pool");
  ::close(::open(path.c_str(), O_CREAT | O_WRONLY, 0644));
  Result<std::unique_ptr<Index>> index = CreateIndex("rntree", path, SmallPool());
  ASSERT_TRUE(index.ok()) << index.status().ToString();
  EXPECT_EQ(index.value()->pool()->path(), path);
  ASSERT_TRUE(index.value()->insert(IntKey(7), IntValue(7)).ok());
  index.value().reset();
  ASSERT_TRUE(OpenIndex(path, SmallPool(), "rntree").ok());
}

}  // namespace
}  // namespace pmindex
