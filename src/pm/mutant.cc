#include "pm/mutant.h"

#include <cstdlib>
#include <string>

namespace pmindex::pm {
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

void set_mutant(const char* name) {
  if (name == nullptr || *name == '\0') {
    detail::g_mutant = nullptr;
    storage().clear();
    return;
  }
  storage() = name;
  detail::g_mutant = storage().c_str();
}

const char* selected_mutant() { return detail::g_mutant ? detail::g_mutant : ""; }

}  // namespace pmindex::pm
