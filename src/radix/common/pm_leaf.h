// PmLeaf: the persistent leaf of WORT and WOART, one key-value pair in its own pool block.
//
//   offset  size              field
//   0       2                 key_len    (1 .. kMaxKeySize)
//   2       1                 value_len  (0 .. kMaxValueSize)
//   3       5                 reserved (0)
//   8       round8(value_len) value      (a value of <= 8 bytes is the one word at offset 8)
//   8+round8(value_len)       key bytes
// Line 0 (bytes 0..63) holds the lengths, an 8-byte value and a key of up to 48 bytes, so
// the common integer leaf (8-byte key, 8-byte value, 24 bytes) is one cache line, one flush.
//
// Crash argument: a leaf is written and persisted before the 8-byte child word that links
// it; until then it is unreachable and the allocator rebuild reclaims it. An update of a
// value of <= 8 bytes to one of the same length is a single aligned 8-byte store into the
// value word (failure-atomic); any other update writes a new leaf and swaps the child word.
#ifndef PMINDEX_RADIX_COMMON_PM_LEAF_H_
#define PMINDEX_RADIX_COMMON_PM_LEAF_H_

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string_view>

#include "radix/common/key.h"

namespace pmindex::radix {

struct PmLeaf {
  uint16_t key_len;
  uint8_t value_len;
  uint8_t reserved[5];
  uint64_t value_word;  // first 8 value bytes; longer values continue after it

  static constexpr size_t RoundValue(size_t n) { return n <= 8 ? 8 : (n + 7) & ~size_t{7}; }
  static constexpr size_t SizeFor(size_t key_len, size_t value_len) {
    return 8 + RoundValue(value_len) + key_len;
  }

  const uint8_t* value_ptr() const { return reinterpret_cast<const uint8_t*>(&value_word); }
  const uint8_t* key_ptr() const {
    return reinterpret_cast<const uint8_t*>(this) + 8 + RoundValue(value_len);
  }
  std::string_view key() const {
    return {reinterpret_cast<const char*>(key_ptr()), key_len};
  }
  std::string_view value() const {
    return {reinterpret_cast<const char*>(value_ptr()), value_len};
  }
  size_t size() const { return SizeFor(key_len, value_len); }
  // The value, read as a lock-free lookup must: a value of <= 8 bytes with one atomic load
  // of the value word (an in-place update gives the old or the new value, never a mix);
  // longer values are never changed in place.
  void LoadValue(std::string* out) const {
    if (value_len <= 8) {
      const uint64_t v = std::atomic_ref<uint64_t>(const_cast<uint64_t&>(value_word))
                             .load(std::memory_order_relaxed);
      if (value_len == 8 && out->size() == 8) [[likely]] {  // one store, v stays in a register
        std::memcpy(out->data(), &v, 8);
        return;
      }
      CopyValue(&v, value_len, out);
    } else {
      CopyValue(value_ptr(), value_len, out);
    }
  }
  bool KeyEquals(std::string_view k) const {
    if (k.size() != key_len) return false;
    if (key_len == 8) {  // the integer keys: one compare of two words, not a memcmp call
      uint64_t a, b;
      std::memcpy(&a, k.data(), 8);
      std::memcpy(&b, key_ptr(), 8);
      return a == b;
    }
    return std::memcmp(k.data(), key_ptr(), key_len) == 0;
  }
  // KeyEquals for an 8-byte key whose bytes, as stored, are `raw`: one 8-byte compare.
  bool KeyEquals8(uint64_t raw) const {
    if (key_len != 8) return false;
    uint64_t b;
    std::memcpy(&b, key_ptr(), 8);
    return b == raw;
  }

  // Fills a block of at least SizeFor(key.size(), value.size()) bytes (not persisted).
  static PmLeaf* Init(void* block, std::string_view key, std::string_view value) {
    auto* l = static_cast<PmLeaf*>(block);
    l->key_len = static_cast<uint16_t>(key.size());
    l->value_len = static_cast<uint8_t>(value.size());
    std::memset(l->reserved, 0, sizeof(l->reserved));
    if (value.size() == 8 && key.size() == 8) [[likely]] {  // the integer pairs: no memcpy calls
      std::memcpy(&l->value_word, value.data(), 8);
      std::memcpy(reinterpret_cast<uint8_t*>(l) + 16, key.data(), 8);
      return l;
    }
    l->value_word = 0;
    std::memcpy(&l->value_word, value.data(), value.size());
    std::memcpy(const_cast<uint8_t*>(l->key_ptr()), key.data(), key.size());
    return l;
  }
  // The word a same-length value of <= 8 bytes is committed with.
  static uint64_t PackSmallValue(std::string_view v) {
    uint64_t w = 0;
    std::memcpy(&w, v.data(), v.size());
    return w;
  }
};
static_assert(sizeof(PmLeaf) == 16);
static_assert(offsetof(PmLeaf, value_len) == 2);
static_assert(offsetof(PmLeaf, value_word) == 8);

// The two ways a lock-free lookup holds its key (PersistentRadixTree::Find): any key as
// bytes, and the common 8-byte key as one register, whose units are a shift and a mask
// each (no byte load, no per-unit shift count from the unit's parity) and whose leaf
// compare is one 8-byte compare. Same answers.
template <int kBits>
struct ByteKey {
  std::string_view s;
  uint32_t units() const { return static_cast<uint32_t>(KeySpan<kBits>::units(s.size())); }
  uint8_t unit(uint32_t i) const { return KeySpan<kBits>::unit(Bytes(s), i); }
  bool Matches(const PmLeaf& l) const { return l.KeyEquals(s); }
};
template <int kBits>
struct WordKey {
  uint64_t raw;  // the 8 key bytes as stored (leaf compare)
  uint64_t be;   // the same bytes as a big-endian number (units)
  static WordKey Of(std::string_view s) {
    WordKey k;
    std::memcpy(&k.raw, s.data(), 8);
    k.be = __builtin_bswap64(k.raw);
    return k;
  }
  static constexpr uint32_t units() { return KeySpan<kBits>::units(8); }
  uint8_t unit(uint32_t i) const { return KeySpan<kBits>::unit64(be, i); }
  bool Matches(const PmLeaf& l) const { return l.KeyEquals8(raw); }
};

}  // namespace pmindex::radix

#endif  // PMINDEX_RADIX_COMMON_PM_LEAF_H_
