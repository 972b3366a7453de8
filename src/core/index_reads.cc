// The defaults of Index's read conveniences: NewIterator, count, lookup_into.
#include <cstring>
#include <string>

#include "core/iterator_impl.h"
#include "pmindex/index.h"

namespace pmindex {

std::unique_ptr<Iterator> Index::NewIterator(const IteratorOptions& options) {
  return NewScanIterator(this, nullptr, options);
}

Status Index::count(uint64_t* n) {
  uint64_t pairs = 0;
  Status s = for_each([&pairs](std::string_view, std::string_view) {
    ++pairs;
    return true;
  });
  if (n != nullptr) *n = s.ok() ? pairs : 0;
  return s;
}

Status Index::lookup_into(std::string_view key, std::span<char> buffer, size_t* size) {
  // One string per thread, reused: it allocates only when a value outgrows its capacity.
  thread_local std::string scratch;
  Status s = lookup(key, &scratch);
  if (!s.ok()) return s;
  if (size != nullptr) *size = scratch.size();
  if (scratch.size() > buffer.size()) {
    return Status::InvalidArgument(traits().name + ": value of " +
                                   std::to_string(scratch.size()) + " bytes, buffer of " +
                                   std::to_string(buffer.size()));
  }
  if (!scratch.empty()) std::memcpy(buffer.data(), scratch.data(), scratch.size());
  return Status::OK();
}

}  // namespace pmindex
