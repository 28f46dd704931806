// Private seam of HttpMetadataServer: starting it with smaller limits, so tests can reach every
// limit quickly. Production code uses HttpMetadataServer::Start.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "yuebing/common/http_metadata_server.h"

namespace yuebing::internal {

struct HttpMetadataServerLimits {
  size_t max_key_bytes = HttpMetadataServer::kMaxKeyBytes;
  size_t max_value_bytes = HttpMetadataServer::kMaxValueBytes;
  size_t max_keys = HttpMetadataServer::kMaxKeys;
};

// As HttpMetadataServer::Start, with `limits` in place of the defaults. Errors: kUnavailable
// (cannot bind), kInvalidArgument (a zero limit), kInternal (the server did not come up).
absl::StatusOr<std::unique_ptr<HttpMetadataServer>> StartHttpMetadataServer(
    const std::string& host, uint16_t port, const HttpMetadataServerLimits& limits);

}  // namespace yuebing::internal
