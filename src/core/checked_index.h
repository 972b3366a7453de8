// CheckedIndex: what the registry hands out. It owns an index and enforces, once for every
// index, the promises of the Index interface that do not depend on the design:
//
//   - after close(), every operation returns InvalidArgument ("index is closed") and never
//     reaches the index (scan returns 0, stats() is empty);
//   - keys and values outside traits() limits get InvalidArgument before the index sees
//     them: lookups and removes included, so an over-long key is an error, not "absent".
//   - a write (insert, update, upsert, remove) from inside a scan, reverse_scan or for_each
//     callback of the same index, on the thread running that scan, gets Busy and never
//     reaches the index: several indexes hold their reader lock through the callback, and
//     the write would wait for it forever. A thread-local list of the scans in progress
//     marks them (one thread-local load per write when none is);
//   - iterators (NewIterator) hold a handle that close() marks, so an iterator used after
//     close reports InvalidArgument instead of reaching a closed index.
//
// Everything else is forwarded unchanged. One virtual call more per operation.
//
// Thread safety: as the wrapped index's; close() must not race other calls (as for any
// index).
#ifndef PMINDEX_CORE_CHECKED_INDEX_H_
#define PMINDEX_CORE_CHECKED_INDEX_H_

#include <atomic>
#include <memory>

#include "pm/rw_lock.h"
#include "pmindex/index.h"

namespace pmindex {

class CheckedIndex final : public Index {
 public:
  explicit CheckedIndex(std::unique_ptr<Index> index);
  ~CheckedIndex() override;

  const IndexTraits& traits() const override { return traits_; }
  Status insert(std::string_view key, std::string_view value) override;
  Status update(std::string_view key, std::string_view value) override;
  Status upsert(std::string_view key, std::string_view value) override;
  Status remove(std::string_view key) override;
  // Validates, then logs, commits and applies the batch (src/core/write_batch_log.cc).
  Status Write(const WriteBatch& batch) override;
  Status lookup(std::string_view key, std::string* value) override;
  size_t scan(std::string_view start, size_t max_count, ScanCallback fn) override;
  Status scan_checked(std::string_view start, size_t max_count, ScanCallback fn,
                      size_t* count) override;
  Status for_each(ScanCallback fn) override;
  Status reverse_scan(std::string_view start, size_t max_count, ScanCallback fn,
                      size_t* count) override;
  std::unique_ptr<Iterator> NewIterator(const IteratorOptions& options) override;
  Status exists(std::string_view key) override;
  Status count(uint64_t* n) override;
  Status lookup_into(std::string_view key, std::span<char> buffer, size_t* size) override;
  Status verify() override;
  IndexStats stats() override;
  Status recover() override;
  Status visit_blocks(BlockVisitor& visitor) override;
  Pool* pool() override { return index_ ? index_->pool() : nullptr; }
  Status close() override;

 private:
  // The limits as one comparison each (the hot path); check_* build the error when they fail.
  bool key_fits(std::string_view key) const {
    return traits_.byte_keys ? !key.empty() && key.size() <= traits_.max_key_size
                             : key.size() == 8;
  }
  bool pair_fits(std::string_view key, std::string_view value) const {
    return key_fits(key) && (traits_.byte_keys || traits_.any_value_size
                                 ? value.size() <= traits_.max_value_size
                                 : value.size() == traits_.max_value_size);
  }
  Status check_key(std::string_view key) const;
  Status check_pair(std::string_view key, std::string_view value) const;
  // Whether this thread is inside a scan callback of this index (write guard); then the
  // Busy status for a write.
  bool inside_own_scan() const;
  Status write_in_scan() const;
  // The checks every write makes before it reaches the index.
  Status check_write(std::string_view key, std::string_view value) const;

  // Write's checks: OK, or InvalidArgument naming the first operation beyond the limits.
  Status check_batch(const WriteBatch& batch) const;

  std::unique_ptr<Index> index_;  // nullptr once closed
  // Serialises batches: a pool has one batch record slot (its header's commit word).
  pm::RwLock batch_lock_;
  const IndexTraits traits_;      // a copy: valid after close
  // True until close(); shared with this index's iterators, which check it at every move.
  std::shared_ptr<std::atomic<bool>> open_ = std::make_shared<std::atomic<bool>>(true);
};

}  // namespace pmindex

#endif  // PMINDEX_CORE_CHECKED_INDEX_H_
