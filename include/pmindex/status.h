// Status and Result<T>: how every pmindex function reports an error.
//
// No exception crosses the public API. A Status is OK or carries a code and a message that
// names the file (or index) and the reason. An OK Status and a Status with a code but no
// message allocate nothing, so hot-path operations (insert of a present key returns
// AlreadyExists, update of an absent key returns NotFound) stay cheap.
//
// Thread safety: a Status is a value; distinct objects may be used from distinct threads.
#ifndef PMINDEX_STATUS_H_
#define PMINDEX_STATUS_H_

#include <cassert>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

namespace pmindex {

// [[nodiscard]]: an ignored Status is an ignored error. Drop one on purpose with
// IgnoreError() and a comment saying why it cannot matter.
class [[nodiscard]] Status {
 public:
  enum class Code : unsigned char {
    kOk = 0,
    kNotFound,
    kAlreadyExists,
    kCorruption,
    kInvalidArgument,
    kOutOfSpace,
    kBusy,
    kIOError,
    kNotSupported,
  };

  Status() = default;
  Status(const Status& other)
      : code_(other.code_),
        message_(other.message_ ? std::make_unique<std::string>(*other.message_) : nullptr) {}
  Status& operator=(const Status& other) {
    if (this != &other) *this = Status(other);
    return *this;
  }
  Status(Status&&) noexcept = default;
  Status& operator=(Status&&) noexcept = default;

  static Status OK() { return Status(); }
  static Status NotFound(std::string_view msg = {}) { return Status(Code::kNotFound, msg); }
  static Status AlreadyExists(std::string_view msg = {}) {
    return Status(Code::kAlreadyExists, msg);
  }
  static Status Corruption(std::string_view msg = {}) { return Status(Code::kCorruption, msg); }
  static Status InvalidArgument(std::string_view msg = {}) {
    return Status(Code::kInvalidArgument, msg);
  }
  static Status OutOfSpace(std::string_view msg = {}) { return Status(Code::kOutOfSpace, msg); }
  static Status Busy(std::string_view msg = {}) { return Status(Code::kBusy, msg); }
  static Status IOError(std::string_view msg = {}) { return Status(Code::kIOError, msg); }
  static Status NotSupported(std::string_view msg = {}) {
    return Status(Code::kNotSupported, msg);
  }

  bool ok() const { return code_ == Code::kOk; }
  Code code() const { return code_; }
  bool IsNotFound() const { return code_ == Code::kNotFound; }
  bool IsAlreadyExists() const { return code_ == Code::kAlreadyExists; }
  bool IsCorruption() const { return code_ == Code::kCorruption; }
  bool IsInvalidArgument() const { return code_ == Code::kInvalidArgument; }
  bool IsOutOfSpace() const { return code_ == Code::kOutOfSpace; }
  bool IsBusy() const { return code_ == Code::kBusy; }
  bool IsIOError() const { return code_ == Code::kIOError; }
  bool IsNotSupported() const { return code_ == Code::kNotSupported; }

  // The message alone ("" when none was given).
  std::string_view message() const { return message_ ? std::string_view(*message_) : ""; }
  // "OK" or "<Code name>: <message>".
  std::string ToString() const;
  static const char* CodeName(Code code);

  // A copy with `prefix + ": "` put before the message (for adding context on the way up).
  Status WithContext(std::string_view prefix) const;

  // Drops the status on purpose (the caller's comment says why that is safe).
  void IgnoreError() const {}

 private:
  Status(Code code, std::string_view msg)
      : code_(code), message_(msg.empty() ? nullptr : std::make_unique<std::string>(msg)) {}

  Code code_ = Code::kOk;
  std::unique_ptr<std::string> message_;
};

// A value or the Status that explains why there is none. [[nodiscard]] like Status.
template <typename T>
class [[nodiscard]] Result {
 public:
  Result(T value) : value_(std::move(value)) {}  // NOLINT: implicit by design
  Result(Status status) : status_(std::move(status)) {  // NOLINT: implicit by design
    assert(!status_.ok() && "a Result built from a Status must carry an error");
  }

  bool ok() const { return value_.has_value(); }
  const Status& status() const { return status_; }
  T& value() & { assert(ok()); return *value_; }
  const T& value() const& { assert(ok()); return *value_; }
  T&& value() && { assert(ok()); return std::move(*value_); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }
  T&& operator*() && { return std::move(*this).value(); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }

 private:
  Status status_;
  std::optional<T> value_;
};

}  // namespace pmindex

#endif  // PMINDEX_STATUS_H_
