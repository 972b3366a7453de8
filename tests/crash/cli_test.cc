// `pmindex crashtest` end to end: a mutant is reported with a replay command, and that
// command alone reproduces the same failure; `pmindex check` on a healthy and a bad pool.
#include <cstdio>
#include <string>
#include <sys/wait.h>

#include <gtest/gtest.h>

#include "common/test_util.h"

#ifndef PMINDEX_BINARY
#error "PMINDEX_BINARY must be defined"
#endif

namespace {

// Runs a shell command; returns its exit status and stdout+stderr.
int Shell(const std::string& cmd, std::string* out) {
  FILE* p = ::popen((cmd + " 2>&1").c_str(), "r");
  if (p == nullptr) return -1;
  char buf[4096];
  out->clear();
  while (size_t n = std::fread(buf, 1, sizeof(buf), p)) out->append(buf, n);
  const int status = ::pclose(p);
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

std::string Field(const std::string& text, const std::string& key) {
  const size_t at = text.find(key);
  if (at == std::string::npos) return {};
  const size_t end = text.find('\n', at);
  return text.substr(at + key.size(), end - at - key.size());
}

TEST(CrashtestCliTest, MutantIsReportedAndReplaysFromThePrintedCommand) {
  const std::string bin = PMINDEX_BINARY;
  std::string out;
  const int rc = Shell(bin + " crashtest --index rntree --model adr --ops 60 --mutant "
                           "rntree.skip_kv_persist",
                     &out);
  if (!pmindex::pm::kMutantsCompiled) {  // a build without mutants must say so, not pass
    EXPECT_EQ(rc, 2) << out;
    EXPECT_NE(out.find("this build has no mutants"), std::string::npos) << out;
    return;
  }
  ASSERT_EQ(rc, 1) << out;
  const std::string replay = Field(out, "    replay: ");
  const std::string found = Field(out, "    found: ");
  ASSERT_FALSE(replay.empty()) << out;
  ASSERT_EQ(replay.rfind("pmindex crashtest ", 0), 0u) << replay;
  std::string again;
  ASSERT_EQ(Shell(bin + replay.substr(std::string("pmindex").size()), &again), 1) << again;
  EXPECT_EQ(Field(again, "    found: "), found) << again;
  EXPECT_NE(again.find(" 1 images"), std::string::npos) << again;
}

TEST(CrashtestCliTest, CorrectIndexPassesAndUsageErrorsExit2) {
  const std::string bin = PMINDEX_BINARY;
  std::string out;
  EXPECT_EQ(Shell(bin + " crashtest --index wort --model both --ops 40 --cycles 2", &out), 0) << out;
  EXPECT_NE(out.find("PASSED"), std::string::npos) << out;
  EXPECT_EQ(Shell(bin + " crashtest --index no-such-index", &out), 2) << out;
  EXPECT_EQ(Shell(bin + " crashtest --model sometimes", &out), 2) << out;
  EXPECT_EQ(Shell(bin + " check /nonexistent/pool", &out), 1) << out;
  EXPECT_NE(out.find("/nonexistent/pool"), std::string::npos) << out;
}

}  // namespace
