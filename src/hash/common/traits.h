// What every hash index of the family is: persistent, unordered (no scan; Index::for_each
// visits every pair), 8-byte integer keys and 8-byte values, every acknowledged operation
// durable. Each index adds its name, kind, concurrency and description.
#ifndef PMINDEX_HASH_COMMON_TRAITS_H_
#define PMINDEX_HASH_COMMON_TRAITS_H_

#include <cstdint>
#include <cstring>
#include <string>
#include <utility>

#include "pmindex/index.h"

namespace pmindex::hash {

inline IndexTraits HashTraits(std::string name, IndexKind kind, std::string concurrency,
                              std::string description) {
  IndexTraits t;
  t.name = std::move(name);
  t.kind = kind;
  t.persistent = true;
  t.ordered = false;
  t.byte_keys = false;
  t.max_key_size = 8;
  t.max_value_size = 8;
  t.concurrency = std::move(concurrency);
  t.durability = "every acknowledged operation survives power failure";
  t.description = std::move(description);
  return t;
}

// A lookup's answer: the 8-byte value v into *out, in place when *out already holds 8
// bytes (a caller that reuses its string: no call into std::string on the hot path).
[[gnu::always_inline]] inline void SetIntValue(std::string* out, uint64_t v) {
  if (out->size() != 8) [[unlikely]]
    out->resize(8);
  std::memcpy(out->data(), &v, 8);
}

}  // namespace pmindex::hash

#endif  // PMINDEX_HASH_COMMON_TRAITS_H_
