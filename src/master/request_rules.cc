#include "master/request_rules.h"

#include <limits>

#include "absl/strings/str_cat.h"
#include "yuebing/common/error_code.h"
#include "yuebing/common/limits.h"

namespace yuebing::master {
namespace {

absl::Status Invalid(absl::string_view message) {
  return MakeError(ErrorCode::kInvalidParams, message);
}

}  // namespace

absl::Status CheckClientId(const std::string& client_id) {
  if (client_id.empty()) return Invalid("empty client_id");
  if (client_id.size() > limits::kMaxClientIdBytes) {
    return Invalid(absl::StrCat("client_id longer than ", limits::kMaxClientIdBytes, " bytes"));
  }
  return absl::OkStatus();
}

absl::Status CheckBatchSize(size_t keys) {
  if (keys > limits::kMaxBatchKeys) {
    return Invalid(
        absl::StrCat("batch of ", keys, " keys is over the limit of ", limits::kMaxBatchKeys));
  }
  return absl::OkStatus();
}

absl::Status CheckRegexSize(const std::string& pattern) {
  if (pattern.empty() || pattern.size() > limits::kMaxRegexBytes) {
    return Invalid(absl::StrCat("regex must be 1..", limits::kMaxRegexBytes, " bytes"));
  }
  return absl::OkStatus();
}

absl::Status CheckSegmentRange(const Segment& segment) {
  if (segment.size > std::numeric_limits<uint64_t>::max() - segment.base) {
    return Invalid("segment range wraps around the address space");
  }
  return absl::OkStatus();
}

absl::Status CheckPutSizes(size_t keys, size_t sizes) {
  if (keys != sizes) return Invalid(absl::StrCat(keys, " keys but ", sizes, " sizes"));
  return absl::OkStatus();
}

absl::Status CheckPutChecksums(size_t keys, size_t checksums) {
  if (checksums != 0 && checksums != keys) {
    return Invalid(absl::StrCat(keys, " keys but ", checksums, " checksums"));
  }
  return absl::OkStatus();
}

std::vector<absl::StatusOr<std::vector<Replica>>> StartPuts(
    MasterService& service, const ClientId& client, const std::vector<std::string>& keys,
    const std::vector<uint64_t>& sizes, const ReplicateConfig& config, bool upsert,
    const std::vector<uint64_t>& checksums) {
  if (!upsert) return service.BatchPutStart(client, keys, sizes, config, checksums);
  std::vector<absl::StatusOr<std::vector<Replica>>> results;
  results.reserve(keys.size());
  for (size_t i = 0; i < keys.size(); ++i) {
    const uint64_t checksum = i < checksums.size() ? checksums[i] : 0;
    results.push_back(service.UpsertStart(client, keys[i], sizes[i], config, checksum));
  }
  return results;
}

}  // namespace yuebing::master
