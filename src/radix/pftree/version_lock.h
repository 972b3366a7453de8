// PFtree's node lock is the library's version-lock word (pm/version_lock.h), in the pool
// generation: every inner node and leaf array carries one in its persistent header, never
// flushed, so a lock left by a crashed process is free after reopening.
#ifndef PMINDEX_RADIX_PFTREE_VERSION_LOCK_H_
#define PMINDEX_RADIX_PFTREE_VERSION_LOCK_H_

#include "pm/version_lock.h"

namespace pmindex::pftree {

using pm::VersionLock;

}  // namespace pmindex::pftree

#endif  // PMINDEX_RADIX_PFTREE_VERSION_LOCK_H_
