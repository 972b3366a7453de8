// The six hybrid B+trees by name; each is HybridTree over one leaf layout.
#include "btree/fptree_leaf.h"
#include "btree/hybrid_tree.h"
#include "btree/nvtree_leaf.h"
#include "btree/rntree_leaf.h"
#include "btree/wbtree_leaf.h"
#include "btree/wbtree_so_leaf.h"
#include "core/builtin_indexes.h"

namespace pmindex::btree {

std::vector<IndexRegistration> Registrations() {
  return {MakeRegistration<NVTreeLayout>(),         MakeRegistration<WBTreeLayout>(),
          MakeRegistration<WBTreeSOLayout>(),       MakeRegistration<FPTreeLayout>(),
          MakeRegistration<RNTreeLayout<false>>(), MakeRegistration<RNTreeLayout<true>>()};
}

}  // namespace pmindex::btree
