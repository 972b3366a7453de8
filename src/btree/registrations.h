// The B+tree family's registrations. The registry (src/core) collects them when the family
// is built (PMINDEX_WITH_BTREE); nothing in the family includes core.
#ifndef PMINDEX_BTREE_REGISTRATIONS_H_
#define PMINDEX_BTREE_REGISTRATIONS_H_

#include <vector>

#include "pmindex/index.h"

namespace pmindex::btree {

// Every B+tree, in the order `pmindex list` shows them.
std::vector<IndexRegistration> Registrations();

}  // namespace pmindex::btree

#endif  // PMINDEX_BTREE_REGISTRATIONS_H_
