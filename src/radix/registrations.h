// The radix family's registrations. The registry (src/core) collects them when the family
// is built (PMINDEX_WITH_RADIX); nothing in the family includes core.
#ifndef PMINDEX_RADIX_REGISTRATIONS_H_
#define PMINDEX_RADIX_REGISTRATIONS_H_

#include <vector>

#include "pmindex/index.h"

namespace pmindex::radix {

// Every radix tree, in the order `pmindex list` shows them.
std::vector<IndexRegistration> Registrations();

}  // namespace pmindex::radix

#endif  // PMINDEX_RADIX_REGISTRATIONS_H_
