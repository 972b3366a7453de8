// Key types of the workbench: how a key id becomes key bytes.
//
//   int      8-byte unsigned integers (IntKey, big-endian), the id scrambled by a
//            multiplicative hash as PiBench does, so ids 0..n-1 are n random-looking keys
//   string   YCSB-style "user" + decimal digits of the scrambled id (5..24 bytes)
//   str:LEN  fixed-length byte strings of LEN bytes
//
// With the `sequential` distribution ids are not scrambled, so key order = id order (int
// keys ascend, string keys are zero-padded to keep lexicographic = numeric order).
// Scrambling is a bijection (multiplication by an odd constant mod 2^64, and mod 2^(8*LEN)
// for short fixed keys), so distinct ids always give distinct keys.
//
// Thread safety: KeyCodec is immutable after construction.
#ifndef PMINDEX_BENCH_KEYS_H_
#define PMINDEX_BENCH_KEYS_H_

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace pmindex::bench {

struct KeyType {
  enum class Kind { kInt, kString, kFixed };
  Kind kind = Kind::kInt;
  size_t length = 8;  // kFixed: LEN
  // "int", "string", "str:LEN".
  std::string name() const;
};
// Parses --key-type; false with *error set (LEN must be 1..kMaxFixedKeyLength).
bool ParseKeyType(std::string_view text, KeyType* type, std::string* error);
inline constexpr size_t kMaxFixedKeyLength = 4096;

class KeyCodec {
 public:
  // Room for any key this codec produces.
  static constexpr size_t kBufferSize = kMaxFixedKeyLength;

  KeyCodec(KeyType type, bool scramble) : type_(type), scramble_(scramble) {}
  // Writes the key of `id` into buf (kBufferSize bytes) and returns it.
  std::string_view encode(uint64_t id, char* buf) const;
  std::string encode(uint64_t id) const {
    char buf[kBufferSize];
    return std::string(encode(id, buf));
  }
  // Longest key produced for ids below `count`.
  size_t max_size() const;
  // Largest number of distinct keys (str:LEN with LEN < 8 holds 256^LEN).
  uint64_t capacity() const;
  const KeyType& type() const { return type_; }
  bool scrambled() const { return scramble_; }

 private:
  KeyType type_;
  bool scramble_;
};

// PiBench's multiplicative hash (odd constant: a bijection on 64-bit integers).
inline uint64_t ScrambleId(uint64_t id) { return id * 0xff51afd7ed558ccdull; }

}  // namespace pmindex::bench

#endif  // PMINDEX_BENCH_KEYS_H_
