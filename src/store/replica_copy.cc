// Replica copy and move by the object client (the write half of Mooncake's copy/move tasks):
// the master reserves the new replicas (ReplicaCopyStart), this client reads the object (checked
// against its checksum) and writes it to them, then ends or revokes the copy (ReplicaCopyEnd).
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "store/object_client.h"
#include "store/request_checks.h"
#include "yuebing/common/checksum.h"
#include "yuebing/common/error_code.h"
#include "yuebing/common/logging.h"
#include "yuebing/common/status.h"

namespace yuebing::store {

absl::StatusOr<master::CopyPlan> ObjectClient::StartCopy(const std::string& key,
                                                         const std::string& source,
                                                         const std::vector<std::string>& targets,
                                                         bool move) {
  YB_RETURN_IF_ERROR(ValidateKey(key));
  return master_->ReplicaCopyStart(id_, key, source, targets, move);
}

absl::Status ObjectClient::FinishCopy(const std::string& key, const master::CopyPlan& plan) {
  if (plan.targets.empty()) return absl::OkStatus();
  absl::Status written = WriteCopy(key, plan);
  if (!written.ok()) {
    RevokeCopy(key);
    return written;
  }
  return master_->ReplicaCopyEnd(id_, key, /*revoke=*/false);
}

void ObjectClient::RevokeCopy(const std::string& key) {
  absl::Status revoked = master_->ReplicaCopyEnd(id_, key, /*revoke=*/true);
  if (!revoked.ok()) YB_LOG_DEBUG("copy of '{}': revoke: {}", key, revoked.ToString());
}

absl::Status ObjectClient::WriteCopy(const std::string& key, const master::CopyPlan& plan) {
  std::string bytes(plan.size, '\0');
  std::vector<absl::StatusOr<uint64_t>> read =
      BatchGetInto({key}, {Buffer{bytes.data(), bytes.size()}});
  if (!read[0].ok()) return read[0].status();
  if (*read[0] != plan.size ||
      (plan.checksum != kNoChecksum && ObjectChecksum(bytes) != plan.checksum)) {
    return MakeError(ErrorCode::kObjectNotFound,
                     absl::StrCat("'", key, "' changed while it was copied"));
  }
  std::vector<transport::TransferRequest> requests;
  for (const master::Replica& replica : plan.targets) {
    absl::StatusOr<transport::SegmentHandle> handle = HandleFor(replica);
    if (!handle.ok()) {
      return MakeError(ErrorCode::kTransferFail, absl::StrCat("segment ", replica.segment_name,
                                                              ": ", handle.status().message()));
    }
    transport::TransferRequest r;
    r.opcode = transport::OpCode::kWrite;
    r.source = bytes.data();
    r.target_id = *handle;
    r.target_offset = replica.address;
    r.length = bytes.size();
    requests.push_back(r);
  }
  std::vector<transport::TransferStatus> statuses = RunTransfers(requests);
  for (size_t k = 0; k < statuses.size(); ++k) {
    if (statuses[k].state != transport::TransferState::kCompleted) {
      return MakeError(
          ErrorCode::kTransferFail,
          absl::StrCat("copying '", key, "' to ", plan.targets[k].segment_name, ": ",
                       transport::TransferStateName(statuses[k].state), " ", statuses[k].reason));
    }
  }
  return absl::OkStatus();
}

}  // namespace yuebing::store
