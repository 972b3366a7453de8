// pmindex: the command-line program. `pmindex` alone runs `pmindex bench` with its defaults.
// The body is pmindex::tools::RunCli (tools/run.cc, in pmindex_cli).
#include "tools/run.h"

int main(int argc, char** argv) { return pmindex::tools::RunCli(argc, argv); }
