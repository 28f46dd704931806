// Client side of the RDMA QP exchange over the target's TCP listener: one short connection that
// sends HELLO (target segment name and expected epoch) then RDMA_CONNECT, and returns the reply
// payload. No verbs; used by the RDMA transport and tested against a real TcpServer.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>

#include "absl/status/statusor.h"

namespace yuebing::transport::rdma {

// Errors: kUnavailable (cannot connect, connection lost, `timeout` passed on a read),
// kFailedPrecondition (the target's epoch or name differs: it restarted),
// kAborted (the target refused the exchange; the message carries its reason),
// kInternal (a malformed reply).
absl::StatusOr<std::string> ExchangeQpInfo(const std::string& host, uint16_t port,
                                           const std::string& segment_name, uint64_t epoch,
                                           const std::string& request,
                                           std::chrono::milliseconds timeout);

}  // namespace yuebing::transport::rdma
