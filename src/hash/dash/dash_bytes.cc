// Dash's variable-length-key mode (index parameter keys=bytes): the key records (layout.h,
// KeyRecord) and the bytes-mode entry points. The paths themselves are the integer mode's,
// instantiated with BytesMatch (dash.h); crash arguments: dash.h, "keys=bytes".
#include <cstring>
#include <string>

#include "hash/dash/dash.h"
#include "pm/alloc.h"
#include "pm/mutant.h"

namespace pmindex::hash::dash {

namespace {
// A record's bytes are written before the slot that names it is committed and never
// changed; a reader may still follow a racy key word to a record being written (its
// validation then fails). Under TSan both sides are relaxed byte atomics so that the race
// the version check absorbs is not reported; elsewhere memcpy and memcmp.
void CopyIn(char* dst, std::string_view src) {
#ifdef PMINDEX_TSAN
  for (size_t i = 0; i < src.size(); ++i) __atomic_store_n(dst + i, src[i], __ATOMIC_RELAXED);
#else
  std::memcpy(dst, src.data(), src.size());
#endif
}
bool Equal(const char* rec, std::string_view key) {
#ifdef PMINDEX_TSAN
  for (size_t i = 0; i < key.size(); ++i)
    if (__atomic_load_n(rec + i, __ATOMIC_RELAXED) != key[i]) return false;
  return true;
#else
  return std::memcmp(rec, key.data(), key.size()) == 0;
#endif
}
}  // namespace

// Written whole and persisted before any slot names it: a crash before the slot's commit
// leaves a block no slot names (freed by the allocator rebuild).
Result<uint64_t> DashTable::new_record(std::string_view key) {
  Result<uint64_t> off = pool_->allocator().allocate(KeyRecordBytes(key.size()));
  if (!off.ok()) return off.status();
  auto* rec = reinterpret_cast<KeyRecord*>(base_ + *off);
  Store(rec->length, uint64_t{key.size()});
  CopyIn(rec->bytes, key);
  if (!pm::mutant("dash.key_record_after_commit"))
    pc_->persist(rec, KeyRecordBytes(key.size()));  // before the slot's commit
  return *off;
}

std::string_view DashTable::record_view(uint64_t word) const {
  if (word == 0 || word % 8 != 0 || word + 8 > pool_->size()) return {};
  const auto* rec = reinterpret_cast<const KeyRecord*>(base_ + word);
  const uint64_t len = Load(rec->length);
  if (len == 0 || len > kMaxKeyBytes || word + KeyRecordBytes(len) > pool_->size()) return {};
  return {rec->bytes, len};
}

bool DashTable::record_equals(uint64_t word, std::string_view key) const {
  if (word == 0 || word % 8 != 0 || word + KeyRecordBytes(key.size()) > pool_->size())
    return false;
  const auto* rec = reinterpret_cast<const KeyRecord*>(base_ + word);
  return Load(rec->length) == key.size() && Equal(rec->bytes, key);
}

std::string DashTable::slot_key(uint64_t word) const {
  if (!bytes_) return std::string(IntKey(word).view());
  const std::string_view k = record_view(word);
#ifdef PMINDEX_TSAN
  std::string out(k.size(), '\0');
  for (size_t i = 0; i < k.size(); ++i) out[i] = __atomic_load_n(k.data() + i, __ATOMIC_RELAXED);
  return out;
#else
  return std::string(k);
#endif
}

std::string DashTable::record_breach(uint64_t word, const KeyHash& kh, uint8_t fp) const {
  const std::string_view k = record_view(word);
  if (k.empty()) return "key word names no key record (offset or length out of range)";
  if (pool_->allocator().block_size(word) < KeyRecordBytes(k.size()))
    return "key record longer than its block";
  if (fp != kh.Fp()) return "fingerprint differs from the key record's hash";
  return {};
}

Status DashTable::bytes_put(Op op, std::string_view key, std::string_view value) {
  if (Status s = invalid(key, value, true); !s.ok()) return s;
  auto guard = pool_->allocator().epoch_guard();  // splits read records
  return put(op, BytesMatch{this, key}, IntValue::Decode(value));
}

Status DashTable::bytes_remove(std::string_view key) {
  if (Status s = invalid(key, {}, false); !s.ok()) return s;
  auto guard = pool_->allocator().epoch_guard();
  return erase(BytesMatch{this, key});
}

}  // namespace pmindex::hash::dash
