// The `pmindex` program's whole body, in pmindex_cli so that tools/main.cc (the installed
// program) and tests' builds of the same program with test-only indexes share one compiled
// copy of it (tools/main.cc then includes no CLI11 header).
#ifndef PMINDEX_TOOLS_RUN_H_
#define PMINDEX_TOOLS_RUN_H_

namespace pmindex::tools {

// Parses the command line, runs the chosen subcommand (`pmindex bench` when none is given)
// and returns the process exit code (command.h: kExitOk, kExitError, kExitUsage).
int RunCli(int argc, char** argv);

}  // namespace pmindex::tools

#endif  // PMINDEX_TOOLS_RUN_H_
