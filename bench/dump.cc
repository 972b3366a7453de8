#include "bench/dump.h"

#include <cctype>

namespace pmindex::bench {

namespace {

bool Printable(std::string_view s) {
  for (char c : s) {
    const unsigned char u = static_cast<unsigned char>(c);
    if (u < 0x21 || u > 0x7e || c == '\\') return false;
  }
  return true;
}

}  // namespace

bool ParseBytesFormat(std::string_view text, BytesFormat* format) {
  if (text == "auto") {
    *format = BytesFormat::kAuto;
  } else if (text == "int") {
    *format = BytesFormat::kInt;
  } else if (text == "string") {
    *format = BytesFormat::kString;
  } else {
    return false;
  }
  return true;
}

std::string EscapeBytes(std::string_view bytes) {
  static const char kHex[] = "0123456789abcdef";
  std::string out;
  out.reserve(bytes.size());
  for (char c : bytes) {
    const unsigned char u = static_cast<unsigned char>(c);
    if (c == '\\') {
      out += "\\\\";
    } else if (u >= 0x21 && u <= 0x7e) {
      out += c;
    } else {
      out += "\\x";
      out += kHex[u >> 4];
      out += kHex[u & 15];
    }
  }
  if (out.empty()) out = "\\x";  // an empty string still needs a field; see doc/bench.md
  return out;
}

std::string FormatKey(std::string_view key, BytesFormat format) {
  const bool as_int = key.size() == 8 && (format == BytesFormat::kInt ||
                                          (format == BytesFormat::kAuto && !Printable(key)));
  return as_int ? std::to_string(IntKey::Decode(key)) : EscapeBytes(key);
}

std::string FormatValue(std::string_view value, BytesFormat format) {
  const bool as_int = value.size() == 8 && (format == BytesFormat::kInt ||
                                            (format == BytesFormat::kAuto && !Printable(value)));
  return as_int ? std::to_string(IntValue::Decode(value)) : EscapeBytes(value);
}

bool ParseKeyArgument(std::string_view text, std::string* key) {
  bool digits = !text.empty() && text.size() <= 20;
  unsigned __int128 v = 0;
  for (char c : text) {
    if (c < '0' || c > '9') {
      digits = false;
      break;
    }
    v = v * 10 + static_cast<unsigned>(c - '0');
  }
  if (digits && v <= UINT64_MAX) {
    *key = std::string(IntKey(static_cast<uint64_t>(v)).view());
    return true;
  }
  std::string out;
  for (size_t i = 0; i < text.size(); i++) {
    if (text[i] != '\\') {
      out += text[i];
      continue;
    }
    if (i + 1 < text.size() && text[i + 1] == '\\') {
      out += '\\';
      i++;
      continue;
    }
    if (i + 1 < text.size() && text[i + 1] == 'x') {
      if (i + 2 == text.size()) {  // "\x" alone: the empty string
        i += 1;
        continue;
      }
      if (i + 3 < text.size() && std::isxdigit(static_cast<unsigned char>(text[i + 2])) &&
          std::isxdigit(static_cast<unsigned char>(text[i + 3]))) {
        out += static_cast<char>(std::stoi(std::string(text.substr(i + 2, 2)), nullptr, 16));
        i += 3;
        continue;
      }
    }
    return false;
  }
  *key = std::move(out);
  return true;
}

namespace {

// An unordered index: every pair once, in the index's order (for_each); no --from.
Status DumpUnordered(Index& index, std::string_view from, uint64_t count, BytesFormat key_format,
                     BytesFormat value_format, std::FILE* out, uint64_t* printed) {
  if (!from.empty()) {
    return Status::InvalidArgument(index.traits().name +
                                   " is unordered: it dumps every pair, with no start key");
  }
  const Status s = index.for_each([&](std::string_view k, std::string_view v) {
    if (count != 0 && *printed >= count) return false;
    std::fprintf(out, "%s %s\n", FormatKey(k, key_format).c_str(),
                 FormatValue(v, value_format).c_str());
    (*printed)++;
    return true;
  });
  if (!s.ok()) return s;
  if (std::ferror(out)) return Status::IOError("write error on output");
  return Status::OK();
}

}  // namespace

Status DumpIndex(Index& index, std::string_view from, uint64_t count, BytesFormat key_format,
                 BytesFormat value_format, std::FILE* out, uint64_t* printed) {
  *printed = 0;
  if (!index.traits().byte_keys && key_format == BytesFormat::kAuto) {
    key_format = BytesFormat::kInt;
  }
  if (!index.traits().ordered)
    return DumpUnordered(index, from, count, key_format, value_format, out, printed);
  // Scan in batches, restarting after the last key seen, so memory stays bounded.
  constexpr size_t kBatch = 4096;
  std::string start(from);
  bool first_batch = true;
  while (count == 0 || *printed < count) {
    std::string last;
    bool have_last = false;
    size_t skip_first = first_batch ? 0 : 1;
    const size_t want = kBatch + skip_first;
    const size_t got = index.scan(start, want, [&](std::string_view k, std::string_view v) {
      if (skip_first > 0 && k == start) {
        skip_first = 0;
        return true;
      }
      if (count != 0 && *printed >= count) return false;
      std::fprintf(out, "%s %s\n", FormatKey(k, key_format).c_str(),
                   FormatValue(v, value_format).c_str());
      (*printed)++;
      last.assign(k);
      have_last = true;
      return true;
    });
    if (!have_last || got < want) break;
    start = last;
    first_batch = false;
  }
  if (std::ferror(out)) return Status::IOError("write error on output");
  return Status::OK();
}

}  // namespace pmindex::bench
