// AppLog: a test-only persistent index that lives entirely in this folder, to show that an
// index is added without touching anything central: its registration (app_log.cc) carries
// its name, pool kind, traits, one mutant and the crash scenario it takes part in, and this
// folder's CMakeLists.txt links it into every test program. The API suites, the lockstep
// model test and the crash campaign find it in the registry.
//
// Design: an append-only log of 64-byte records in 4 KiB blocks, and a DRAM std::map rebuilt
// from the log on every open. Keys and values are exactly 8 bytes (IntKey order).
//
// Layout. The first 8 bytes of the pool's root area hold the offset of the first log block
// (0 = empty). A log block is 4 KiB:
//
//   offset size field                     line
//      0     8  next   (next block, 0 = none)  0
//      8     8  count  (records committed)     0
//     16    48  unused                          0
//     64    64  record[0]                       1
//    ...
//   4032    64  record[62]                      63
//
// A record (one cache line): key (8, numeric), value (8), op (8: 1 put, 2 delete), 40 unused.
//
// Crash argument. A write fills record[count] and persists it, then stores count + 1 (8-byte
// failure-atomic) and persists it: the count is the commit, so a record is either committed
// whole or ignored. A full block's successor is initialised and persisted before the 8-byte
// store of `next` links it (an unlinked block is freed by the allocator rebuild). Replay in
// log order gives the last committed state of each key.
//
// Thread safety: one reader-writer lock around every operation.
#ifndef PMINDEX_TESTS_SAMPLE_INDEX_APP_LOG_H_
#define PMINDEX_TESTS_SAMPLE_INDEX_APP_LOG_H_

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <shared_mutex>

#include "pmindex/index.h"

namespace pmindex::sample {

struct LogRecord {
  uint64_t key;
  uint64_t value;
  uint64_t op;  // kPut or kDelete
  uint8_t unused[40];
};
static_assert(sizeof(LogRecord) == 64);

struct LogBlock {
  static constexpr size_t kRecords = 63;
  uint64_t next;
  uint64_t count;
  uint8_t unused[48];
  LogRecord records[kRecords];
};
static_assert(sizeof(LogBlock) == 4096);
static_assert(offsetof(LogBlock, count) == 8);
static_assert(offsetof(LogBlock, records) == 64);

class AppLog final : public Index {
 public:
  static constexpr uint64_t kPut = 1;
  static constexpr uint64_t kDelete = 2;

  explicit AppLog(std::unique_ptr<Pool> pool);
  ~AppLog() override;

  const IndexTraits& traits() const override;
  Status insert(std::string_view key, std::string_view value) override;
  Status update(std::string_view key, std::string_view value) override;
  Status upsert(std::string_view key, std::string_view value) override;
  Status remove(std::string_view key) override;
  Status lookup(std::string_view key, std::string* value) override;
  size_t scan(std::string_view start, size_t max_count, ScanCallback fn) override;
  Status verify() override;
  IndexStats stats() override;
  Status recover() override;
  Status visit_blocks(BlockVisitor& visitor) override;
  Pool* pool() override { return pool_.get(); }
  Status close() override;

 private:
  enum class Need { kAbsent, kPresent, kAny };
  Status Write(std::string_view key, std::string_view value, uint64_t op, Need need);
  Status Append(uint64_t key, uint64_t value, uint64_t op);  // caller holds mu_ exclusively
  Result<LogBlock*> TailWithRoom();
  LogBlock* block_at(uint64_t offset) const;
  uint64_t* head() const;

  std::shared_mutex mu_;
  std::unique_ptr<Pool> pool_;
  std::map<uint64_t, uint64_t> map_;  // DRAM: the log replayed
  LogBlock* tail_ = nullptr;
  uint64_t blocks_ = 0;
};

}  // namespace pmindex::sample

#endif  // PMINDEX_TESTS_SAMPLE_INDEX_APP_LOG_H_
