// Rounds: collapsing the results of several rounds to their median, and ratios over rounds
// (see runner.h, BenchConfig::rounds).
#include "bench/runner.h"

#include <algorithm>
#include <string>
#include <vector>

namespace pmindex::bench {

void CollapseRounds(std::vector<BenchResult>* results) {
  auto value = [](const BenchResult& r) {
    return r.workload == "recover" ? r.recovery_seconds.value_or(0) : r.mops_per_cpu_second;
  };
  std::vector<BenchResult> out;
  std::vector<bool> taken(results->size(), false);
  for (size_t i = 0; i < results->size(); ++i) {
    if (taken[i]) continue;
    const BenchResult& head = (*results)[i];
    std::vector<size_t> group;  // in round order: results are appended round by round
    for (size_t j = i; j < results->size(); ++j) {
      const BenchResult& r = (*results)[j];
      if (!taken[j] && r.index == head.index && r.workload == head.workload &&
          r.threads == head.threads) {
        group.push_back(j);
        taken[j] = true;
      }
    }
    std::vector<size_t> by_value = group;
    std::sort(by_value.begin(), by_value.end(), [&](size_t a, size_t b) {
      return value((*results)[a]) < value((*results)[b]);
    });
    BenchResult median = (*results)[by_value[(by_value.size() - 1) / 2]];
    median.per_round.clear();
    for (size_t j : group) {
      const BenchResult& r = (*results)[j];
      median.per_round.push_back(value(r));
      if (r.round != median.round && !r.note.empty())
        median.note += (median.note.empty() ? "" : "; ") + ("round " + std::to_string(r.round) +
                                                             ": " + r.note);
    }
    out.push_back(std::move(median));
  }
  *results = std::move(out);
}

bool RatioOverRounds(const BenchResult& r, const BenchResult& base, RoundRatio* out) {
  if (r.per_round.empty() || r.per_round.size() != base.per_round.size()) return false;
  std::vector<double> ratios;
  for (size_t i = 0; i < r.per_round.size(); ++i) {
    if (base.per_round[i] <= 0) return false;
    ratios.push_back(r.per_round[i] / base.per_round[i]);
  }
  std::sort(ratios.begin(), ratios.end());
  out->median = ratios.size() % 2 == 1
                    ? ratios[ratios.size() / 2]
                    : (ratios[ratios.size() / 2 - 1] + ratios[ratios.size() / 2]) / 2;
  out->min = ratios.front();
  out->max = ratios.back();
  return true;
}

}  // namespace pmindex::bench
