// The write-batch log (write_batch_log.h has the protocol, the record layout and the crash
// argument of each step) and CheckedIndex::Write, which runs it.
#include "core/write_batch_log.h"

#include <cstring>
#include <mutex>
#include <string>

#include "core/checked_index.h"
#include "pm/alloc.h"
#include "pm/crc32c.h"
#include "pm/mutant.h"
#include "pm/persist.h"
#include "pm/pool_format.h"

namespace pmindex {
namespace {

uint64_t* CommitWord(Pool& pool) {
  return &reinterpret_cast<pm::PoolHeader*>(pool.base())->batch_record;
}

uint64_t LoadCommit(Pool& pool) { return __atomic_load_n(CommitWord(pool), __ATOMIC_ACQUIRE); }

// The one failure-atomic store that commits (offset) or retires (0) a record.
void StoreCommit(Pool& pool, uint64_t offset) {
  uint64_t* word = CommitWord(pool);
  __atomic_store_n(word, offset, __ATOMIC_RELEASE);
  pool.persist_context().persist(word, sizeof(*word));
}

uint32_t RecordCrc(const BatchRecordHeader& h, std::string_view payload) {
  return pm::crc32c_extend(pm::crc32c(&h, offsetof(BatchRecordHeader, crc)), payload.data(),
                           payload.size());
}

// Room a batch may need while it is applied: an index write allocates at most a node or a
// leaf or two (16 KiB covers the largest default node, a CCEH segment), plus its bytes.
uint64_t SpaceNeeded(const WriteBatch& batch) {
  return batch.Count() * (16 << 10) + 2 * batch.Data().size() + kBatchRecordHeaderSize;
}

Status CheckSpace(Pool& pool, const WriteBatch& batch) {
  pm::Allocator& a = pool.allocator();
  const uint64_t total = a.chunk_count() * pm::kChunkSize;
  const uint64_t used = a.allocated_bytes();
  const uint64_t free_bytes = used < total ? total - used : 0;
  const uint64_t need = SpaceNeeded(batch);
  if (free_bytes >= need) return Status::OK();
  return Status::OutOfSpace(pool.path() + ": a batch of " + std::to_string(batch.Count()) +
                            " operations reserves " + std::to_string(need) + " bytes; " +
                            std::to_string(free_bytes) + " are free (nothing written)");
}

// Steps 1 and 2: the record, allocated, filled and persisted (not yet committed).
Result<uint64_t> WriteRecord(Pool& pool, const WriteBatch& batch) {
  const std::string_view payload = batch.Data();
  Result<uint64_t> block = pool.allocator().allocate(kBatchRecordHeaderSize + payload.size());
  if (!block.ok()) return block.status();  // crash: nothing links the block; rebuild frees it
  char* at = pool.base() + block.value();
  BatchRecordHeader h{};
  std::memcpy(h.magic, kBatchRecordMagic, sizeof(h.magic));
  h.payload_bytes = payload.size();
  h.op_count = static_cast<uint32_t>(batch.Count());
  h.crc = RecordCrc(h, payload);
  std::memcpy(at, &h, sizeof(h));
  std::memcpy(at + kBatchRecordHeaderSize, payload.data(), payload.size());
  // Durable before the commit store (step 3) can be: a commit names a whole record.
  if (!pm::mutant("write_batch.commit_before_record_persist")) {
    pool.persist_context().persist(at, kBatchRecordHeaderSize + payload.size());
  }
  return block;
}

// Step 4: every operation, in order. Blind writes, so a replay may run them again.
Status ApplyOps(Index& index, std::string_view payload, size_t count, size_t* applied) {
  Status result;
  *applied = 0;
  Status decoded = DecodeBatchOps(
      payload, count,
      [&](size_t, WriteBatch::OpType type, std::string_view key, std::string_view value) {
        for (int attempt = 0; attempt < 2; ++attempt) {
          result = type == WriteBatch::OpType::kPut ? index.upsert(key, value)
                                                    : index.remove(key);
          if (result.IsNotFound() && type == WriteBatch::OpType::kDelete) result = Status::OK();
          // Space retired to the epochs may be freed at once; then one more try.
          if (!result.IsOutOfSpace() || index.pool() == nullptr ||
              !index.pool()->allocator().reclaim_now())
            break;
        }
        if (result.ok()) ++*applied;
        return result.ok();
      });
  return decoded.ok() ? result : decoded;
}

// Steps 4 to 6 for the record at `offset`, committed: apply, retire the commit, free.
Status ApplyCommitted(Index& index, Pool& pool, uint64_t offset) {
  const auto* h = reinterpret_cast<const BatchRecordHeader*>(pool.base() + offset);
  const std::string_view payload(pool.base() + offset + kBatchRecordHeaderSize,
                                 h->payload_bytes);
  size_t applied = 0;
  if (Status s = ApplyOps(index, payload, h->op_count, &applied); !s.ok()) {
    // The record stays committed: a crash replays it, the next Write or open completes it.
    return Status::OutOfSpace(pool.path() + ": batch committed, " + std::to_string(applied) +
                              " of " + std::to_string(h->op_count) +
                              " operations applied; the rest completes at the next Write or "
                              "open once space is freed: " +
                              s.ToString());
  }
  StoreCommit(pool, 0);            // step 5: a crash before this is durable replays again
  pool.allocator().free(offset);  // step 6: after the durable clear, never before
  return Status::OK();
}

// A record the commit word names, checked before it is replayed.
Status CheckRecord(Pool& pool, uint64_t offset) {
  const size_t block = pool.allocator().block_size(offset);
  if (block < kBatchRecordHeaderSize) {
    return Status::Corruption(pool.path() + ": batch record at " + std::to_string(offset) +
                              " lies in no allocated block");
  }
  const auto* h = reinterpret_cast<const BatchRecordHeader*>(pool.base() + offset);
  if (std::memcmp(h->magic, kBatchRecordMagic, sizeof(h->magic)) != 0 ||
      h->payload_bytes > block - kBatchRecordHeaderSize) {
    return Status::Corruption(pool.path() + ": batch record at " + std::to_string(offset) +
                              " has a bad header");
  }
  const std::string_view payload(pool.base() + offset + kBatchRecordHeaderSize,
                                 h->payload_bytes);
  if (RecordCrc(*h, payload) != h->crc) {
    return Status::Corruption(pool.path() + ": batch record at " + std::to_string(offset) +
                              " fails its checksum");
  }
  return DecodeBatchOps(payload, h->op_count, [](size_t, auto, auto, auto) { return true; });
}

// A committed record left by a crash or by an OutOfSpace while applying: replayed whole.
Status CompletePending(Index& index, Pool& pool) {
  const uint64_t offset = LoadCommit(pool);
  if (offset == 0) return Status::OK();
  if (Status s = CheckRecord(pool, offset); !s.ok()) return s;
  return ApplyCommitted(index, pool, offset);
}

std::string OpName(size_t position, size_t count) {
  return "batch operation " + std::to_string(position) + " of " + std::to_string(count) + ": ";
}

}  // namespace

Status DecodeBatchOps(std::string_view payload, size_t count, BatchOpFn fn) {
  size_t at = 0;
  for (size_t i = 0; i < count; ++i) {
    if (payload.size() - at < WriteBatch::kOpHeaderSize) {
      return Status::Corruption("batch payload ends inside operation " + std::to_string(i));
    }
    const auto type = static_cast<WriteBatch::OpType>(payload[at]);
    uint32_t key_size, value_size;
    std::memcpy(&key_size, payload.data() + at + 1, 4);
    std::memcpy(&value_size, payload.data() + at + 5, 4);
    at += WriteBatch::kOpHeaderSize;
    const bool known = type == WriteBatch::OpType::kPut ||
                       (type == WriteBatch::OpType::kDelete && value_size == 0);
    if (!known || uint64_t{key_size} + value_size > payload.size() - at) {
      return Status::Corruption("batch operation " + std::to_string(i) + " is malformed");
    }
    const std::string_view key = payload.substr(at, key_size);
    const std::string_view value = payload.substr(at + key_size, value_size);
    at += uint64_t{key_size} + value_size;
    if (!fn(i, type, key, value)) return Status::OK();
  }
  if (at != payload.size()) return Status::Corruption("batch payload has trailing bytes");
  return Status::OK();
}

Status VisitPendingBatch(Pool& pool, BlockVisitor& visitor) {
  const uint64_t offset = LoadCommit(pool);
  if (offset == 0) return Status::OK();
  if (offset % 64 != 0 || offset >= pool.size()) {
    return Status::Corruption(pool.path() + ": batch commit word " + std::to_string(offset) +
                              " names no block");
  }
  return visitor.visit(offset);
}

Status ReplayPendingBatch(Index& index) {
  Pool* pool = index.pool();
  if (pool == nullptr) return Status::OK();
  Status s = CompletePending(index, *pool);
  return s.IsOutOfSpace() ? Status::OK() : s;
}

const std::vector<MutantInfo>& WriteBatchMutants() {
  static const std::vector<MutantInfo>* mutants = new std::vector<MutantInfo>{
      {"write_batch.commit_before_record_persist",
       "the commit word is stored and persisted before the record is: a crash can leave a "
       "commit naming a record whose lines never reached media",
       "", "WriteBatchMutantTest.CommitBeforeRecordPersistIsCaught"},
      {"write_batch.clear_before_apply",
       "the commit word is cleared and persisted before the operations are applied: a crash "
       "while applying leaves part of the batch and no record to replay",
       "", "WriteBatchMutantTest.ClearBeforeApplyIsCaught"},
  };
  return *mutants;
}

Status CheckedIndex::check_batch(const WriteBatch& batch) const {
  Status result;
  batch.ForEach([&](size_t i, WriteBatch::OpType type, std::string_view key,
                    std::string_view value) {
    const bool fits = type == WriteBatch::OpType::kPut ? pair_fits(key, value) : key_fits(key);
    if (fits) return true;
    result = type == WriteBatch::OpType::kPut ? check_pair(key, value) : check_key(key);
    result = Status::InvalidArgument(OpName(i, batch.Count()) + std::string(result.message()));
    return false;
  });
  return result;
}

Status CheckedIndex::Write(const WriteBatch& batch) {
  if (index_ == nullptr) [[unlikely]]
    return Status::InvalidArgument("index is closed");
  if (Status s = check_batch(batch); !s.ok()) return s;  // before anything is written
  std::lock_guard<pm::RwLock> lock(batch_lock_);  // the pool's one record slot
  Pool* pool = index_->pool();
  if (pool == nullptr || !traits_.persistent) {
    size_t applied;  // no pool, no record: a crash keeps nothing or the baseline's own state
    return ApplyOps(*index_, batch.Data(), batch.Count(), &applied);
  }
  // A batch left committed by an OutOfSpace while applying completes first (an empty batch
  // does only that).
  if (Status s = CompletePending(*index_, *pool); !s.ok()) return s;
  if (batch.Count() == 0) return Status::OK();
  if (Status s = CheckSpace(*pool, batch); !s.ok()) return s;
  Result<uint64_t> record = WriteRecord(*pool, batch);
  if (!record.ok()) return record.status();
  StoreCommit(*pool, record.value());  // step 3: the batch's one commit point
  if (pm::mutant("write_batch.commit_before_record_persist")) {
    pool->persist_context().persist(pool->base() + record.value(),
                                    kBatchRecordHeaderSize + batch.Data().size());
  }
  if (pm::mutant("write_batch.clear_before_apply")) StoreCommit(*pool, 0);
  return ApplyCommitted(*index_, *pool, record.value());
}

}  // namespace pmindex
