// The parts of the public TransferEngine API that are the same for every implementation.
#include "yuebing/transport/transfer_engine.h"

#include <cstdlib>

#include "absl/strings/str_cat.h"
#include "transport/transfer_engine_impl.h"
#include "yuebing/common/logging.h"
#include "yuebing/common/status.h"

namespace yuebing::transport {

const char* TransferStateName(TransferState state) {
  switch (state) {
    case TransferState::kWaiting:
      return "WAITING";
    case TransferState::kPending:
      return "PENDING";
    case TransferState::kCompleted:
      return "COMPLETED";
    case TransferState::kFailed:
      return "FAILED";
    case TransferState::kTimeout:
      return "TIMEOUT";
  }
  return "UNKNOWN";
}

absl::StatusOr<std::unique_ptr<TransferEngine>> TransferEngine::Create(
    const TransferEngineOptions& options) {
  // MC_FORCE_TCP, read as upstream reads it: set at all (any value) means no RDMA. Same-host
  // shared memory stays on: it is not RDMA (YUEBING_ENABLE_SHM=0 turns it off).
  if (options.protocol == "rdma" && std::getenv("MC_FORCE_TCP") != nullptr) {
    YB_LOG_INFO("MC_FORCE_TCP is set: protocol \"rdma\" runs over TCP");
    TransferEngineOptions tcp = options;
    tcp.protocol = "tcp";
    return CreateTransferEngine(tcp);
  }
  return CreateTransferEngine(options);
}

absl::StatusOr<std::vector<TransferStatus>> TransferEngine::TransferSyncStatuses(
    absl::Span<const TransferRequest> requests) {
  if (requests.empty()) return std::vector<TransferStatus>();
  YB_ASSIGN_OR_RETURN(BatchId batch, AllocateBatch(requests.size()));
  absl::Status status = SubmitTransfer(batch, requests);
  if (!status.ok()) {
    (void)FreeBatch(batch);
    return status;
  }
  return WaitAndFreeBatch(batch);
}

absl::Status TransferEngine::TransferSync(absl::Span<const TransferRequest> requests) {
  YB_ASSIGN_OR_RETURN(std::vector<TransferStatus> statuses, TransferSyncStatuses(requests));
  for (size_t i = 0; i < statuses.size(); ++i) {
    if (statuses[i].state != TransferState::kCompleted) {
      absl::StatusCode code = statuses[i].state == TransferState::kTimeout
                                  ? absl::StatusCode::kDeadlineExceeded
                                  : absl::StatusCode::kUnavailable;
      return absl::Status(
          code, absl::StrCat("request ", i, " ", TransferStateName(statuses[i].state), ": ",
                             statuses[i].reason));
    }
  }
  return absl::OkStatus();
}

}  // namespace yuebing::transport
