#include "bench/dump.h"

#include <cctype>
#include <memory>

#include "pmindex/iterator.h"

namespace pmindex::bench {

namespace {

bool Printable(std::string_view s) {
  for (char c : s) {
    const unsigned char u = static_cast<unsigned char>(c);
    if (u < 0x21 || u > 0x7e || c == '\\') return false;
  }
  return true;
}

// All digits, 1..20 of them, fitting 64 bits: the text of an integer key or value.
bool ParseDecimal(std::string_view text, uint64_t* v) {
  if (text.empty() || text.size() > 20) return false;
  unsigned __int128 x = 0;
  for (char c : text) {
    if (c < '0' || c > '9') return false;
    x = x * 10 + static_cast<unsigned>(c - '0');
  }
  if (x > UINT64_MAX) return false;
  *v = static_cast<uint64_t>(x);
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

namespace {

// In auto format a byte string whose text would read as an integer gets its first byte
// escaped, so that auto's text always reads back as the bytes it came from.
std::string EscapeUnambiguous(std::string_view bytes) {
  std::string out = EscapeBytes(bytes);
  uint64_t ignored;
  if (ParseDecimal(out, &ignored)) {
    static const char kHex[] = "0123456789abcdef";
    const unsigned char u = static_cast<unsigned char>(out[0]);
    out.replace(0, 1, std::string{'\\', 'x', kHex[u >> 4], kHex[u & 15]});
  }
  return out;
}

}  // namespace

std::string FormatKey(std::string_view key, BytesFormat format) {
  const bool as_int = key.size() == 8 && (format == BytesFormat::kInt ||
                                          (format == BytesFormat::kAuto && !Printable(key)));
  if (as_int) return std::to_string(IntKey::Decode(key));
  return format == BytesFormat::kAuto ? EscapeUnambiguous(key) : EscapeBytes(key);
}

std::string FormatValue(std::string_view value, BytesFormat format) {
  const bool as_int = value.size() == 8 && (format == BytesFormat::kInt ||
                                            (format == BytesFormat::kAuto && !Printable(value)));
  if (as_int) return std::to_string(IntValue::Decode(value));
  return format == BytesFormat::kAuto ? EscapeUnambiguous(value) : EscapeBytes(value);
}

namespace {

// EscapeBytes undone: \xHH and \\ decoded, "\x" alone is the empty string.
bool UnescapeBytes(std::string_view text, std::string* bytes) {
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
  *bytes = std::move(out);
  return true;
}

// The key or value of `text` in `format`; int: IntKey or IntValue of a decimal.
bool ParseBytes(std::string_view text, BytesFormat format, bool key, std::string* out) {
  uint64_t v;
  if (format != BytesFormat::kString && ParseDecimal(text, &v)) {
    *out = key ? std::string(IntKey(v).view()) : std::string(IntValue(v));
    return true;
  }
  if (format == BytesFormat::kInt) return false;
  return UnescapeBytes(text, out);
}

}  // namespace

bool ParseKeyText(std::string_view text, BytesFormat format, std::string* key) {
  return ParseBytes(text, format, true, key);
}

bool ParseValueText(std::string_view text, BytesFormat format, std::string* value) {
  return ParseBytes(text, format, false, value);
}

bool ParseKeyArgument(std::string_view text, std::string* key) {
  return ParseKeyText(text, BytesFormat::kAuto, key);
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
  return DumpIndex(index, DumpRange{.from = from, .to = {}, .count = count}, key_format,
                   value_format, out,
                   printed);
}

Status DumpIndex(Index& index, const DumpRange& range, BytesFormat key_format,
                 BytesFormat value_format, std::FILE* out, uint64_t* printed) {
  *printed = 0;
  if (!index.traits().byte_keys && key_format == BytesFormat::kAuto) {
    key_format = BytesFormat::kInt;
  }
  if (!index.traits().ordered) {
    if (!range.to.empty() || range.reverse) {
      return Status::InvalidArgument(index.traits().name +
                                     " is unordered: it has no end key and no reverse order");
    }
    return DumpUnordered(index, range.from, range.count, key_format, value_format, out, printed);
  }
  // The iterator copies a batch at a time, so memory stays bounded.
  IteratorOptions options;
  options.lower_bound = std::string(range.from);
  options.upper_bound = std::string(range.to);
  options.batch_size = 4096;
  std::unique_ptr<Iterator> it = index.NewIterator(options);
  for (range.reverse ? it->SeekToLast() : it->SeekToFirst();
       it->Valid() && (range.count == 0 || *printed < range.count);
       range.reverse ? it->Prev() : it->Next()) {
    std::fprintf(out, "%s %s\n", FormatKey(it->key(), key_format).c_str(),
                 FormatValue(it->value(), value_format).c_str());
    (*printed)++;
  }
  if (!it->status().ok()) return it->status();
  if (std::ferror(out)) return Status::IOError("write error on output");
  return Status::OK();
}

namespace {

// One "key value" line of dump's text into its key and value; the message says what is wrong.
std::string ParseLine(std::string_view line, BytesFormat key_format, BytesFormat value_format,
                      std::string* key, std::string* value) {
  const size_t space = line.find(' ');
  if (space == std::string_view::npos || line.find(' ', space + 1) != std::string_view::npos)
    return "expected two fields, 'key value'";
  if (!ParseKeyText(line.substr(0, space), key_format, key)) return "bad key";
  if (!ParseValueText(line.substr(space + 1), value_format, value)) return "bad value";
  return "";
}

}  // namespace

Status LoadPairs(Index& index, std::FILE* in, BytesFormat key_format, BytesFormat value_format,
                 const LoadProgress& progress, uint64_t* loaded) {
  *loaded = 0;
  if (!index.traits().byte_keys && key_format == BytesFormat::kAuto) key_format = BytesFormat::kInt;
  std::string line, key, value;
  uint64_t number = 0;
  for (int c = std::fgetc(in); c != EOF || !line.empty(); c = std::fgetc(in)) {
    if (c != '\n' && c != EOF) {
      line += static_cast<char>(c);
      continue;
    }
    number++;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (!line.empty() && line[0] != '#') {
      const std::string bad = ParseLine(line, key_format, value_format, &key, &value);
      if (!bad.empty())
        return Status::InvalidArgument("line " + std::to_string(number) + ": " + bad);
      const Status s = index.upsert(key, value);
      if (!s.ok()) return s.WithContext("line " + std::to_string(number));
      if (++*loaded % progress.every == 0 && progress.fn) progress.fn(*loaded);
    }
    line.clear();
    if (c == EOF) break;
  }
  if (std::ferror(in)) return Status::IOError("read error on input");
  return Status::OK();
}

}  // namespace pmindex::bench
