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
// kInternal (a malformed reply), kPermissionDenied (the cluster secret was refused). With a
// non-empty `cluster_secret` the connection runs the mutual handshake of tcp_auth.h first.
absl::StatusOr<std::string> ExchangeQpInfo(const std::string& host, uint16_t port,
                                           const std::string& segment_name, uint64_t epoch,
                                           const std::string& cluster_secret,
                                           const std::string& request,
                                           std::chrono::milliseconds timeout);

}  // namespace yuebing::transport::rdma
