// Test-only mutants: deliberate crash bugs, switched on by name, that prove the crash
// campaign can fail. Index code marks a mutation point with
//
//   if (!pm::mutant("<index>.skip_entry_persist")) pc.persist(entry, 64);
//
// Mutants exist only in builds configured with PMINDEX_MUTANTS=ON (test builds; the macro
// PMINDEX_MUTANTS is then defined). Otherwise pm::mutant() is a constant false, the branches
// compile away, and nothing (no environment variable, no call) changes what the shipped
// library does.
//
// In a mutant build a test (or `PMINDEX_MUTANT=<name>` in the environment, read at start-up)
// selects at most one mutant per process; with none selected the check is one predictable
// branch. Mutant names are "<index>.<what is broken>"; each index lists its mutants in its
// registration (IndexRegistration::mutants, pmindex/index.h), which is how a misspelt name is
// refused and how tests/crash/campaign_test.cc finds every one to prove it caught. Here they
// are only strings: the substrate knows no index.
#ifndef PMINDEX_PM_MUTANT_H_
#define PMINDEX_PM_MUTANT_H_

#include <cstring>
#include <string>

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

}  // namespace pmindex::pm

#endif  // PMINDEX_PM_MUTANT_H_
