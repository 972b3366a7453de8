#include "pm/mutant.h"

#include <algorithm>
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

const std::vector<std::string>& known_mutants() {
  static const std::vector<std::string>* names = new std::vector<std::string>{
      "fptree.bitmap_before_kv",     "nvtree.skip_entry_persist",
      "pftree.header_before_kv",     "pftree.pad_over_old_header",
      "pftree.skip_entry_persist",   "pftree.skip_inplace_update_persist",
      "pftree.skip_node_slot_persist",
      "pftree.skip_split_node_persist",
      "pftree.skip_split_persist",   "pftree.rebuild_pad_unwritten", "rntree.single_slot_line",
      "rntree.skip_kv_persist",      "rntree.skip_slot_persist",
      "testlist.skip_link_persist",  "testlist.skip_node_persist",
      "wbtree-so.skip_kv_persist",   "wbtree.skip_kv_persist",
      "wbtree.skip_valid_clear",     "woart.header_and_child_two_stores",
      "woart.skip_leaf_persist",     "wort.skip_leaf_persist",
      "wort.split_skip_parent_persist",
  };
  return *names;
}

bool is_known_mutant(const std::string& name) {
  const auto& names = known_mutants();
  return std::find(names.begin(), names.end(), name) != names.end();
}

}  // namespace pmindex::pm
