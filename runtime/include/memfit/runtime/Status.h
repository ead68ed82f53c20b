//===- Status.h - status values for the memfit runtime ----------*- C++ -*-===//
//
// The runtime never aborts on user input: every fallible call returns a
// Status (or StatusOr<T>) that carries a message with its context.
//
//===----------------------------------------------------------------------===//

#ifndef MEMFIT_RUNTIME_STATUS_H
#define MEMFIT_RUNTIME_STATUS_H

#include <optional>
#include <string>
#include <utility>

namespace memfit::rt {

enum class StatusCode {
  Ok,
  InvalidArgument, // bad user input: a manifest, a tensor, an option
  NotFound,        // a missing file, input, output or kernel
  Unavailable,     // no GPU, no driver, no NVRTC, no host compiler
  ResourceExhausted, // the plan does not fit the device
  Internal,        // a backend call failed
};

class [[nodiscard]] Status {
public:
  Status() = default;
  static Status ok() { return Status(); }
  static Status error(StatusCode code, std::string message) {
    Status s;
    s.code_ = code;
    s.message_ = std::move(message);
    return s;
  }
  bool isOk() const { return code_ == StatusCode::Ok; }
  explicit operator bool() const { return isOk(); }
  StatusCode code() const { return code_; }
  const std::string &message() const { return message_; }
  /// Prefixes the message with `context: ` (no-op on success).
  Status withContext(const std::string &context) const {
    if (isOk())
      return *this;
    return error(code_, context + ": " + message_);
  }

private:
  StatusCode code_ = StatusCode::Ok;
  std::string message_;
};

inline Status invalidArgument(std::string m) {
  return Status::error(StatusCode::InvalidArgument, std::move(m));
}
inline Status notFound(std::string m) {
  return Status::error(StatusCode::NotFound, std::move(m));
}
inline Status unavailable(std::string m) {
  return Status::error(StatusCode::Unavailable, std::move(m));
}
inline Status internalError(std::string m) {
  return Status::error(StatusCode::Internal, std::move(m));
}

/// A value or the Status saying why there is none.
template <typename T> class [[nodiscard]] StatusOr {
public:
  StatusOr(Status status) : status_(std::move(status)) {}
  StatusOr(T value) : value_(std::move(value)) {}
  bool isOk() const { return status_.isOk(); }
  explicit operator bool() const { return isOk(); }
  const Status &status() const { return status_; }
  T &value() { return *value_; }
  const T &value() const { return *value_; }
  T &operator*() { return *value_; }
  T *operator->() { return &*value_; }

private:
  Status status_;
  std::optional<T> value_;
};

} // namespace memfit::rt

#define MEMFIT_RT_RETURN_IF_ERROR(expr)                                        \
  do {                                                                         \
    ::memfit::rt::Status memfitStatus_ = (expr);                               \
    if (!memfitStatus_.isOk())                                                 \
      return memfitStatus_;                                                    \
  } while (false)

#endif // MEMFIT_RUNTIME_STATUS_H
