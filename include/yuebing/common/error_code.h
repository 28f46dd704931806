// Mooncake-compatible numeric error codes, carried inside absl::Status as a payload so that code
// paths keep using absl::Status while the edges (RPC replies, the Python binding) can return the
// exact number Mooncake users expect (e.g. -704 for a missing object).
//
// MakeError(code, message) builds a Status with the canonical absl code that matches the numeric
// code's retry meaning and attaches the number; ToErrorCode(status) recovers it (or derives one
// from the absl code when none was attached). Thread-safe (pure functions).
#pragma once

#include <cstdint>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"

namespace yuebing {

enum class ErrorCode : int32_t {
  kOk = 0,
  kInternalError = -1,
  kBufferOverflow = -10,
  kSegmentNotFound = -101,
  kSegmentAlreadyExists = -102,
  kClientNotFound = -103,
  kNoAvailableHandle = -200,  // no space
  kInvalidVersion = -300,
  kInvalidKey = -400,
  kWriteFail = -500,
  kInvalidParams = -600,
  kIllegalClient = -601,
  kInvalidWrite = -700,
  kInvalidRead = -701,
  kInvalidReplica = -702,
  kReplicaIsNotReady = -703,
  kObjectNotFound = -704,
  kObjectAlreadyExists = -705,
  kObjectHasLease = -706,
  kLeaseExpired = -707,
  kObjectHasReplicationTask = -708,  // a copy, move or replacing put of the object is under way
  kTransferFail = -800,
  kRpcFail = -900,
  kEtcdOperationError = -1000,
  kUnavailableInCurrentStatus = -1010,
  kUnavailableInCurrentMode = -1011,  // e.g. tenant quotas on a master without multi-tenancy
  kPersistentFail = -1503,            // a tenant policy could not be written to its file
  kTaskNotFound = -1400,
  kTaskPendingLimitExceeded = -1401,
  kJobNotFound = -1402,          // no drain job with that id
  kTenantQuotaExceeded = -1700,  // the write would take the tenant past its memory quota
  kTenantNotRegistered = -1701,  // a write by a tenant without a quota policy (multi-tenant mode)
  kTenantNotEmpty = -1702,       // deleting the policy of a tenant that still owns objects
};

// The Mooncake-style name, e.g. "OBJECT_NOT_FOUND".
const char* ErrorCodeName(ErrorCode code);

absl::Status MakeError(ErrorCode code, absl::string_view message);

// kOk for an OK status; the attached code if any; otherwise one derived from the absl code.
ErrorCode ToErrorCode(const absl::Status& status);

// Re-creates a Status from a code and message received over the wire.
inline absl::Status FromErrorCode(int32_t code, absl::string_view message) {
  if (code == 0) return absl::OkStatus();
  return MakeError(static_cast<ErrorCode>(code), message);
}

}  // namespace yuebing
