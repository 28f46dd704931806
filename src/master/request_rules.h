// The checks and dispatch a master network edge applies to a request before and around the
// MasterService, shared by the gRPC server (grpc_master_server.cc) and the in-process MasterApi
// used by tests (tests/support/in_process_master.*), so both answer a request the same way.
// All return kInvalidParams for bad input. Thread safety: stateless.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "yuebing/master/master_service.h"
#include "yuebing/master/types.h"

namespace yuebing::master {

// client id of 1..limits::kMaxClientIdBytes bytes.
absl::Status CheckClientId(const std::string& client_id);
// at most limits::kMaxBatchKeys keys.
absl::Status CheckBatchSize(size_t keys);
// a pattern of 1..limits::kMaxRegexBytes bytes.
absl::Status CheckRegexSize(const std::string& pattern);
// a segment whose [base, base + size) does not wrap around the address space.
absl::Status CheckSegmentRange(const Segment& segment);
// sizes: one per key; checksums: none at all (0 recorded for every key) or one per key.
absl::Status CheckPutSizes(size_t keys, size_t sizes);
absl::Status CheckPutChecksums(size_t keys, size_t checksums);

// BatchPutStart, or UpsertStart key by key when `upsert`. sizes.size() == keys.size();
// checksums: one per key, or empty (none announced).
std::vector<absl::StatusOr<std::vector<Replica>>> StartPuts(
    MasterService& service, const ClientId& client, const std::vector<std::string>& keys,
    const std::vector<uint64_t>& sizes, const ReplicateConfig& config, bool upsert,
    const std::vector<uint64_t>& checksums);

}  // namespace yuebing::master
