// BlockVisitor: how an index reports the persistent blocks it can reach, so the pool's
// allocator can rebuild its free state after a crash (doc/format.md, "Recovery").
#ifndef PMINDEX_BLOCK_VISITOR_H_
#define PMINDEX_BLOCK_VISITOR_H_

#include <cstdint>

#include "pmindex/status.h"

namespace pmindex {

// Receives every persistent block reachable from an index's root (by pool offset). Returns
// Corruption for a block reached twice or outside an allocated chunk; the index must stop
// and return that Status.
class BlockVisitor {
 public:
  virtual ~BlockVisitor() = default;
  virtual Status visit(uint64_t offset) = 0;
};

}  // namespace pmindex

#endif  // PMINDEX_BLOCK_VISITOR_H_
