// `pmindex crashtest`: the crash campaign (crashtest/campaign.h) for registered indexes.
//
//   pmindex crashtest [--index LIST|all] [--model adr|kill|both] [--ops N] [--points all|N]
//                     [--images R] [--torn] [--no-poison] [--cycles N] [--seed S] [--json FILE]
//                     [--scenario NAME|all] [--mutant NAME] [--index-params P]
//                     [--replay-point P --replay-image I] [--value-size N]
//
// Prints per index and model: crash points, images, failures; for each failure the seed,
// crash point, image, interrupted operation, finding, and the command that replays it.
// Exit status 1 when anything failed.
#include <cstdio>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>
#include <sstream>

#include "crashtest/campaign.h"
#include "crashtest/scenarios.h"
#include "pm/mutant.h"
#include "pmindex/index.h"
#include "tools/command.h"

namespace pmindex::tools {
namespace {

struct CrashtestArgs {
  std::string index = "all";
  std::string model = "both";
  uint64_t ops = 500;
  std::string points = "all";
  size_t images = 4;
  bool torn = false;
  bool no_poison = false;
  uint32_t cycles = 10;
  uint32_t threads = 2;
  uint64_t seed = 1;
  std::string json;
  std::string scenario;
  std::string mutant;
  uint64_t value_size = 0;
  std::string index_params;
  uint64_t replay_point = 0;
  std::string replay_image;
  uint64_t pool_size = 16ull << 20;
  std::string dir = "/dev/shm";
  uint32_t continuation_every = 16;
  uint32_t recovery_crash_every = 128;
  uint64_t max_failures = 1;
  bool no_fork = false;
};

std::vector<std::string> SplitList(const std::string& s) {
  std::vector<std::string> out;
  std::stringstream ss(s);
  std::string item;
  while (std::getline(ss, item, ','))
    if (!item.empty()) out.push_back(item);
  return out;
}

// Every persistent index of this build, test-only structures excluded.
std::vector<std::string> AllPersistentIndexes() {
  std::vector<std::string> out;
  for (const std::string& name : RegisteredIndexNames()) {
    const IndexRegistration* reg = FindIndex(name);
    if (reg == nullptr || reg->attach == nullptr || !reg->traits.persistent) continue;
    if (reg->test_only) continue;
    out.push_back(name);
  }
  return out;
}

nlohmann::json ToJson(const crashtest::CampaignResult& r, const std::string& scenario) {
  nlohmann::json j = {{"index", r.index},
                      {"model", r.model},
                      {"scenario", scenario},
                      {"ops", r.ops},
                      {"fences", r.fences},
                      {"points_checked", r.points},
                      {"points_skipped", r.points_skipped},
                      {"images", r.images},
                      {"max_undecided_lines", r.max_undecided},
                      {"seconds", r.seconds},
                      {"check_seconds", r.check_seconds},
                      {"us_per_image", r.us_per_image()},
                      {"scan_seconds", r.scan_seconds},
                      {"bytes_compared", r.bytes_compared},
                      {"passed", r.passed()}};
  if (!r.error.ok()) j["error"] = r.error.ToString();
  nlohmann::json failures = nlohmann::json::array();
  for (const auto& f : r.failures)
    failures.push_back({{"model", f.model},
                        {"point", f.point},
                        {"image", f.image},
                        {"operation", f.operation},
                        {"message", f.message},
                        {"replay", f.replay}});
  j["failures"] = failures;
  return j;
}

// Why the selected indexes cannot run, or "" if they can.
std::string CheckIndexes(const std::vector<std::string>& indexes) {
  if (indexes.empty()) return "no persistent index selected";
  for (const std::string& name : indexes) {
    const IndexRegistration* reg = FindIndex(name);
    if (reg == nullptr || reg->attach == nullptr) {
      return "'" + name + "' is not a registered persistent index";
    }
  }
  return {};
}

// Why --mutant cannot be used, or "" if it can (or is not given).
std::string CheckMutant(const std::string& mutant) {
  if (mutant.empty()) return {};
  if (!pm::kMutantsCompiled) {
    return "--mutant " + mutant + ": this build has no mutants (configure with " +
           "-DPMINDEX_MUTANTS=ON)";
  }
  if (FindMutant(mutant) != nullptr) return {};
  std::string names;
  for (const MutantInfo& m : RegisteredMutants()) names += " " + m.name;
  return "unknown mutant '" + mutant + "'; known:" + names;
}

// Why the numeric and model options are unusable, or "" if they are; sets *points.
std::string CheckRunOptions(const CrashtestArgs& a, uint64_t* points) {
  if (a.ops == 0) return "--ops must be positive";
  if (a.cycles == 0 && (a.model == "kill" || a.model == "both")) return "--cycles must be positive";
  if (a.model != "adr" && a.model != "kill" && a.model != "both") {
    return "--model must be adr, kill or both";
  }
  *points = 0;
  if (a.points != "all") {
    char* end = nullptr;
    *points = std::strtoull(a.points.c_str(), &end, 10);
    if (end == a.points.c_str() || *end != '\0' || *points == 0) {
      return "--points must be 'all' or a positive number";
    }
  }
  return {};
}

// The scenarios to run ("" = the random workload), or why not.
std::string SelectScenarios(const std::string& arg, std::vector<std::string>* scenarios) {
  if (arg == "all") {
    for (const auto& s : crashtest::Scenarios()) scenarios->push_back(s.name);
  } else if (!arg.empty()) {
    *scenarios = SplitList(arg);
    for (const std::string& s : *scenarios) {
      if (crashtest::FindScenario(s) == nullptr) return "unknown scenario '" + s + "'";
    }
  } else {
    scenarios->push_back("");
  }
  return {};
}

crashtest::CampaignOptions CampaignOptionsFor(const CrashtestArgs& a, const std::string& index,
                                              const std::string& scenario, uint64_t points) {
  crashtest::CampaignOptions o;
  o.index = index;
  o.ops = a.ops;
  o.seed = a.seed;
  o.mutant = a.mutant;
  o.value_size = a.value_size;
  o.index_params = a.index_params;
  o.scenario = scenario;
  o.points = points;
  o.images = a.images;
  o.torn = a.torn;
  o.poison_freed = !a.no_poison;
  o.cycles = a.cycles;
  o.threads = a.threads;
  o.only_point = a.replay_point;
  o.only_image = a.replay_image;
  o.pool_size = a.pool_size;
  o.dir = a.dir;
  o.continuation_every = a.continuation_every;
  o.recovery_crash_every = a.recovery_crash_every;
  o.max_failures = a.max_failures;
  o.fork = !a.no_fork;
  o.log = [](const std::string& line) {
    std::printf("%s\n", line.c_str());
    std::fflush(stdout);
  };
  return o;
}

// Runs the campaign models of one index and scenario, prints and collects the results;
// true if anything failed.
bool RunOne(const CrashtestArgs& a, const crashtest::CampaignOptions& o, nlohmann::json* all) {
  std::vector<crashtest::CampaignResult> results;
  if (a.model == "adr" || a.model == "both") results.push_back(RunAdrCampaign(o));
  if ((a.model == "kill" || a.model == "both") && o.scenario.empty() && a.replay_point == 0)
    results.push_back(RunKillCampaign(o));
  bool failed = false;
  for (const auto& r : results) {
    std::printf("%s\n", crashtest::FormatResult(r).c_str());
    std::fflush(stdout);
    failed |= !r.passed();
    if ((a.replay_point != 0 || !a.replay_image.empty()) && r.images == 0) {
      std::fprintf(stderr,
                   "pmindex crashtest: replay of point %llu image '%s' checked nothing: no "
                   "such crash point or image in this run\n",
                   static_cast<unsigned long long>(a.replay_point), a.replay_image.c_str());
      failed = true;
    }
    all->push_back(ToJson(r, o.scenario));
  }
  return failed;
}

// Every selected index with every selected scenario it takes part in; true if any failed.
bool RunAll(const CrashtestArgs& a, const std::vector<std::string>& indexes,
            const std::vector<std::string>& scenarios, uint64_t points, nlohmann::json* all) {
  bool failed = false;
  for (const std::string& name : indexes) {
    for (const std::string& scenario : scenarios) {
      if (!scenario.empty()) {
        const crashtest::Scenario* sc = crashtest::FindScenario(scenario);
        if (a.scenario == "all" && !crashtest::ScenarioApplies(*sc, *FindIndex(name))) continue;
        std::printf("scenario %s on %s: echoes %s\n", scenario.c_str(), name.c_str(),
                    sc->echoes.c_str());
      }
      failed |= RunOne(a, CampaignOptionsFor(a, name, scenario, points), all);
    }
  }
  return failed;
}

int RunCrashtest(const CrashtestArgs& a) {
  const std::vector<std::string> indexes =
      a.index == "all" ? AllPersistentIndexes() : SplitList(a.index);
  uint64_t points = 0;
  std::vector<std::string> scenarios;
  std::string error = CheckIndexes(indexes);
  if (error.empty()) error = CheckMutant(a.mutant);
  if (error.empty()) error = CheckRunOptions(a, &points);
  if (error.empty()) error = SelectScenarios(a.scenario, &scenarios);
  if (!error.empty()) {
    std::fprintf(stderr, "pmindex crashtest: %s\n", error.c_str());
    return kExitUsage;
  }
  std::printf("pmindex crashtest: seed %llu, model %s, %s ops, points %s, images %zu%s\n",
              static_cast<unsigned long long>(a.seed), a.model.c_str(),
              std::to_string(a.ops).c_str(), a.points.c_str(), a.images, a.torn ? ", torn" : "");
  std::fflush(stdout);
  nlohmann::json all = nlohmann::json::array();
  const bool failed = RunAll(a, indexes, scenarios, points, &all);
  if (!a.json.empty()) {
    std::ofstream out(a.json);
    out << nlohmann::json{{"seed", a.seed}, {"results", all}}.dump(2) << "\n";
    if (!out) {
      std::fprintf(stderr, "pmindex crashtest: cannot write %s\n", a.json.c_str());
      return kExitError;
    }
  }
  std::printf("%s\n", failed ? "FAILED" : "PASSED");
  return failed ? kExitError : kExitOk;
}

}  // namespace

void AddCrashtestCommand(CLI::App& app, CommandSet& commands) {
  CLI::App* sub = app.add_subcommand(
      "crashtest", "Crash campaign: simulated power failure (adr) and kill -9 for each index");
  auto a = std::make_shared<CrashtestArgs>();
  sub->add_option("--index", a->index, "Comma-separated index names, or all")->capture_default_str();
  sub->add_option("--model", a->model, "adr, kill or both")->capture_default_str();
  sub->add_option("--ops", a->ops, "Operations of the workload (kill: per thread and cycle)")
      ->capture_default_str();
  sub->add_option("--points", a->points, "Crash points: all fences, or a seeded sample of N")
      ->capture_default_str();
  sub->add_option("--images", a->images, "Random subset images per crash point")
      ->capture_default_str();
  sub->add_flag("--torn", a->torn, "Also torn-line images (8-byte words old/new)");
  sub->add_flag("--no-poison", a->no_poison,
                "Leave freed blocks as they are (default: filled with 0xA5, so reused blocks "
                "hold old bytes)");
  sub->add_option("--cycles", a->cycles, "kill model: kill/recover cycles")->capture_default_str();
  sub->add_option("--threads", a->threads, "kill model: worker threads")->capture_default_str();
  sub->add_option("--seed", a->seed, "Seed of workload, crash points and images")
      ->capture_default_str();
  sub->add_option("--json", a->json, "Write the results as JSON to this file");
  sub->add_option("--scenario", a->scenario,
                  "Named regression scenario(s) instead of the random workload, or all");
  sub->add_option("--mutant", a->mutant, "Switch on a test-only mutant (must be caught)");
  sub->add_option("--value-size", a->value_size,
                  "Pools with out-of-line values of up to N bytes (Options::max_value_size); "
                  "half the writes are N bytes long");
  sub->add_option("--index-params", a->index_params,
                  "Index parameters of every pool (a variant, e.g. 'pclht unlock=flush'); "
                  "default: each index's campaign parameters");
  sub->add_option("--replay-point", a->replay_point, "Replay: check only this crash point");
  sub->add_option("--replay-image", a->replay_image, "Replay: check only this image");
  sub->add_option("--pool-size", a->pool_size, "Bytes of the pools")->capture_default_str();
  sub->add_option("--dir", a->dir, "Directory for pools and images")->capture_default_str();
  sub->add_option("--continuation-every", a->continuation_every,
                  "Run the 200-op continuation for 1 in N images (0 = never)")
      ->capture_default_str();
  sub->add_option("--recovery-crash-every", a->recovery_crash_every,
                  "Crash again during recovery for 1 in N images (0 = never)")
      ->capture_default_str();
  sub->add_option("--max-failures", a->max_failures, "Stop an index after N failures (0 = never)")
      ->capture_default_str();
  sub->add_flag("--no-fork", a->no_fork, "Verify in-process (debugging a replay)");
  sub->callback([&commands, a] { commands.selected = [a] { return RunCrashtest(*a); }; });
}

}  // namespace pmindex::tools
