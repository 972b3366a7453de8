// Core collects the families; no family includes core.
#include "core/builtin_indexes.h"

#if PMINDEX_WITH_BTREE
#include "btree/registrations.h"
#endif
#if PMINDEX_WITH_RADIX
#include "radix/registrations.h"
#endif
#if PMINDEX_WITH_HASH
#include "hash/registrations.h"
#endif

namespace pmindex {
namespace {

void Append(std::vector<IndexRegistration>* all, std::vector<IndexRegistration> family) {
  for (IndexRegistration& r : family) all->push_back(std::move(r));
}

}  // namespace

std::vector<IndexRegistration> BuiltinIndexes() {
  std::vector<IndexRegistration> all;
#if PMINDEX_WITH_BTREE
  Append(&all, btree::Registrations());
#endif
#if PMINDEX_WITH_RADIX
  Append(&all, radix::Registrations());
#endif
#if PMINDEX_WITH_HASH
  Append(&all, hash::Registrations());
#endif
  return all;
}

}  // namespace pmindex
