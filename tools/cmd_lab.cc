// `pmindex lab`: the design-primitive lab of Götze et al. (doc/primitives.md): Table 4 and
// the micro-experiments E1-E10 over the node organisations of src/primitives/.
#include <cstdio>
#include <sstream>

#include "bench/lab/lab.h"
#include "tools/command.h"

namespace pmindex::tools {

namespace {

struct LabArgs {
  bool table4 = false;
  std::string experiments;
  std::string json, csv;
  lab::LabOptions options;
  bool quiet = false;
};

int RunLabCommand(const LabArgs& a) {
  if (a.table4) {
    lab::PrintTable4(stdout);
    if (a.experiments.empty()) return kExitOk;
  }
  lab::LabOptions o = a.options;
  o.progress = !a.quiet;
  std::stringstream ss(a.experiments);
  for (std::string e; std::getline(ss, e, ',');) {
    if (e.empty()) continue;
    if (e[0] == 'E') e[0] = 'e';
    static const char* kKnown[] = {"e1", "e2", "e3", "e4", "e5", "e6", "e7", "e8", "e9", "e10"};
    bool known = false;
    for (const char* k : kKnown) known = known || e == k;
    if (!known) {
      std::fprintf(stderr, "pmindex lab: unknown experiment '%s' (e1..e10)\n", e.c_str());
      return kExitUsage;
    }
    o.experiments.push_back(e);
  }
  std::vector<lab::Row> rows;
  const bool ok = lab::RunLab(o, &rows);
  lab::PrintRows(stdout, rows);
  if (!a.json.empty() && !lab::WriteJson(a.json, rows)) {
    std::fprintf(stderr, "pmindex lab: cannot write %s\n", a.json.c_str());
    return kExitError;
  }
  if (!a.csv.empty() && !lab::WriteCsv(a.csv, rows)) {
    std::fprintf(stderr, "pmindex lab: cannot write %s\n", a.csv.c_str());
    return kExitError;
  }
  return ok ? kExitOk : kExitError;
}

}  // namespace

void AddLabCommand(CLI::App& app, CommandSet& commands) {
  auto args = std::make_shared<LabArgs>();
  CLI::App* cmd = app.add_subcommand(
      "lab", "Design-primitive lab (Götze et al.): Table 4 and micro-experiments E1-E10 over "
             "the node organisations (doc/primitives.md)");
  cmd->add_flag("--table4", args->table4, "print pairs per node and memory (Table 4) and exit "
                                          "unless --exp is given");
  cmd->add_option("--exp", args->experiments, "comma-separated experiments (e1..e10); all if "
                                              "not given");
  cmd->add_flag("--quick", args->options.quick, "small sizes (tests): 128 operations per point, "
                                                "4 MiB arena, two run sizes");
  cmd->add_option("--iters", args->options.iters, "operations per data point (default 4096)")
      ->check(CLI::PositiveNumber);
  cmd->add_option("--arena-mib", args->options.arena_mib,
                  "node arena in MiB (default 32, four times this machine's LLC)")
      ->check(CLI::PositiveNumber);
  cmd->add_option("--pool-dir", args->options.pool_dir, "directory of the arena and PMDK pool")
      ->check(CLI::ExistingDirectory);
  cmd->add_option("--seed", args->options.seed, "random seed");
  cmd->add_option("--json", args->json, "write the rows as JSON");
  cmd->add_option("--csv", args->csv, "write the rows as CSV");
  cmd->add_flag("--quiet", args->quiet, "no progress lines on stderr");
  cmd->callback([args, &commands] { commands.selected = [args] { return RunLabCommand(*args); }; });
}

}  // namespace pmindex::tools
