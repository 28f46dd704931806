// The initiator side of READ_OBJECT (wire_format.h): reads one whole object by key from another
// engine's object source over a connection of its own (connect, cluster-secret handshake, HELLO,
// READ_OBJECT, close). The object's bytes go from the socket straight into the caller's pieces.
//
// Thread safety: touches only its own socket; any number may run at once.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "yuebing/transport/transfer_engine.h"

namespace yuebing::transport {

struct ObjectReadOptions {
  std::string cluster_secret;  // empty: no authentication
  std::chrono::milliseconds connect_timeout{3000};
};

// See TransferEngine::ReadObject for the contract and the errors; `deadline` is final here.
absl::StatusOr<uint64_t> ReadObjectOverTcp(const std::string& segment_name, absl::string_view key,
                                           absl::Span<const ObjectBuffer> dest,
                                           const ObjectReadOptions& options,
                                           std::chrono::steady_clock::time_point deadline);

}  // namespace yuebing::transport
