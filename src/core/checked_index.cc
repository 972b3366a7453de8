#include "core/checked_index.h"

#include <string>

namespace pmindex {
namespace {

Status Closed() { return Status::InvalidArgument("index is closed"); }

}  // namespace

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
  if (index_ == nullptr) [[unlikely]]
    return Closed();
  if (!pair_fits(key, value)) [[unlikely]]
    return check_pair(key, value);
  return index_->insert(key, value);
}

Status CheckedIndex::update(std::string_view key, std::string_view value) {
  if (index_ == nullptr) [[unlikely]]
    return Closed();
  if (!pair_fits(key, value)) [[unlikely]]
    return check_pair(key, value);
  return index_->update(key, value);
}

Status CheckedIndex::upsert(std::string_view key, std::string_view value) {
  if (index_ == nullptr) [[unlikely]]
    return Closed();
  if (!pair_fits(key, value)) [[unlikely]]
    return check_pair(key, value);
  return index_->upsert(key, value);
}

Status CheckedIndex::remove(std::string_view key) {
  if (index_ == nullptr) [[unlikely]]
    return Closed();
  if (!key_fits(key)) [[unlikely]]
    return check_key(key);
  return index_->remove(key);
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
  return index_->scan(start, max_count, fn);
}

Status CheckedIndex::scan_checked(std::string_view start, size_t max_count, ScanCallback fn,
                                  size_t* count) {
  if (index_ == nullptr) [[unlikely]] {
    if (count != nullptr) *count = 0;
    return Closed();
  }
  return index_->scan_checked(start, max_count, fn, count);
}

Status CheckedIndex::for_each(ScanCallback fn) {
  if (index_ == nullptr) [[unlikely]]
    return Closed();
  return index_->for_each(fn);
}

Status CheckedIndex::verify() { return index_ ? index_->verify() : Closed(); }

IndexStats CheckedIndex::stats() { return index_ ? index_->stats() : IndexStats{}; }

Status CheckedIndex::recover() { return index_ ? index_->recover() : Closed(); }

Status CheckedIndex::visit_blocks(BlockVisitor& visitor) {
  return index_ ? index_->visit_blocks(visitor) : Closed();
}

Status CheckedIndex::close() {
  if (index_ == nullptr) return Status::OK();  // idempotent
  Status s = index_->close();
  index_.reset();
  return s;
}

}  // namespace pmindex
