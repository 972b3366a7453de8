// Printing an index's pairs for `pmindex dump`: one "key value" line per pair, so a kept
// pool can be compared with a model by a script.
//
// Integer keys print in decimal, values written by the workbench (8-byte native integers) in
// decimal; other byte strings print as-is when printable, with every other byte escaped as
// \xHH (space, backslash and non-ASCII included), so a line always has exactly two fields.
// In auto format, an 8-byte key or value is taken for an integer unless all its bytes are
// printable; an index without byte-string keys has only integer keys.
#ifndef PMINDEX_BENCH_DUMP_H_
#define PMINDEX_BENCH_DUMP_H_

#include <cstdint>
#include <cstdio>
#include <functional>
#include <string>
#include <string_view>

#include "pmindex/index.h"

namespace pmindex::bench {

enum class BytesFormat { kAuto, kInt, kString };

// "auto", "int", "string"; false if unknown.
bool ParseBytesFormat(std::string_view text, BytesFormat* format);
// Printable form of a key (big-endian integers) or value (native integers).
std::string FormatKey(std::string_view key, BytesFormat format);
std::string FormatValue(std::string_view value, BytesFormat format);
std::string EscapeBytes(std::string_view bytes);
// The key for --from: all digits (fitting 64 bits) = IntKey, otherwise the bytes with \xHH
// and \\ escapes decoded. False on a malformed escape.
bool ParseKeyArgument(std::string_view text, std::string* key);
// FormatKey and FormatValue undone. int: a decimal (IntKey, IntValue); string: the bytes,
// escapes decoded; auto: a decimal if the text is one, else the bytes (auto's printing
// escapes the first byte of a string that would read as a decimal, so auto reads back
// exactly what it printed). False on a malformed escape, or a non-decimal in int format.
bool ParseKeyText(std::string_view text, BytesFormat format, std::string* key);
bool ParseValueText(std::string_view text, BytesFormat format, std::string* value);

// Called every `every` pairs loaded, with the count so far (a long load's progress).
struct LoadProgress {
  uint64_t every = 1000000;
  std::function<void(uint64_t)> fn;
};
// Reads "key value" lines, as DumpIndex prints them, and upserts each pair, in order; blank
// lines and lines starting with '#' are skipped. *loaded counts the pairs written.
// InvalidArgument naming the line on a malformed line; an index error names its line too
// (the pairs before it are written).
Status LoadPairs(Index& index, std::FILE* in, BytesFormat key_format, BytesFormat value_format,
                 const LoadProgress& progress, uint64_t* loaded);

// Prints up to `count` pairs with key >= from (all when count is 0) in key order; *printed
// says how many. An unordered index prints its pairs in its own order (Index::for_each) and
// takes no `from` (InvalidArgument).
Status DumpIndex(Index& index, std::string_view from, uint64_t count, BytesFormat key_format,
                 BytesFormat value_format, std::FILE* out, uint64_t* printed);

// The pairs DumpIndex prints: keys in [from, to) (empty: no bound), at most `count` (0: all),
// in ascending order, or descending (from the largest key below `to`) with `reverse`.
struct DumpRange {
  std::string_view from;
  std::string_view to;
  uint64_t count = 0;
  bool reverse = false;
};
// DumpIndex over a range, walked with an iterator (Index::NewIterator). An unordered index
// takes no from, to or reverse (InvalidArgument).
Status DumpIndex(Index& index, const DumpRange& range, BytesFormat key_format,
                 BytesFormat value_format, std::FILE* out, uint64_t* printed);

}  // namespace pmindex::bench

#endif  // PMINDEX_BENCH_DUMP_H_
