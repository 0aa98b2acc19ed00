// Status and StatusOr<T>: the error values that cross module boundaries.
// Every fallible call in analysis/, mapping/ and models/ returns one of these; nothing throws
// across a module boundary. Programmer errors are asserts, bad input is a Status or a counter.
#pragma once

#include <cassert>
#include <optional>
#include <string>
#include <utility>

namespace ttap {

class Status {
 public:
  Status() = default;
  static Status Ok() { return Status(); }
  static Status Error(std::string message) { return Status(std::move(message)); }

  bool ok() const { return !message_.has_value(); }
  const std::string& message() const {
    static const std::string kEmpty;
    return message_ ? *message_ : kEmpty;
  }

 private:
  explicit Status(std::string message) : message_(std::move(message)) {}
  std::optional<std::string> message_;
};

template <typename T>
class StatusOr {
 public:
  StatusOr(T value) : value_(std::move(value)) {}  // NOLINT: implicit by design.
  StatusOr(Status status) : status_(std::move(status)) { assert(!status_.ok()); }  // NOLINT

  bool ok() const { return value_.has_value(); }
  const Status& status() const { return status_; }
  T& value() {
    assert(ok());
    return *value_;
  }
  const T& value() const {
    assert(ok());
    return *value_;
  }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }
  T& operator*() { return value(); }
  const T& operator*() const { return value(); }

 private:
  std::optional<T> value_;
  Status status_;
};

}  // namespace ttap

// Returns the Status of |expr| from the enclosing function when it is an error.
#define TTAP_RETURN_IF_ERROR(expr)               \
  do {                                           \
    ::ttap::Status ttap_status_ = (expr);        \
    if (!ttap_status_.ok()) return ttap_status_; \
  } while (0)

// Evaluates |rexpr| (a StatusOr<T>); on error returns its Status from the enclosing function,
// otherwise moves the value into |lhs| (a declaration such as `auto x` or an lvalue).
#define TTAP_ASSIGN_OR_RETURN(lhs, rexpr) \
  TTAP_ASSIGN_OR_RETURN_IMPL_(TTAP_STATUS_CONCAT_(ttap_statusor_, __LINE__), lhs, rexpr)
#define TTAP_ASSIGN_OR_RETURN_IMPL_(tmp, lhs, rexpr) \
  auto tmp = (rexpr);                                \
  if (!tmp.ok()) return tmp.status();                \
  lhs = std::move(tmp.value())
#define TTAP_STATUS_CONCAT_INNER_(a, b) a##b
#define TTAP_STATUS_CONCAT_(a, b) TTAP_STATUS_CONCAT_INNER_(a, b)
