// The indexes compiled into the pmindex library. The registry registers them itself, once, on
// its first use, so a program that links pmindex normally (no whole-archive linking, no static
// initializers) finds "rntree" by name.
#ifndef PMINDEX_CORE_BUILTIN_INDEXES_H_
#define PMINDEX_CORE_BUILTIN_INDEXES_H_

#include <vector>

#include "pmindex/index.h"

namespace pmindex {

// Every built-in index of the families this build holds (PMINDEX_WITH_<FAMILY>), family by
// family, in the order RegisteredIndexNames lists them within a group.
std::vector<IndexRegistration> BuiltinIndexes();

}  // namespace pmindex

#endif  // PMINDEX_CORE_BUILTIN_INDEXES_H_
