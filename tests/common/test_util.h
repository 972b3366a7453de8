// Shared helpers for pmindex tests: temporary directories, seeds, and size scaling.
#ifndef PMINDEX_TESTS_COMMON_TEST_UTIL_H_
#define PMINDEX_TESTS_COMMON_TEST_UTIL_H_

#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "pm/mutant.h"

namespace pmindex::testing {

// A fresh directory (under /dev/shm when it exists, else $TMPDIR or /tmp), removed with its
// contents on destruction.
class TempDir {
 public:
  TempDir();
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::string& path() const { return path_; }
  std::string file(const std::string& name) const { return path_ + "/" + name; }

 private:
  std::string path_;
};

// The seed for a randomized test: $PMINDEX_SEED if set, else `fallback`. Put it in a
// SCOPED_TRACE (SeedTrace) so a failure prints it; rerun with PMINDEX_SEED=<seed>.
uint64_t TestSeed(uint64_t fallback);
std::string SeedTrace(uint64_t seed);

// n, divided by 4 in sanitizer builds (they run 5-20x slower), at least 1.
uint64_t Scale(uint64_t n);

// True in ASan/UBSan/TSan builds.
bool Sanitized();

// Seconds a crash campaign may spend checking one image: the campaign's 30 s, four times
// that in sanitizer builds, where a check runs 4-5x slower (an image whose recovery is
// crashed again at each of its fences took 3 s in Release and 14 s under ASan).
double CampaignTimeout();

// GoogleTest's name for a test parameter that is an index name ("wbtree-so" -> "wbtree_so"):
// INSTANTIATE_TEST_SUITE_P(Registry, Suite, ::testing::ValuesIn(names), IndexParamName).
std::string IndexParamName(const ::testing::TestParamInfo<std::string>& info);

// Every index of this program's registry that can be made (pool-backed or not), less the one
// broken on purpose (testlist-broken, the crash machinery's reference): the registry-driven
// suites' parameters.
std::vector<std::string> WorkingIndexNames();

}  // namespace pmindex::testing

// First statement of a test that switches on a mutant: skips it in a build without mutants
// (PMINDEX_MUTANTS=OFF). scripts/test.sh builds with them, so CI runs these tests.
#define PMINDEX_REQUIRE_MUTANTS()                                                  \
  if (!::pmindex::pm::kMutantsCompiled)                                            \
  GTEST_SKIP() << "needs mutants: configure with -DPMINDEX_MUTANTS=ON"

#endif  // PMINDEX_TESTS_COMMON_TEST_UTIL_H_
