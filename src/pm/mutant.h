// Test-only mutants: deliberate crash bugs, switched on by name, that prove the crash
// campaign can fail. Index code marks a mutation point with
//
//   if (!pm::mutant("rntree.skip_slot_persist")) pc.persist(slot, 64);
//
// Mutants exist only in builds configured with PMINDEX_MUTANTS=ON (test builds; the macro
// PMINDEX_MUTANTS is then defined). Otherwise pm::mutant() is a constant false, the branches
// compile away, and nothing (no environment variable, no call) changes what the shipped
// library does.
//
// In a mutant build a test (or `PMINDEX_MUTANT=<name>` in the environment, read at start-up)
// selects at most one mutant per process; with none selected the check is one predictable
// branch. Mutant names are "<index>.<what is broken>"; each index lists its mutants in its
// doc (doc/btree.md, doc/radix.md, doc/pftree.md) and doc/crashtest.md.
#ifndef PMINDEX_PM_MUTANT_H_
#define PMINDEX_PM_MUTANT_H_

#include <cstring>
#include <string>
#include <vector>

namespace pmindex::pm {

#if defined(PMINDEX_MUTANTS) && PMINDEX_MUTANTS
inline constexpr bool kMutantsCompiled = true;

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
#else
inline constexpr bool kMutantsCompiled = false;

constexpr bool mutant(const char*) { return false; }
#endif

// Selects a mutant ("" or nullptr: none). Not thread-safe; call between runs. Returns false
// (and selects nothing) if a mutant is asked for in a build without mutants.
bool set_mutant(const char* name);
// The selected mutant, "" if none.
const char* selected_mutant();
// Every mutation point's name (a new point adds its name here), so a misspelt mutant is
// refused instead of silently testing nothing.
const std::vector<std::string>& known_mutants();
bool is_known_mutant(const std::string& name);

}  // namespace pmindex::pm

#endif  // PMINDEX_PM_MUTANT_H_
