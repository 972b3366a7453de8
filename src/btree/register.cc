// Registers the six hybrid B+trees by name; each is HybridTree over one leaf layout.
#include "btree/fptree_leaf.h"
#include "btree/hybrid_tree.h"
#include "btree/nvtree_leaf.h"
#include "btree/rntree_leaf.h"
#include "btree/wbtree_leaf.h"
#include "btree/wbtree_so_leaf.h"

namespace pmindex::btree {

PMINDEX_REGISTER_INDEX(MakeRegistration<NVTreeLayout>());
PMINDEX_REGISTER_INDEX(MakeRegistration<WBTreeLayout>());
PMINDEX_REGISTER_INDEX(MakeRegistration<WBTreeSOLayout>());
PMINDEX_REGISTER_INDEX(MakeRegistration<FPTreeLayout>());
PMINDEX_REGISTER_INDEX(MakeRegistration<RNTreeLayout<false>>());
PMINDEX_REGISTER_INDEX(MakeRegistration<RNTreeLayout<true>>());

}  // namespace pmindex::btree
