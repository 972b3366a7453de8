// The `pmindex` program's body (run.h): the subcommands of command.h on one CLI11 app.
#include "tools/run.h"

#include <cstdio>

#include "bench/baselines/baselines.h"
#include "tools/command.h"

#ifndef PMINDEX_VERSION
#define PMINDEX_VERSION "unknown"
#endif

namespace pmindex::tools {

int RunCli(int argc, char** argv) {
  pmindex::bench::RegisterBaselines();
  CLI::App app{"pmindex: crash-consistent persistent-memory indexes and their workbench.\n"
               "Without a subcommand, runs `pmindex bench` with its defaults."};
  app.set_version_flag("--version", PMINDEX_VERSION);
  app.require_subcommand(0, 1);
  CommandSet commands;

  AddBenchCommand(app, commands);
  AddInfoCommand(app, commands);
  AddDumpCommand(app, commands);
  AddListCommand(app, commands);
  AddCrashtestCommand(app, commands);
  AddCheckCommand(app, commands);
  AddKvCommands(app, commands);
  AddLabCommand(app, commands);

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int rc = app.exit(e);  // prints help, the version, or the error and a hint
    return rc == 0 ? kExitOk : kExitUsage;
  }
  std::function<int()>& action = commands.selected ? commands.selected : commands.fallback;
  if (!action) {
    std::fprintf(stderr, "%s", app.help().c_str());
    return kExitUsage;
  }
  return action();
}

}  // namespace pmindex::tools
