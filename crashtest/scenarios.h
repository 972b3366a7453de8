// Named regression scenarios: short operation sequences modelled on crash bugs that testing
// tools found in the published implementations of persistent indexes. Each runs under the
// ADR campaign (--scenario NAME), crashing at every fence, on every persistent index when
// `every_index`, else on the indexes whose registration names it
// (IndexRegistration::crash_scenarios): the table names no index.
#ifndef PMINDEX_CRASHTEST_SCENARIOS_H_
#define PMINDEX_CRASHTEST_SCENARIOS_H_

#include <string>
#include <vector>

#include "crashtest/workload.h"

namespace pmindex::crashtest {

struct Scenario {
  std::string name;
  std::string echoes;        // the original bug this scenario is modelled on
  bool every_index = false;  // true: every persistent index takes part
  // Appends the scenario's operations for an index with `traits`; false if the scenario
  // cannot run on such an index (e.g. it needs byte-string keys).
  bool (*build)(const IndexTraits& traits, uint64_t seed, std::vector<Op>* ops) = nullptr;
};

const std::vector<Scenario>& Scenarios();
// The scenario of that name; nullptr if none.
const Scenario* FindScenario(const std::string& name);
// The operations of scenario `name` for an index with `traits`; false if unknown.
bool ScenarioOps(const std::string& name, const IndexTraits& traits, uint64_t seed,
                 std::vector<Op>* ops);
// True if `registration`'s index takes part in the scenario.
bool ScenarioApplies(const Scenario& scenario, const IndexRegistration& registration);

}  // namespace pmindex::crashtest

#endif  // PMINDEX_CRASHTEST_SCENARIOS_H_
