// Bare `pmindex` runs every registered index and baseline on load, a, c and e, and must
// finish in under two minutes on a 2-core machine. Labelled long, and RUN_SERIAL: ctest runs
// it alone, not beside the long crash campaigns that would take its cores.
#include <gtest/gtest.h>

#include "common/test_util.h"
#include "tools/run_command.h"

namespace pmindex::testing {
namespace {

TEST(DefaultRunTest, BarePmindexFinishesInTwoMinutesWithEveryIndex) {
  TempDir scratch;
  const CommandResult list = RunCommand({PMINDEX_BIN, "list", "--names"}, scratch.path());
  ASSERT_EQ(list.exit_code, 0) << list.err;
  const CommandResult r = RunCommand({PMINDEX_BIN}, scratch.path());
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_LT(r.seconds, 120.0);
  std::printf("bare pmindex took %.1f s\n%s", r.seconds, r.out.c_str());
  for (const char* table : {"workload load:", "workload a:", "workload c:", "workload e:"}) {
    EXPECT_NE(r.out.find(table), std::string::npos) << table;
  }
  EXPECT_NE(r.out.find("cpu:"), std::string::npos);
  std::istringstream names(list.out);
  for (std::string name; std::getline(names, name);) {
    EXPECT_NE(r.out.find("\n  " + name + " "), std::string::npos) << name << " missing";
  }
}

}  // namespace
}  // namespace pmindex::testing
