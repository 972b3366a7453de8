// ValueStoreIndex: values of any size (up to the pool's Options::max_value_size) on every
// persistent index, as a decorator the registry puts between the index and CheckedIndex in
// pools created with max_value_size != 0. Pools without it (the default) never see this
// layer: their values and their speed are those of the index alone.
//
// In such a pool the index stores an encoded value, never the user's bytes directly:
//
//   word form (the index holds exactly 8 bytes: B+trees, hash tables):
//     inline     bytes 0..n-1 the value (n <= 7), bytes n..6 zero, byte 7 = 0x80 | n
//     reference  the 8-byte little-endian pool offset of a ValueBlock (byte 7 = 0: offsets
//                are below 2^56), 64-byte aligned and non-zero
//   string form (the index takes byte strings of up to L >= 9 bytes: radix trees):
//     inline     the value (at most L - 1 bytes), then the byte 0x01
//     reference  the 8-byte little-endian offset, then the byte 0x02 (9 bytes)
//
// A value goes out of line when it does not fit inline: into a pool block of its own
//
//   ValueBlock   offset 0   8  length (bytes of the value)
//                offset 8   n  the value
//
// Crash argument: the block (length and bytes) is persisted before the index publishes the
// reference (the index's own commit store), so a published reference always names a whole
// value; a crash before the publish leaves an unreachable block that the allocator rebuild
// at the next open frees. An overwrite or a remove retires the old block only after the
// index published the new state; a crash before the retirement's free leaves the old block
// unreachable, and the rebuild frees it. visit_blocks reports the index's blocks and then,
// walking the index with for_each, every referenced value block.
//
// Concurrency: readers hold an epoch guard (pm/epoch.h) from reading the reference to the
// end of the copy (lookup) or of the callback (scan, for_each), and writers retire old
// blocks through the allocator's epoch, so no reader reads a freed block. Writers of one key
// are serialized by a striped pm::RwLock (held exclusively): an overwrite reads the old
// reference and publishes the new one as one step, so two writers never retire the same
// block. Writers of different keys run as concurrently as the index lets them.
//
// Thread safety: as the wrapped index's.
#ifndef PMINDEX_CORE_VALUE_STORE_H_
#define PMINDEX_CORE_VALUE_STORE_H_

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "pmindex/index.h"

namespace pmindex {

// The value store's mutants (pm/mutant.h), listed by RegisteredMutants beside the indexes'.
std::vector<MutantInfo> ValueStoreMutants();

// The pool's value limit from its header; 0 for pools without out-of-line values.
uint64_t PoolMaxValueSize(const Pool& pool);

// Wraps `index` (persistent, in a pool with PoolMaxValueSize != 0) in the value store;
// returns it unchanged where the pool has no limit recorded or the index has too little
// inline room (under 8 bytes) for a reference.
std::unique_ptr<Index> WrapValueStore(std::unique_ptr<Index> index);

}  // namespace pmindex

#endif  // PMINDEX_CORE_VALUE_STORE_H_
