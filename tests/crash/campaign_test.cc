// The crash campaign for every registered persistent index (short runs; the long run is
// `pmindex crashtest` and the "long" label), every registered mutant caught, and the
// regression scenarios on the indexes whose registrations name them.
#include <filesystem>
#include <fstream>
#include <iterator>
#include <regex>
#include <set>

#include <gtest/gtest.h>

#include "common/test_util.h"
#include "crashtest/campaign.h"
#include "crashtest/scenarios.h"
#include "pmindex/index.h"

#ifndef PMINDEX_SOURCE_DIR
#error "PMINDEX_SOURCE_DIR must be defined"
#endif

namespace pmindex::crashtest {
namespace {

using pmindex::testing::Sanitized;
using pmindex::testing::Scale;
using pmindex::testing::SeedTrace;
using pmindex::testing::TestSeed;

bool LongRun() { return std::getenv("PMINDEX_CRASH_LONG") != nullptr; }

// Every persistent index linked into this test, test-only ones included (they prove the
// campaign runs what the registry holds), except the deliberately broken reference list.
std::vector<std::string> PersistentIndexes() {
  std::vector<std::string> out;
  for (const std::string& name : RegisteredIndexNames()) {
    const IndexRegistration* reg = FindIndex(name);
    if (reg->attach == nullptr || !reg->traits.persistent || name == "testlist-broken") continue;
    out.push_back(name);
  }
  return out;
}

CampaignOptions Short(const std::string& index, uint64_t seed) {
  CampaignOptions o;
  o.timeout_seconds = pmindex::testing::CampaignTimeout();
  o.index = index;
  o.seed = seed;
  o.ops = LongRun() ? 3000 : Scale(160);
  o.pool_size = 8ull << 20;
  o.cycles = static_cast<uint32_t>(LongRun() ? 200 : Scale(4));
  o.max_delay_ms = 30;
  return o;
}

class EveryIndexTest : public ::testing::TestWithParam<std::string> {};

TEST_P(EveryIndexTest, AdrCampaignPasses) {
  const uint64_t seed = TestSeed(1);
  SCOPED_TRACE(SeedTrace(seed));
  CampaignResult r = RunAdrCampaign(Short(GetParam(), seed));
  ASSERT_TRUE(r.error.ok()) << r.error.ToString();
  EXPECT_TRUE(r.failures.empty()) << FormatResult(r);
  EXPECT_GT(r.images, 0u);
  std::printf("%s\n", FormatResult(r).c_str());
}

TEST_P(EveryIndexTest, KillCampaignPasses) {
  const uint64_t seed = TestSeed(2);
  SCOPED_TRACE(SeedTrace(seed));
  CampaignResult r = RunKillCampaign(Short(GetParam(), seed));
  ASSERT_TRUE(r.error.ok()) << r.error.ToString();
  EXPECT_TRUE(r.failures.empty()) << FormatResult(r);
  std::printf("%s\n", FormatResult(r).c_str());
}

TEST_P(EveryIndexTest, RegressionScenariosPass) {
  for (const Scenario& s : Scenarios()) {
    if (!ScenarioApplies(s, *FindIndex(GetParam()))) continue;
    SCOPED_TRACE("scenario " + s.name + " (echoes: " + s.echoes + ")");
    CampaignOptions o = Short(GetParam(), 1);
    o.scenario = s.name;
    if (!LongRun()) {  // a seeded sample of the crash points; the long run takes them all
      o.points = Scale(60);
      o.images = 2;
    }
    CampaignResult r = RunAdrCampaign(o);
    ASSERT_TRUE(r.error.ok()) << r.error.ToString();
    EXPECT_TRUE(r.failures.empty()) << FormatResult(r);
  }
}

INSTANTIATE_TEST_SUITE_P(Registry, EveryIndexTest, ::testing::ValuesIn(PersistentIndexes()),
                         pmindex::testing::IndexParamName);

// Each registration names only scenarios the campaign has.
TEST(ScenarioTable, RegistrationsNameKnownScenarios) {
  for (const std::string& name : RegisteredIndexNames()) {
    for (const std::string& scenario : FindIndex(name)->crash_scenarios) {
      EXPECT_NE(FindScenario(scenario), nullptr) << name << " names scenario " << scenario;
    }
  }
  for (const MutantInfo& m : RegisteredMutants()) {
    if (!m.scenario.empty()) {
      EXPECT_NE(FindScenario(m.scenario), nullptr) << m.name;
    }
  }
}

// Mutants named in the index docs as `<index>.<what>` (doc/*.md tables).
std::set<std::string> DocumentedMutants() {
  std::set<std::string> names;
  const std::regex pattern("`([a-z][a-z0-9-]*)\\.([a-z_0-9]+)`");
  for (const char* doc : {"doc/btree.md", "doc/radix.md", "doc/pftree.md", "doc/roart.md",
                          "doc/crashtest.md"}) {
    std::ifstream in(std::string(PMINDEX_SOURCE_DIR) + "/" + doc);
    std::string line;
    while (std::getline(in, line)) {
      for (std::sregex_iterator it(line.begin(), line.end(), pattern), end; it != end; ++it) {
        const std::string index = (*it)[1];
        const IndexRegistration* reg = FindIndex(index);
        if (reg != nullptr && reg->attach != nullptr) names.insert((*it)[0].str().substr(1, (*it)[0].length() - 2));
      }
    }
  }
  return names;
}

// A mutant a doc names is one an index registers (a misspelt or retired name fails).
TEST(MutantTest, DocumentedMutantsAreRegistered) {
  for (const std::string& name : DocumentedMutants()) {
    EXPECT_NE(FindMutant(name), nullptr) << name << " is in a doc but no index registers it";
  }
}

// Runs the campaign with `mutant` on; true if it failed, as it must.
bool Caught(const MutantInfo& mutant, CampaignResult* r) {
  const std::string index = mutant.name.substr(0, mutant.name.find('.'));
  CampaignOptions o = Short(index, 9);
  o.ops = 200;
  o.mutant = mutant.name;
  o.scenario = mutant.scenario;
  o.torn = true;
  o.continuation_every = 4;
  *r = RunAdrCampaign(o);
  if (!r->error.ok() || !r->failures.empty()) return !r->failures.empty();
  if (!mutant.scenario.empty()) return false;  // a scenario runs whole at every fence
  o.ops = 2000;  // some mutants need more splits to show
  *r = RunAdrCampaign(o);
  if (!r->failures.empty()) return true;
  o.cycles = 6;
  *r = RunKillCampaign(o);
  return !r->failures.empty();
}

// True if a test source under tests/ defines `test` ("Suite.Name") and selects `mutant` in
// its body (which then asserts the failure: that test runs in the suite of its area).
bool TestSelectsMutant(const std::string& test, const std::string& mutant) {
  const size_t dot = test.find('.');
  if (dot == std::string::npos) return false;
  const std::regex definition("TEST(_F|_P)?\\(" + test.substr(0, dot) + ",\\s*" +
                              test.substr(dot + 1) + "\\)");
  const std::string selects = "set_mutant(\"" + mutant + "\")";
  for (const auto& entry :
       std::filesystem::recursive_directory_iterator(std::string(PMINDEX_SOURCE_DIR) + "/tests")) {
    if (entry.path().extension() != ".cc") continue;
    std::ifstream in(entry.path());
    const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    std::smatch found;
    if (!std::regex_search(text, found, definition)) continue;
    const size_t begin = static_cast<size_t>(found.position(0));
    const size_t end = text.find("\nTEST", begin + 1);
    if (text.substr(begin, end - begin).find(selects) != std::string::npos) return true;
  }
  return false;
}

// Every mutant any registered index declares, test-only indexes' included, is caught by the
// campaign: the random workload, or the scenario the mutant names; or, for the few neither
// reaches, by the unit test the mutant names, which must select it.
TEST(MutantTest, EveryRegisteredMutantIsCaught) {
  PMINDEX_REQUIRE_MUTANTS();
  // What this test proves (the campaign finds each deliberate bug) is a property of the
  // campaign's logic, which the plain build proves; the sanitizers are for the unmutated
  // code, which the per-index campaigns above run.
  if (Sanitized()) GTEST_SKIP() << "mutant sweep runs in the plain build";
  const std::vector<MutantInfo> mutants = RegisteredMutants();
  EXPECT_GE(mutants.size(), 20u);
  for (const MutantInfo& mutant : mutants) {
    SCOPED_TRACE("mutant " + mutant.name);
    if (!mutant.caught_by_test.empty()) {
      EXPECT_TRUE(TestSelectsMutant(mutant.caught_by_test, mutant.name))
          << mutant.caught_by_test << " does not select " << mutant.name;
      std::printf("%-36s caught by %s\n", mutant.name.c_str(), mutant.caught_by_test.c_str());
      continue;
    }
    CampaignResult r;
    const bool caught = Caught(mutant, &r);
    ASSERT_TRUE(r.error.ok()) << r.error.ToString();
    EXPECT_TRUE(caught) << "the campaign did not catch " << mutant.name << "\n" << FormatResult(r);
    std::printf("%-36s %s\n", mutant.name.c_str(),
                caught ? ("caught: " + r.failures[0].message.substr(0, 90)).c_str() : "MISSED");
  }
}

}  // namespace
}  // namespace pmindex::crashtest
