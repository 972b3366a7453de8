// Every radix tree of the library, for the registry: one line per index.
#include "radix/registrations.h"

#include "radix/art/art.h"
#include "radix/part/part.h"
#include "radix/pftree/pftree.h"
#include "radix/roart/roart.h"
#include "radix/woart/woart.h"
#include "radix/wort/wort.h"

namespace pmindex::radix {

std::vector<IndexRegistration> Registrations() {
  return {
      Wort::Registration(),             // wort/
      Woart::Registration(),            // woart/
      Art::Registration(),              // art/ (volatile)
      pftree::PFTree::Registration(),   // pftree/
      part::PArt::Registration(),       // part/
      roart::Roart::Registration(),     // roart/
  };
}

}  // namespace pmindex::radix
