#include "bench/trace.h"

#include <cerrno>
#include <cstring>
#include <fstream>

#include "pmindex/index.h"

namespace pmindex::bench {

namespace {

std::vector<std::string_view> Tokens(std::string_view line) {
  std::vector<std::string_view> out;
  size_t i = 0;
  while (i < line.size()) {
    while (i < line.size() && (line[i] == ' ' || line[i] == '\t' || line[i] == '\r')) i++;
    size_t j = i;
    while (j < line.size() && line[j] != ' ' && line[j] != '\t' && line[j] != '\r') j++;
    if (j > i) out.push_back(line.substr(i, j - i));
    i = j;
  }
  return out;
}

bool ParseU64(std::string_view s, uint64_t* v) {
  if (s.empty() || s.size() > 20) return false;
  unsigned __int128 x = 0;
  for (char c : s) {
    if (c < '0' || c > '9') return false;
    x = x * 10 + static_cast<unsigned>(c - '0');
  }
  if (x > UINT64_MAX) return false;
  *v = static_cast<uint64_t>(x);
  return true;
}

}  // namespace

Status ParseTrace(const std::string& path, uint64_t first_line, Trace* trace) {
  std::ifstream in(path);
  if (!in) {
    const int err = errno;
    if (err == ENOENT) return Status::NotFound(path + ": no such trace file");
    return Status::IOError(path + ": cannot read trace: " + std::strerror(err));
  }
  trace->path = path;
  std::string line;
  uint64_t n = 0;
  while (std::getline(in, line)) {
    n++;
    std::vector<std::string_view> tok = Tokens(line);
    if (tok.empty() || tok[0][0] == '#') continue;
    auto bad = [&](const std::string& why) {
      return Status::InvalidArgument(path + ":" + std::to_string(n) + ": " + why + ": '" +
                                     line + "'");
    };
    TraceOp op{};
    const std::string_view verb = tok[0];
    if (verb == "INSERT") {
      op.kind = OpKind::kInsert;
    } else if (verb == "READ") {
      op.kind = OpKind::kLookup;
    } else if (verb == "UPDATE") {
      op.kind = OpKind::kUpdate;
    } else if (verb == "SCAN") {
      op.kind = OpKind::kScan;
    } else if (verb == "DELETE") {
      op.kind = OpKind::kRemove;
    } else {
      return bad("unknown operation (expected INSERT, READ, UPDATE, SCAN or DELETE)");
    }
    size_t k = 1;
    if (tok.size() >= 3 && tok[1] == "usertable") k = 2;  // YCSB basic binding output
    if (tok.size() <= k) return bad("missing key");
    const std::string_view key = tok[k];
    if (op.kind == OpKind::kScan) {
      uint64_t count = 0;
      if (tok.size() <= k + 1 || !ParseU64(tok[k + 1], &count) || count > UINT32_MAX) {
        return bad("SCAN needs a key and a count");
      }
      op.scan_count = static_cast<uint32_t>(count);
    }
    op.key_offset = trace->key_bytes.size();
    uint64_t int_key = 0;
    if (ParseU64(key, &int_key)) {
      trace->key_bytes.append(IntKey(int_key).view());
      op.key_size = 8;
    } else {
      trace->key_bytes.append(key);
      op.key_size = static_cast<uint32_t>(key.size());
      trace->has_byte_keys = true;
    }
    if (op.key_size > trace->max_key_size) trace->max_key_size = op.key_size;
    if (op.kind == OpKind::kInsert) trace->inserts++;
    op.line = first_line + n;
    trace->ops.push_back(op);
  }
  if (in.bad()) return Status::IOError(path + ": read error");
  trace->lines = n;
  return Status::OK();
}

}  // namespace pmindex::bench
