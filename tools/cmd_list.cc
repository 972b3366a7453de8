// `pmindex list`: every index in the registry with what it accepts and guarantees.
#include <cstdio>

#include "pmindex/index.h"
#include "tools/command.h"

namespace pmindex::tools {

namespace {

// The crash scenarios an index takes part in (beside those for every index) and its mutants.
void PrintCrashTesting(const IndexRegistration& reg) {
  if (reg.attach == nullptr) return;
  std::string scenarios;
  for (const std::string& s : reg.crash_scenarios) scenarios += (scenarios.empty() ? "" : ", ") + s;
  if (scenarios.empty()) scenarios = "those for every index";
  std::printf("  scenarios:   %s\n", scenarios.c_str());
  for (const MutantInfo& m : reg.mutants) {
    std::printf("  mutant:      %s: %s\n", m.name.c_str(), m.breaks.c_str());
  }
}

int RunList(bool names_only) {
  for (const std::string& name : RegisteredIndexNames()) {
    const IndexRegistration* reg = FindIndex(name);
    if (names_only) {
      std::printf("%s\n", name.c_str());
      continue;
    }
    const IndexTraits& t = reg->traits;
    std::printf("%s\n", name.c_str());
    std::printf("  %s\n", t.description.c_str());
    std::printf("  storage:     %s%s\n", reg->attach ? "pool" : "own files or DRAM",
                reg->attach ? (" (kind " + std::to_string(static_cast<uint32_t>(t.kind)) + ")")
                                  .c_str()
                            : "");
    std::printf("  keys:        %s, up to %zu bytes; values up to %zu bytes; %s\n",
                t.byte_keys ? "byte strings and integers" : "8-byte integers", t.max_key_size,
                t.max_value_size, t.ordered ? "ordered (scan)" : "unordered");
    std::printf("  threads:     %s\n", t.concurrency.c_str());
    std::printf("  durability:  %s\n",
                t.durability.empty() ? (t.persistent ? "persistent" : "volatile")
                                     : t.durability.c_str());
    PrintCrashTesting(*reg);
  }
  return kExitOk;
}

}  // namespace

void AddListCommand(CLI::App& app, CommandSet& commands) {
  CLI::App* sub = app.add_subcommand("list", "List the registered indexes and baselines");
  auto names_only = std::make_shared<bool>(false);
  sub->add_flag("--names", *names_only, "Print only the names, one per line");
  sub->callback([&commands, names_only] {
    commands.selected = [names_only] { return RunList(*names_only); };
  });
}

}  // namespace pmindex::tools
