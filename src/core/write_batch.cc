#include "pmindex/write_batch.h"

#include <cstring>

#include "core/write_batch_log.h"

namespace pmindex {

void WriteBatch::Append(OpType type, std::string_view key, std::string_view value) {
  char header[kOpHeaderSize];
  header[0] = static_cast<char>(type);
  const uint32_t key_size = static_cast<uint32_t>(key.size());
  const uint32_t value_size = static_cast<uint32_t>(value.size());
  std::memcpy(header + 1, &key_size, 4);
  std::memcpy(header + 5, &value_size, 4);
  rep_.append(header, kOpHeaderSize);
  rep_.append(key);
  rep_.append(value);
  ++count_;
}

void WriteBatch::Put(std::string_view key, std::string_view value) {
  Append(OpType::kPut, key, value);
}

void WriteBatch::Delete(std::string_view key) { Append(OpType::kDelete, key, {}); }

void WriteBatch::Clear() {
  rep_.clear();
  count_ = 0;
}

void WriteBatch::ForEach(
    FunctionRef<bool(size_t, OpType, std::string_view, std::string_view)> fn) const {
  // The batch built rep_ itself, so it decodes; the record decoder checks pool bytes.
  (void)DecodeBatchOps(rep_, count_, fn);
}

}  // namespace pmindex
