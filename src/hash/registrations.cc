// Every hash index of the library, for the registry: one line per index (none yet; each gets
// its folder under src/hash/, src/hash/common/ holds what they share).
#include "hash/registrations.h"

namespace pmindex::hash {

std::vector<IndexRegistration> Registrations() { return {}; }

}  // namespace pmindex::hash
