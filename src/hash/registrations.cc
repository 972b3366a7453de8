// Every hash index of the library, for the registry: one line per index (each has its
// folder under src/hash/, src/hash/common/ holds what they share).
#include "hash/registrations.h"

#include "hash/cceh/cceh.h"
#include "hash/pclht/pclht.h"
#include "hash/dash/dash.h"
#include "hash/levelhash/levelhash.h"

namespace pmindex::hash {

std::vector<IndexRegistration> Registrations() {
  return {
      cceh::Registration(),   // cceh/cceh.h
      pclht::Registration(),  // pclht/pclht.h
      dash::Registration(),  // dash/dash.h
      levelhash::Registration(),  // levelhash/levelhash.h
  };
}

}  // namespace pmindex::hash
