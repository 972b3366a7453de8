// WORT: the shared persistent radix tree instantiated with WORT's 16-way node.
#include "radix/wort/wort.h"

#include "radix/common/persistent_radix_tree_point.h"
#include "radix/common/persistent_radix_tree_walk.h"

namespace pmindex::radix {

template class PersistentRadixTree<WortOps>;

}  // namespace pmindex::radix
