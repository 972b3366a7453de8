#include "core/builtin_indexes.h"

#include "radix/art/art.h"
#include "radix/pftree/pftree.h"
#include "radix/woart/woart.h"
#include "radix/wort/wort.h"

namespace pmindex {

std::vector<IndexRegistration> BuiltinIndexes() {
  std::vector<IndexRegistration> all = btree::Registrations();
  all.push_back(radix::Wort::Registration());
  all.push_back(radix::Woart::Registration());
  all.push_back(radix::Art::Registration());
  all.push_back(pftree::PFTree::Registration());
  return all;
}

}  // namespace pmindex
