// Every B+tree of the library, for the registry: one line per index.
#include "btree/registrations.h"

#include "btree/fastfair/fastfair.h"
#include "btree/hybrid/fptree_leaf.h"
#include "btree/hybrid/fptree_var.h"
#include "btree/hybrid/hybrid_tree.h"
#include "btree/hybrid/nvtree_leaf.h"
#include "btree/hybrid/rntree_leaf.h"
#include "btree/hybrid/wbtree_leaf.h"
#include "btree/hybrid/wbtree_so_leaf.h"

namespace pmindex::btree {

std::vector<IndexRegistration> Registrations() {
  return {
      MakeRegistration<NVTreeLayout>(),         // hybrid/nvtree_leaf.h
      MakeRegistration<WBTreeLayout>(),         // hybrid/wbtree_leaf.h
      MakeRegistration<WBTreeSOLayout>(),       // hybrid/wbtree_so_leaf.h
      MakeRegistration<FPTreeLayout>(),         // hybrid/fptree_leaf.h
      FPTreeVarRegistration(),                  // hybrid/fptree_var.h, byte-string keys
      MakeRegistration<RNTreeLayout<false>>(),  // hybrid/rntree_leaf.h
      MakeRegistration<RNTreeLayout<true>>(),   // hybrid/rntree_leaf.h, dual slot array
      fastfair::Registration(),                 // fastfair/fastfair.h
  };
}

}  // namespace pmindex::btree
