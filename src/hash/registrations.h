// The hash family's registrations. The registry (src/core) collects them when the family is
// built (PMINDEX_WITH_HASH); nothing in the family includes core.
#ifndef PMINDEX_HASH_REGISTRATIONS_H_
#define PMINDEX_HASH_REGISTRATIONS_H_

#include <vector>

#include "pmindex/index.h"

namespace pmindex::hash {

// Every hash index, in the order `pmindex list` shows them.
std::vector<IndexRegistration> Registrations();

}  // namespace pmindex::hash

#endif  // PMINDEX_HASH_REGISTRATIONS_H_
