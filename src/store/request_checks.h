// Checks of what a caller hands the object client, shared by its reads, writes and sessions.
// Errors are kInvalidParams with a message naming what is wrong.
#pragma once

#include <cstdint>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "yuebing/common/error_code.h"
#include "yuebing/common/limits.h"
#include "yuebing/store/client.h"

namespace yuebing::store {

// A scoped key (yuebing/common/tenant_key.h): store::Client checks the user key's own bounds
// (1..kMaxKeyBytes) before scoping it; what reaches the object client is at most
// kMaxScopedKeyBytes.
inline absl::Status ValidateKey(const std::string& key) {
  if (key.empty() || key.size() > limits::kMaxScopedKeyBytes) {
    return MakeError(ErrorCode::kInvalidParams,
                     absl::StrCat("key must be 1..", limits::kMaxKeyBytes, " bytes"));
  }
  return absl::OkStatus();
}

// The checks every batch put makes of its whole call: as many sizes (or values) as keys, and a
// replica count the master can place.
inline absl::Status CheckBatchPut(size_t keys, size_t sizes, uint32_t replica_num) {
  if (keys != sizes)
    return MakeError(ErrorCode::kInvalidParams, "keys and values differ in length");
  if (replica_num == 0 || replica_num > limits::kMaxReplicas) {
    return MakeError(ErrorCode::kInvalidParams,
                     absl::StrCat("replica_num must be 1..", limits::kMaxReplicas));
  }
  return absl::OkStatus();
}

// Whether `range` lies inside an object of `size` bytes (a zero-length one may sit at its end)
// and has memory to read into or write from (a zero-length one needs none). Written so that no
// sum can wrap.
inline absl::Status CheckRange(const Client::Range& range, uint64_t size, const std::string& key) {
  const bool has_memory = range.data != nullptr || range.size == 0;
  if (has_memory && range.size <= size && range.offset <= size - range.size) {
    return absl::OkStatus();
  }
  return MakeError(ErrorCode::kInvalidParams,
                   absl::StrCat("range [", range.offset, ", +", range.size, ") of '", key, "' (",
                                size, " bytes) is out of bounds or has no memory"));
}

}  // namespace yuebing::store
