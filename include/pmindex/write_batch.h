// WriteBatch: a list of writes applied together by Index::Write, atomically across a crash
// on every persistent index (doc/kv.md, "Atomic write batches").
//
//   WriteBatch batch;
//   batch.Put(IntKey(1), IntValue(10));
//   batch.Delete(IntKey(2));
//   Status s = index->Write(batch);   // both writes survive a crash, or neither
//
// Operations apply in the order they were added: Put as upsert, Delete as remove (deleting
// an absent key is no error); a later operation on the same key wins. The batch copies keys
// and values: the caller's buffers may change after Put / Delete returns.
//
// The operations are held serialised, in the form the pool's batch record stores them
// (doc/kv.md): per operation a 9-byte header (type: 1 byte; key length, value length: 4
// bytes each, little-endian), then the key and value bytes.
//
// Thread safety: a batch is a plain value; one thread at a time may change it. Index::Write
// only reads it.
#ifndef PMINDEX_WRITE_BATCH_H_
#define PMINDEX_WRITE_BATCH_H_

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "pmindex/function_ref.h"

namespace pmindex {

class WriteBatch {
 public:
  // On-media values (a batch record in a pool stores them): never reuse or renumber one.
  enum class OpType : uint8_t { kPut = 1, kDelete = 2 };
  // Bytes of one operation's header in Data().
  static constexpr size_t kOpHeaderSize = 9;

  WriteBatch() = default;

  // Adds key -> value (an upsert when applied).
  void Put(std::string_view key, std::string_view value);
  // Adds the removal of key.
  void Delete(std::string_view key);
  // Removes every operation.
  void Clear();
  // Operations added since construction or Clear.
  size_t Count() const { return count_; }

  // The serialised operations (the batch record's payload).
  std::string_view Data() const { return rep_; }
  // Calls fn(position, type, key, value) on each operation in order (value is empty for a
  // Delete); stops at the first fn that returns false.
  void ForEach(
      FunctionRef<bool(size_t position, OpType type, std::string_view key, std::string_view value)>
          fn) const;

 private:
  void Append(OpType type, std::string_view key, std::string_view value);

  std::string rep_;
  size_t count_ = 0;
};

}  // namespace pmindex

#endif  // PMINDEX_WRITE_BATCH_H_
