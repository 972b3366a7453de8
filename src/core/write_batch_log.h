// The write-batch log: one redo record per pool that makes Index::Write atomic across a
// crash, above every index (the indexes know nothing of it).
//
// A batch is written as a record into a block of the pool's allocator, persisted, and then
// committed by ONE 8-byte failure-atomic persisted store: the pool header's batch_record
// (src/pm/pool_format.h) set to the record's offset. Then its operations are applied to the
// index (Put = upsert, Delete = remove with NotFound ignored), the commit word is cleared
// and persisted, and only then is the block freed. Recovery at open (registry.cc) keeps a
// committed record's block through the allocator rebuild (VisitPendingBatch) and replays it
// after the rebuild (ReplayPendingBatch: the replay allocates, which an index's recover()
// must not); an uncommitted record is unreachable and freed by the rebuild.
//
// Crash argument, one per step (Write in write_batch_log.cc):
//   1. allocate the block: volatile; unreachable until committed, the rebuild frees it;
//   2. fill and persist the record: the commit word is still 0, so recovery ignores it;
//   3. commit (8-byte store + persist): not durable = the batch never happened; durable =
//      recovery replays every operation, and the record is durable because of step 2;
//   4. apply: each index write is durable when it returns; a crash leaves some applied and
//      the commit word set, and the replay runs every operation again: all are blind
//      writes (upsert, remove ignoring NotFound), so running a prefix twice and then the
//      whole sequence ends in the state one run leaves;
//   5. clear the commit word (store + persist): not durable = replayed again (harmless by 4);
//   6. free the block: only after 5 is durable, or a reused block could be overwritten
//      while a durable commit word still names it.
//
// Record layout (a block of at least kBatchRecordHeaderSize + payload bytes, 64-byte aligned):
//
//   offset size  field                                      cache line
//      0     8   magic "PMIBATCH"                               0
//      8     8   payload_bytes                                  0
//     16     4   op_count                                       0
//     20     4   crc: CRC32C of bytes [0, 20), then the payload 0
//     24    40   reserved (zero)                                0
//     64     n   payload: WriteBatch::Data() (write_batch.h)   1..
//
// A committed record whose magic, sizes or CRC do not check is Corruption at open: it was
// persisted before its commit, so only damage explains it.
#ifndef PMINDEX_CORE_WRITE_BATCH_LOG_H_
#define PMINDEX_CORE_WRITE_BATCH_LOG_H_

#include <cstddef>
#include <cstdint>
#include <string_view>
#include <vector>

#include "pmindex/index.h"
#include "pmindex/write_batch.h"

namespace pmindex {

struct BatchRecordHeader {
  char magic[8];
  uint64_t payload_bytes;
  uint32_t op_count;
  uint32_t crc;
  char reserved[40];
};
inline constexpr size_t kBatchRecordHeaderSize = 64;
inline constexpr char kBatchRecordMagic[8] = {'P', 'M', 'I', 'B', 'A', 'T', 'C', 'H'};
static_assert(sizeof(BatchRecordHeader) == kBatchRecordHeaderSize);
static_assert(offsetof(BatchRecordHeader, payload_bytes) == 8);
static_assert(offsetof(BatchRecordHeader, op_count) == 16);
static_assert(offsetof(BatchRecordHeader, crc) == 20);

using BatchOpFn = FunctionRef<bool(size_t position, WriteBatch::OpType type,
                                   std::string_view key, std::string_view value)>;

// Decodes `count` operations from `payload` and calls fn on each until it returns false.
// Corruption if the payload does not hold exactly `count` well-formed operations.
Status DecodeBatchOps(std::string_view payload, size_t count, BatchOpFn fn);

// Recovery, step one (before the allocator rebuild): reports the committed record's block,
// if any, so that the rebuild keeps it. Corruption if the commit word names no place a
// record can lie.
Status VisitPendingBatch(Pool& pool, BlockVisitor& visitor);
// Recovery, step two (after the rebuild): replays a committed record, clears the commit
// word and frees the block. OK also when replay met OutOfSpace: the record stays committed
// and the next Write or open completes it. Corruption for a damaged record.
Status ReplayPendingBatch(Index& index);

// The write-batch layer's mutants (src/pm/mutant.h). They belong to no index, so the
// registry lists them after the indexes' (RegisteredMutants, FindMutant); each names the
// unit test that catches it (tests/kv/write_batch_crash_test.cc).
const std::vector<MutantInfo>& WriteBatchMutants();

}  // namespace pmindex

#endif  // PMINDEX_CORE_WRITE_BATCH_LOG_H_
