// Every hash index of the library, for the registry: one line per index (each has
// its folder under src/hash/, src/hash/common/ holds what they share).
#include "hash/registrations.h"

#include "hash/levelhash/levelhash.h"

namespace pmindex::hash {

std::vector<IndexRegistration> Registrations() {
  return {
      levelhash::Registration(),  // levelhash/levelhash.h
  };
}

}  // namespace pmindex::hash
