#include "pm/mutant.h"

#include <cstdlib>
#include <string>

namespace pmindex::pm {

#if defined(PMINDEX_MUTANTS) && PMINDEX_MUTANTS
namespace {

std::string& storage() {
  static std::string* s = new std::string;
  return *s;
}

struct FromEnvironment {
  FromEnvironment() {
    if (const char* m = std::getenv("PMINDEX_MUTANT")) set_mutant(m);
  }
} g_from_environment;

}  // namespace

bool set_mutant(const char* name) {
  if (name == nullptr || *name == '\0') {
    detail::g_mutant = nullptr;
    storage().clear();
    return true;
  }
  storage() = name;
  detail::g_mutant = storage().c_str();
  return true;
}

const char* selected_mutant() { return detail::g_mutant ? detail::g_mutant : ""; }

#else

bool set_mutant(const char* name) { return name == nullptr || *name == '\0'; }

const char* selected_mutant() { return ""; }

#endif

}  // namespace pmindex::pm
