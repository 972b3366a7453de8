#include "core/checked_index.h"

#include <string>

#include "core/iterator_impl.h"

namespace pmindex {
namespace {

Status Closed() { return Status::InvalidArgument("index is closed"); }

// The scans (scan, reverse_scan, for_each) this thread is inside, innermost first, each a
// frame on the scanning call's stack. Only the scanning thread runs its callback, so a write
// that finds its index here comes from inside that index's callback.
struct ScanFrame {
  const CheckedIndex* index;
  const ScanFrame* outer;
};
thread_local const ScanFrame* tls_scans = nullptr;

// Pushes a frame for the lifetime of one scan call.
class ScanMark {
 public:
  explicit ScanMark(const CheckedIndex* index) : frame_{index, tls_scans} { tls_scans = &frame_; }
  ~ScanMark() { tls_scans = frame_.outer; }
  ScanMark(const ScanMark&) = delete;
  ScanMark& operator=(const ScanMark&) = delete;

 private:
  ScanFrame frame_;
};

}  // namespace

bool CheckedIndex::inside_own_scan() const {
  for (const ScanFrame* f = tls_scans; f != nullptr; f = f->outer) {
    if (f->index == this) return true;
  }
  return false;
}

Status CheckedIndex::write_in_scan() const {
  return Status::Busy(traits_.name +
                      ": write from inside a scan callback of the same index (the scan may hold "
                      "the index's lock); collect the keys and write after the scan, or use an "
                      "iterator");
}

CheckedIndex::CheckedIndex(std::unique_ptr<Index> index)
    : index_(std::move(index)), traits_(index_->traits()) {}

CheckedIndex::~CheckedIndex() {
  // Errors of an implicit close cannot be reported; close() explicitly to see them.
  (void)close();
}

Status CheckedIndex::check_key(std::string_view key) const {
  if (traits_.byte_keys) {
    if (key.empty() || key.size() > traits_.max_key_size) {
      return Status::InvalidArgument(traits_.name + ": key of " + std::to_string(key.size()) +
                                     " bytes; keys are 1.." +
                                     std::to_string(traits_.max_key_size) + " bytes");
    }
  } else if (key.size() != 8) {
    return Status::InvalidArgument(traits_.name + ": key of " + std::to_string(key.size()) +
                                   " bytes; keys are exactly 8 bytes");
  }
  return Status::OK();
}

Status CheckedIndex::check_pair(std::string_view key, std::string_view value) const {
  if (Status s = check_key(key); !s.ok()) return s;
  const bool any = traits_.byte_keys || traits_.any_value_size;
  const bool fits = any ? value.size() <= traits_.max_value_size
                        : value.size() == traits_.max_value_size;
  if (!fits) {
    return Status::InvalidArgument(traits_.name + ": value of " + std::to_string(value.size()) +
                                   " bytes; values are " +
                                   (any ? "at most " : "exactly ") +
                                   std::to_string(traits_.max_value_size) + " bytes");
  }
  return Status::OK();
}

Status CheckedIndex::insert(std::string_view key, std::string_view value) {
  if (index_ == nullptr || !pair_fits(key, value) || tls_scans != nullptr) [[unlikely]] {
    if (Status s = check_write(key, value); !s.ok()) return s;
  }
  return index_->insert(key, value);
}

Status CheckedIndex::update(std::string_view key, std::string_view value) {
  if (index_ == nullptr || !pair_fits(key, value) || tls_scans != nullptr) [[unlikely]] {
    if (Status s = check_write(key, value); !s.ok()) return s;
  }
  return index_->update(key, value);
}

Status CheckedIndex::upsert(std::string_view key, std::string_view value) {
  if (index_ == nullptr || !pair_fits(key, value) || tls_scans != nullptr) [[unlikely]] {
    if (Status s = check_write(key, value); !s.ok()) return s;
  }
  return index_->upsert(key, value);
}

Status CheckedIndex::remove(std::string_view key) {
  if (index_ == nullptr || !key_fits(key) || tls_scans != nullptr) [[unlikely]] {
    if (index_ == nullptr) return Closed();
    if (!key_fits(key)) return check_key(key);
    if (inside_own_scan()) return write_in_scan();
  }
  return index_->remove(key);
}

// The slow path of the writes' checks: which one failed, or OK where the scan this thread is
// inside is another index's.
Status CheckedIndex::check_write(std::string_view key, std::string_view value) const {
  if (index_ == nullptr) return Closed();
  if (!pair_fits(key, value)) return check_pair(key, value);
  if (inside_own_scan()) return write_in_scan();
  return Status::OK();
}

Status CheckedIndex::lookup(std::string_view key, std::string* value) {
  if (index_ == nullptr) [[unlikely]]
    return Closed();
  if (!key_fits(key)) [[unlikely]]
    return check_key(key);
  return index_->lookup(key, value);
}

size_t CheckedIndex::scan(std::string_view start, size_t max_count, ScanCallback fn) {
  if (index_ == nullptr) [[unlikely]]
    return 0;
  ScanMark mark(this);
  return index_->scan(start, max_count, fn);
}

Status CheckedIndex::scan_checked(std::string_view start, size_t max_count, ScanCallback fn,
                                  size_t* count) {
  if (index_ == nullptr) [[unlikely]] {
    if (count != nullptr) *count = 0;
    return Closed();
  }
  ScanMark mark(this);
  return index_->scan_checked(start, max_count, fn, count);
}

Status CheckedIndex::for_each(ScanCallback fn) {
  if (index_ == nullptr) [[unlikely]]
    return Closed();
  ScanMark mark(this);
  return index_->for_each(fn);
}

Status CheckedIndex::reverse_scan(std::string_view start, size_t max_count, ScanCallback fn,
                                  size_t* count) {
  if (count != nullptr) *count = 0;
  if (index_ == nullptr) [[unlikely]]
    return Closed();
  ScanMark mark(this);
  return index_->reverse_scan(start, max_count, fn, count);
}

std::unique_ptr<Iterator> CheckedIndex::NewIterator(const IteratorOptions& options) {
  // The iterator scans through this object (closed checks, the write guard) and checks
  // open_ before each scan, so it never reaches a closed index.
  return NewScanIterator(this, open_, options);
}

Status CheckedIndex::exists(std::string_view key) {
  if (index_ == nullptr) [[unlikely]]
    return Closed();
  if (!key_fits(key)) [[unlikely]]
    return check_key(key);
  return index_->exists(key);
}

Status CheckedIndex::count(uint64_t* n) {
  if (n != nullptr) *n = 0;
  if (index_ == nullptr) [[unlikely]]
    return Closed();
  ScanMark mark(this);  // the default counts with for_each
  return index_->count(n);
}

Status CheckedIndex::lookup_into(std::string_view key, std::span<char> buffer, size_t* size) {
  if (index_ == nullptr) [[unlikely]]
    return Closed();
  if (!key_fits(key)) [[unlikely]]
    return check_key(key);
  return index_->lookup_into(key, buffer, size);
}

Status CheckedIndex::verify() { return index_ ? index_->verify() : Closed(); }

IndexStats CheckedIndex::stats() { return index_ ? index_->stats() : IndexStats{}; }

Status CheckedIndex::recover() { return index_ ? index_->recover() : Closed(); }

Status CheckedIndex::visit_blocks(BlockVisitor& visitor) {
  return index_ ? index_->visit_blocks(visitor) : Closed();
}

Status CheckedIndex::close() {
  if (index_ == nullptr) return Status::OK();  // idempotent
  open_->store(false, std::memory_order_relaxed);
  Status s = index_->close();
  index_.reset();
  return s;
}

}  // namespace pmindex
