// Named regression scenarios: short operation sequences modelled on crash bugs that testing
// tools found in the published implementations of persistent indexes. Each runs under the
// ADR campaign (--scenario NAME) for the indexes it concerns, crashing at every fence.
#ifndef PMINDEX_CRASHTEST_SCENARIOS_H_
#define PMINDEX_CRASHTEST_SCENARIOS_H_

#include <string>
#include <vector>

#include "crashtest/workload.h"

namespace pmindex::crashtest {

struct Scenario {
  std::string name;
  std::string echoes;             // the original bug this scenario is modelled on
  std::vector<std::string> aims;  // index names it targets ("" entry = every index)
};

const std::vector<Scenario>& Scenarios();
// The operations of scenario `name` for an index with `traits`; false if unknown.
bool ScenarioOps(const std::string& name, const IndexTraits& traits, uint64_t seed,
                 std::vector<Op>* ops);
// True if the scenario is meant for index `index`.
bool ScenarioApplies(const Scenario& scenario, const std::string& index);

}  // namespace pmindex::crashtest

#endif  // PMINDEX_CRASHTEST_SCENARIOS_H_
