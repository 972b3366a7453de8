// Test-only mutants: deliberate crash bugs, switched on by name, that prove the crash
// campaign can fail. Index code marks a mutation point with
//
//   if (!pm::mutant("rntree.skip_slot_persist")) pc.persist(slot, 64);
//
// and a test (or `PMINDEX_MUTANT=<name>` in the environment, read at start-up) selects at
// most one mutant per process. With none selected the check is one predictable branch.
// Mutant names are "<index>.<what is broken>"; each index lists its mutants in
// IndexTraits-independent doc (doc/crashtest.md).
#ifndef PMINDEX_PM_MUTANT_H_
#define PMINDEX_PM_MUTANT_H_

#include <cstring>
#include <string>
#include <vector>

namespace pmindex::pm {

namespace detail {
inline constinit const char* g_mutant = nullptr;
}

// True if mutant `name` is the selected one.
inline bool mutant(const char* name) {
  const char* m = detail::g_mutant;
  if (m == nullptr) [[likely]]
    return false;
  return std::strcmp(m, name) == 0;
}

// Selects a mutant ("" or nullptr: none). Not thread-safe; call between runs.
void set_mutant(const char* name);
// The selected mutant, "" if none.
const char* selected_mutant();
// Every mutation point's name (a new point adds its name here), so a misspelt mutant is
// refused instead of silently testing nothing.
const std::vector<std::string>& known_mutants();
bool is_known_mutant(const std::string& name);

}  // namespace pmindex::pm

#endif  // PMINDEX_PM_MUTANT_H_
