// How subcommands plug into the `pmindex` program.
//
// Each subcommand lives in its own cmd_<name>.cc and exposes one Add<Name>Command function
// that adds its CLI11 subcommand to the app and, when the user chooses it, stores its action
// in the CommandSet; run.cc (RunCli, the body of main.cc) calls each Add function with one
// line. An action returns the process exit code: 0 success, 1 an error (the message names the
// file and the reason), 2 a usage error (CLI11 parse errors are mapped to 2 by RunCli).
#ifndef PMINDEX_TOOLS_COMMAND_H_
#define PMINDEX_TOOLS_COMMAND_H_

#include <CLI/CLI.hpp>
#include <functional>

namespace pmindex::tools {

inline constexpr int kExitOk = 0;
inline constexpr int kExitError = 1;
inline constexpr int kExitUsage = 2;

struct CommandSet {
  std::function<int()> selected;  // the action of the subcommand given on the command line
  std::function<int()> fallback;  // run when no subcommand was given (`pmindex` = bench)
};

void AddBenchCommand(CLI::App& app, CommandSet& commands);
void AddInfoCommand(CLI::App& app, CommandSet& commands);
void AddDumpCommand(CLI::App& app, CommandSet& commands);
void AddListCommand(CLI::App& app, CommandSet& commands);
void AddCrashtestCommand(CLI::App& app, CommandSet& commands);  // cmd_crashtest.cc
void AddCheckCommand(CLI::App& app, CommandSet& commands);      // cmd_check.cc
void AddKvCommands(CLI::App& app, CommandSet& commands);        // cmd_kv.cc: get, put, delete, load
void AddLabCommand(CLI::App& app, CommandSet& commands);        // cmd_lab.cc

}  // namespace pmindex::tools

#endif  // PMINDEX_TOOLS_COMMAND_H_
