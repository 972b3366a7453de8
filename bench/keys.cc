#include "bench/keys.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "bench/generators.h"

namespace pmindex::bench {

std::string KeyType::name() const {
  switch (kind) {
    case Kind::kInt:
      return "int";
    case Kind::kString:
      return "string";
    case Kind::kFixed:
      return "str:" + std::to_string(length);
  }
  return "?";
}

bool ParseKeyType(std::string_view text, KeyType* type, std::string* error) {
  KeyType t;
  if (text == "int") {
    t.kind = KeyType::Kind::kInt;
    t.length = 8;
  } else if (text == "string") {
    t.kind = KeyType::Kind::kString;
    t.length = 24;
  } else if (text.starts_with("str:")) {
    t.kind = KeyType::Kind::kFixed;
    const std::string num(text.substr(4));
    char* end = nullptr;
    const unsigned long long len = std::strtoull(num.c_str(), &end, 10);
    if (num.empty() || *end != '\0' || len < 1 || len > kMaxFixedKeyLength) {
      *error = "str:LEN needs LEN in 1.." + std::to_string(kMaxFixedKeyLength) + ", got '" +
               num + "'";
      return false;
    }
    t.length = len;
  } else {
    *error = "unknown key type '" + std::string(text) + "' (expected int, string or str:LEN)";
    return false;
  }
  *type = t;
  return true;
}

std::string_view KeyCodec::encode(uint64_t id, char* buf) const {
  const uint64_t v = scramble_ ? ScrambleId(id) : id;
  switch (type_.kind) {
    case KeyType::Kind::kInt: {
      const uint64_t be = __builtin_bswap64(v);
      std::memcpy(buf, &be, 8);
      return {buf, 8};
    }
    case KeyType::Kind::kString: {
      // Scrambled: "user" + digits, as YCSB does. Sequential: zero-padded so that the
      // byte order of the keys is their id order.
      const auto u = static_cast<unsigned long long>(v);
      const int n = scramble_ ? std::snprintf(buf, 32, "user%llu", u)
                              : std::snprintf(buf, 32, "user%020llu", u);
      return {buf, static_cast<size_t>(n)};
    }
    case KeyType::Kind::kFixed: {
      const size_t len = type_.length;
      const uint64_t be = __builtin_bswap64(v);
      if (len <= 8) {
        // The low LEN bytes of v, big-endian; a bijection for ids below 256^LEN.
        std::memcpy(buf, reinterpret_cast<const char*>(&be) + (8 - len), len);
        return {buf, len};
      }
      std::memcpy(buf, &be, 8);
      // Filler derived from the id, so keys differ beyond their prefix too.
      uint64_t state = v;
      for (size_t i = 8; i < len; i += 8) {
        state = Mix64(state);
        std::memcpy(buf + i, &state, len - i < 8 ? len - i : 8);
      }
      return {buf, len};
    }
  }
  return {};
}

size_t KeyCodec::max_size() const {
  switch (type_.kind) {
    case KeyType::Kind::kInt:
      return 8;
    case KeyType::Kind::kString:
      return 24;
    case KeyType::Kind::kFixed:
      return type_.length;
  }
  return 0;
}

uint64_t KeyCodec::capacity() const {
  if (type_.kind == KeyType::Kind::kFixed && type_.length < 8) {
    return uint64_t{1} << (8 * type_.length);
  }
  return UINT64_MAX;
}

}  // namespace pmindex::bench
