// The on-media pool header (doc/format.md has the whole file layout).
#ifndef PMINDEX_PM_POOL_FORMAT_H_
#define PMINDEX_PM_POOL_FORMAT_H_

#include <cstddef>
#include <cstdint>

#include "pmindex/pool.h"

namespace pmindex::pm {

inline constexpr char kPoolMagic[8] = {'P', 'M', 'I', 'N', 'D', 'E', 'X', '1'};
// 2: PFtree leaf arrays may hold padding records and be shared by several Node48/Node256
// slots, and its Node4/Node16 keys may be unsorted. 3: the pool holds out-of-line values
// (max_value_size != 0, src/core/value_store.h); only such pools are written as version 3,
// so that a build without the value store refuses them, and every other pool stays version 2.
// A build reads every version up to its own (version 1 pools are version 2 pools that use
// none of that) and refuses newer ones.
inline constexpr uint32_t kFormatVersion = 3;
inline constexpr uint32_t kFormatVersionInlineValues = 2;  // what pools without the store get
inline constexpr uint64_t kHeaderSize = 4096;
inline constexpr uint64_t kMaxValueSizeLimit = 1ull << 30;  // Options::max_value_size at most
inline constexpr uint64_t kPoolAlignment = 2ull << 20;  // pool sizes are multiples of 2 MiB

// The first 4 KiB of a pool file.
//
//   offset size  field                 cache line  XPLine
//      0     8   magic "PMINDEX1"           0         0     static part: written once at
//      8     4   format_version             0         0     creation, covered by
//     12     4   kind (IndexKind)           0         0     header_crc
//     16     8   pool_size                  0         0
//     24     8   chunk_size                 0         0
//     32     8   chunk_table_offset         0         0
//     40     8   chunk_count                0         0
//     48     8   data_offset                0         0
//     56     8   created_unix               0         0
//     64    16   creator_version            1         0
//     80   128   index_params             1-3         0
//    208     8   max_value_size             3         0     0: values inline only
//    216    36   reserved (zero)            3         0
//    252     4   header_crc (CRC32C of [0, 252))  3   0
//    256     8   generation                 4         1     dynamic part: each field an
//    264     8   clean (1 closed, 0 open)   4         1     8-byte failure-atomic store,
//    272     8   root offset                4         1     not covered by the checksum
//    280     8   batch_record               4         1     (the write-batch commit word)
//    288   736   reserved (zero)          4-15      1-3
//   1024  2048   root area (the index's)  16-47     4-11
//   3072  1024   reserved (zero)          48-63    12-15
struct PoolHeader {
  char magic[8];
  uint32_t format_version;
  uint32_t kind;
  uint64_t pool_size;
  uint64_t chunk_size;
  uint64_t chunk_table_offset;
  uint64_t chunk_count;
  uint64_t data_offset;
  uint64_t created_unix;
  char creator_version[16];
  char index_params[kIndexParamsSize];
  uint64_t max_value_size;  // Options::max_value_size at creation; 0: no out-of-line values
  char reserved0[36];
  uint32_t header_crc;
  // ---- dynamic part ----
  uint64_t generation;
  uint64_t clean;
  uint64_t root;
  // The write-batch commit word (src/core/write_batch_log.h): 0, or the offset of the one
  // committed, not yet fully applied batch record, replayed at open.
  uint64_t batch_record;
  char reserved1[736];
  char root_area[kRootAreaSize];
  char reserved2[1024];
};

inline constexpr size_t kHeaderCrcCovered = 252;
static_assert(sizeof(PoolHeader) == kHeaderSize);
static_assert(offsetof(PoolHeader, index_params) == 80);
static_assert(offsetof(PoolHeader, max_value_size) == 208);
static_assert(offsetof(PoolHeader, header_crc) == kHeaderCrcCovered);
static_assert(offsetof(PoolHeader, generation) == 256);
static_assert(offsetof(PoolHeader, clean) == 264);
static_assert(offsetof(PoolHeader, root) == 272);
static_assert(offsetof(PoolHeader, batch_record) == 280);
static_assert(offsetof(PoolHeader, root_area) == 1024);
static_assert(offsetof(PoolHeader, reserved2) == 3072);

}  // namespace pmindex::pm

#endif  // PMINDEX_PM_POOL_FORMAT_H_
