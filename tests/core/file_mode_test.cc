// Options::file_mode: a new pool file gets exactly the mode asked for (0600 by default),
// whatever the umask, and another user cannot open a default pool.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <string>

#include "common/test_util.h"
#include "pmindex/index.h"

namespace pmindex::testing {
namespace {

mode_t ModeOf(const std::string& path) {
  struct stat st;
  EXPECT_EQ(::stat(path.c_str(), &st), 0) << path;
  return st.st_mode & 07777;
}

Status CreatePool(const std::string& path, uint32_t mode, bool set_mode) {
  Options o;
  o.pool_size = 4ull << 20;
  if (set_mode) o.file_mode = mode;
  auto made = CreateIndex("fastfair", path, o);
  return made.ok() ? made.value()->close() : made.status();
}

TEST(FileModeTest, DefaultIsOwnerOnly) {
  TempDir dir;
  const mode_t old = ::umask(0);  // a permissive umask must not widen the default
  ASSERT_TRUE(CreatePool(dir.file("pool"), 0, false).ok());
  ::umask(old);
  EXPECT_EQ(ModeOf(dir.file("pool")), 0600u);
}

TEST(FileModeTest, ExactModeDespiteUmask) {
  TempDir dir;
  const mode_t old = ::umask(077);  // would narrow 0640 to 0600 if the mode went through open
  ASSERT_TRUE(CreatePool(dir.file("pool"), 0640, true).ok());
  ::umask(old);
  EXPECT_EQ(ModeOf(dir.file("pool")), 0640u);
}

TEST(FileModeTest, ModeBeyondPermissionBitsIsRefused) {
  TempDir dir;
  EXPECT_TRUE(CreatePool(dir.file("pool"), 0100644, true).IsInvalidArgument());
}

TEST(FileModeTest, AnotherUserCannotOpenADefaultPool) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root to become another user";
  TempDir dir;
  const std::string path = dir.file("pool");
  ASSERT_TRUE(CreatePool(path, 0, false).ok());
  // The directory must be searchable by the other user, so only the file's mode refuses it.
  ASSERT_EQ(::chmod(dir.path().c_str(), 0755), 0);
  const pid_t pid = ::fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    if (::setgid(65534) != 0 || ::setuid(65534) != 0) ::_exit(2);
    Options o;
    auto opened = OpenIndex(path, o);
    const bool refused = !opened.ok() && opened.status().ToString().find("ermission") !=
                                             std::string::npos;
    ::_exit(refused && ::access(path.c_str(), R_OK) != 0 && errno == EACCES ? 0 : 1);
  }
  int status = 0;
  ASSERT_EQ(::waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0) << "2: could not become nobody; 1: nobody opened the pool";
}

}  // namespace
}  // namespace pmindex::testing
