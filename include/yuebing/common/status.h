// Status helpers shared by every module. Errors inside yuebing are absl::Status / absl::StatusOr;
// codes are chosen by what a caller should do next:
//   kInvalidArgument  - the call is wrong; retrying the same call fails again.
//   kNotFound         - a miss (unknown key, segment, buffer); a normal outcome.
//   kAlreadyExists    - the thing exists (e.g. overlapping registration).
//   kResourceExhausted- a bound was hit (queue, memory, connections); retry later may work.
//   kUnavailable      - a peer or server cannot be reached now; retry may work.
//   kDeadlineExceeded - the call ran past its deadline.
//   kFailedPrecondition - the object is in the wrong state for the call (not initialised, closed).
//   kPermissionDenied - a peer asked for memory it may not touch.
//   kDataLoss         - bytes were found corrupted (checksum mismatch).
//   kInternal         - a bug or an unexpected system error; the message says which.
#pragma once

#include <cerrno>
#include <cstring>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"

namespace yuebing {

// Converts the current errno (or `err`) into a Status whose message starts with `what`.
inline absl::Status ErrnoToStatus(absl::string_view what, int err = errno) {
  std::string message = absl::StrCat(what, ": ", std::strerror(err));
  switch (err) {
    case ECONNREFUSED:
    case ECONNRESET:
    case EPIPE:
    case ENETUNREACH:
    case EHOSTUNREACH:
    case ENOTCONN:
      return absl::UnavailableError(message);
    case ETIMEDOUT:
    case EAGAIN:
      return absl::DeadlineExceededError(message);
    case ENOMEM:
    case EMFILE:
    case ENFILE:
    case ENOSPC:
      return absl::ResourceExhaustedError(message);
    case EINVAL:
      return absl::InvalidArgumentError(message);
    case ENOENT:
      return absl::NotFoundError(message);
    case EACCES:
    case EPERM:
      return absl::PermissionDeniedError(message);
    default:
      return absl::InternalError(message);
  }
}

}  // namespace yuebing

#define YB_STATUS_CONCAT_INNER_(a, b) a##b
#define YB_STATUS_CONCAT_(a, b) YB_STATUS_CONCAT_INNER_(a, b)

// Returns from the enclosing function if `expr` (an absl::Status) is not OK.
#define YB_RETURN_IF_ERROR(expr)             \
  do {                                       \
    ::absl::Status yb_status_ = (expr);      \
    if (!yb_status_.ok()) return yb_status_; \
  } while (0)

// `lhs = value of expr` if expr (an absl::StatusOr<T>) is OK, else returns its status.
#define YB_ASSIGN_OR_RETURN(lhs, expr) \
  YB_ASSIGN_OR_RETURN_IMPL_(YB_STATUS_CONCAT_(yb_statusor_, __LINE__), lhs, expr)
#define YB_ASSIGN_OR_RETURN_IMPL_(tmp, lhs, expr) \
  auto tmp = (expr);                              \
  if (!tmp.ok()) return tmp.status();             \
  lhs = std::move(tmp).value()
