#include "pmindex/status.h"

namespace pmindex {

const char* Status::CodeName(Code code) {
  switch (code) {
    case Code::kOk: return "OK";
    case Code::kNotFound: return "NotFound";
    case Code::kAlreadyExists: return "AlreadyExists";
    case Code::kCorruption: return "Corruption";
    case Code::kInvalidArgument: return "InvalidArgument";
    case Code::kOutOfSpace: return "OutOfSpace";
    case Code::kBusy: return "Busy";
    case Code::kIOError: return "IOError";
    case Code::kNotSupported: return "NotSupported";
  }
  return "Unknown";
}

std::string Status::ToString() const {
  if (ok()) return "OK";
  std::string s = CodeName(code_);
  if (message_) {
    s += ": ";
    s += *message_;
  }
  return s;
}

Status Status::WithContext(std::string_view prefix) const {
  if (ok()) return Status();
  std::string m(prefix);
  if (message_) {
    m += ": ";
    m += *message_;
  }
  return Status(code_, m);
}

}  // namespace pmindex
