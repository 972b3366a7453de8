// YCSB traces in the index-microbench line format, for `pmindex bench --trace`.
//
//   INSERT k | READ k | UPDATE k | SCAN k n | DELETE k      one operation per line
//
// `k` is an 8-byte integer key (IntKey) when it is all digits and fits 64 bits, otherwise a
// byte string. YCSB's `basic` binding output ("INSERT usertable user123 [ field0=... ]") is
// accepted too: a "usertable" table token is skipped and anything after the key (and after n
// for SCAN) is ignored. Empty lines and lines starting with '#' are skipped but counted.
//
// A replayed INSERT or UPDATE writes the operation's line number as its value (1-based,
// counting the load file's lines and then the run file's), so the final contents are
// predictable.
//
// Thread safety: a parsed Trace is immutable.
#ifndef PMINDEX_BENCH_TRACE_H_
#define PMINDEX_BENCH_TRACE_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "bench/operation.h"
#include "pmindex/status.h"

namespace pmindex::bench {

struct TraceOp {
  OpKind kind;
  uint32_t scan_count;   // SCAN only
  uint32_t key_size;
  uint64_t key_offset;   // into Trace::key_bytes
  uint64_t line;         // global 1-based line number: the value INSERT/UPDATE write
};

struct Trace {
  std::string path;
  std::string key_bytes;  // all keys, concatenated (integer keys already big-endian)
  std::vector<TraceOp> ops;
  uint64_t lines = 0;     // lines in the file, counted or not
  bool has_byte_keys = false;
  size_t max_key_size = 0;
  uint64_t inserts = 0;

  std::string_view key(const TraceOp& op) const {
    return std::string_view(key_bytes).substr(op.key_offset, op.key_size);
  }
};

// Reads a trace file whose first line has the global number first_line + 1. Errors:
// NotFound / IOError for the file, InvalidArgument naming file:line for a malformed line.
Status ParseTrace(const std::string& path, uint64_t first_line, Trace* trace);

}  // namespace pmindex::bench

#endif  // PMINDEX_BENCH_TRACE_H_
