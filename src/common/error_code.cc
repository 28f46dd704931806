#include "yuebing/common/error_code.h"

#include <string>

#include "absl/strings/cord.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"

namespace yuebing {
namespace {

constexpr char kPayloadUrl[] = "yuebing.dev/error_code";

absl::StatusCode CanonicalCode(ErrorCode code) {
  switch (code) {
    case ErrorCode::kOk:
      return absl::StatusCode::kOk;
    case ErrorCode::kObjectNotFound:
    case ErrorCode::kSegmentNotFound:
    case ErrorCode::kClientNotFound:
    case ErrorCode::kTaskNotFound:
    case ErrorCode::kJobNotFound:
      return absl::StatusCode::kNotFound;
    case ErrorCode::kObjectAlreadyExists:
    case ErrorCode::kSegmentAlreadyExists:
      return absl::StatusCode::kAlreadyExists;
    case ErrorCode::kTenantQuotaExceeded:
      return absl::StatusCode::kResourceExhausted;
    case ErrorCode::kTenantNotRegistered:
    case ErrorCode::kTenantNotEmpty:
    case ErrorCode::kUnavailableInCurrentMode:
      return absl::StatusCode::kFailedPrecondition;
    case ErrorCode::kNoAvailableHandle:
    case ErrorCode::kBufferOverflow:
    case ErrorCode::kTaskPendingLimitExceeded:
      return absl::StatusCode::kResourceExhausted;
    case ErrorCode::kInvalidParams:
    case ErrorCode::kInvalidKey:
    case ErrorCode::kInvalidVersion:
      return absl::StatusCode::kInvalidArgument;
    case ErrorCode::kObjectHasLease:
    case ErrorCode::kObjectHasReplicationTask:
    case ErrorCode::kReplicaIsNotReady:
    case ErrorCode::kIllegalClient:
    case ErrorCode::kUnavailableInCurrentStatus:
      return absl::StatusCode::kFailedPrecondition;
    case ErrorCode::kLeaseExpired:
      return absl::StatusCode::kDeadlineExceeded;
    case ErrorCode::kRpcFail:
    case ErrorCode::kTransferFail:
    case ErrorCode::kEtcdOperationError:
      return absl::StatusCode::kUnavailable;
    default:
      return absl::StatusCode::kInternal;
  }
}

}  // namespace

const char* ErrorCodeName(ErrorCode code) {
  switch (code) {
    case ErrorCode::kOk:
      return "OK";
    case ErrorCode::kInternalError:
      return "INTERNAL_ERROR";
    case ErrorCode::kBufferOverflow:
      return "BUFFER_OVERFLOW";
    case ErrorCode::kSegmentNotFound:
      return "SEGMENT_NOT_FOUND";
    case ErrorCode::kSegmentAlreadyExists:
      return "SEGMENT_ALREADY_EXISTS";
    case ErrorCode::kClientNotFound:
      return "CLIENT_NOT_FOUND";
    case ErrorCode::kNoAvailableHandle:
      return "NO_AVAILABLE_HANDLE";
    case ErrorCode::kInvalidVersion:
      return "INVALID_VERSION";
    case ErrorCode::kInvalidKey:
      return "INVALID_KEY";
    case ErrorCode::kWriteFail:
      return "WRITE_FAIL";
    case ErrorCode::kInvalidParams:
      return "INVALID_PARAMS";
    case ErrorCode::kIllegalClient:
      return "ILLEGAL_CLIENT";
    case ErrorCode::kInvalidWrite:
      return "INVALID_WRITE";
    case ErrorCode::kInvalidRead:
      return "INVALID_READ";
    case ErrorCode::kInvalidReplica:
      return "INVALID_REPLICA";
    case ErrorCode::kReplicaIsNotReady:
      return "REPLICA_IS_NOT_READY";
    case ErrorCode::kObjectNotFound:
      return "OBJECT_NOT_FOUND";
    case ErrorCode::kObjectAlreadyExists:
      return "OBJECT_ALREADY_EXISTS";
    case ErrorCode::kObjectHasLease:
      return "OBJECT_HAS_LEASE";
    case ErrorCode::kLeaseExpired:
      return "LEASE_EXPIRED";
    case ErrorCode::kObjectHasReplicationTask:
      return "OBJECT_HAS_REPLICATION_TASK";
    case ErrorCode::kTaskNotFound:
      return "TASK_NOT_FOUND";
    case ErrorCode::kTaskPendingLimitExceeded:
      return "TASK_PENDING_LIMIT_EXCEEDED";
    case ErrorCode::kJobNotFound:
      return "JOB_NOT_FOUND";
    case ErrorCode::kTransferFail:
      return "TRANSFER_FAIL";
    case ErrorCode::kRpcFail:
      return "RPC_FAIL";
    case ErrorCode::kEtcdOperationError:
      return "ETCD_OPERATION_ERROR";
    case ErrorCode::kUnavailableInCurrentStatus:
      return "UNAVAILABLE_IN_CURRENT_STATUS";
    case ErrorCode::kUnavailableInCurrentMode:
      return "UNAVAILABLE_IN_CURRENT_MODE";
    case ErrorCode::kPersistentFail:
      return "PERSISTENT_FAIL";
    case ErrorCode::kTenantQuotaExceeded:
      return "TENANT_QUOTA_EXCEEDED";
    case ErrorCode::kTenantNotRegistered:
      return "TENANT_NOT_REGISTERED";
    case ErrorCode::kTenantNotEmpty:
      return "TENANT_NOT_EMPTY";
  }
  return "UNKNOWN_ERROR";
}

absl::Status MakeError(ErrorCode code, absl::string_view message) {
  if (code == ErrorCode::kOk) return absl::OkStatus();
  absl::Status status(CanonicalCode(code), absl::StrCat(ErrorCodeName(code), ": ", message));
  status.SetPayload(kPayloadUrl, absl::Cord(absl::StrCat(static_cast<int32_t>(code))));
  return status;
}

ErrorCode ToErrorCode(const absl::Status& status) {
  if (status.ok()) return ErrorCode::kOk;
  if (auto payload = status.GetPayload(kPayloadUrl)) {
    int32_t value = 0;
    if (absl::SimpleAtoi(std::string(*payload), &value)) return static_cast<ErrorCode>(value);
  }
  switch (status.code()) {
    case absl::StatusCode::kNotFound:
      return ErrorCode::kObjectNotFound;
    case absl::StatusCode::kAlreadyExists:
      return ErrorCode::kObjectAlreadyExists;
    case absl::StatusCode::kResourceExhausted:
      return ErrorCode::kNoAvailableHandle;
    case absl::StatusCode::kInvalidArgument:
    case absl::StatusCode::kOutOfRange:
      return ErrorCode::kInvalidParams;
    case absl::StatusCode::kDeadlineExceeded:
    case absl::StatusCode::kUnavailable:
      return ErrorCode::kRpcFail;
    case absl::StatusCode::kPermissionDenied:
      return ErrorCode::kIllegalClient;
    case absl::StatusCode::kDataLoss:
      return ErrorCode::kTransferFail;
    default:
      return ErrorCode::kInternalError;
  }
}

}  // namespace yuebing
