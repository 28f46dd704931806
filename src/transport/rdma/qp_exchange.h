// The messages that connect RC QPs. The initiator sends an RdmaConnectRequest in an RDMA_CONNECT
// frame over the target's TCP listener (after HELLO, so it reaches the incarnation it expects);
// the target creates matching QPs, moves them to RTS and answers with its own QpSetInfo. Encoded as
// JSON; plain C++, unit-tested. Decoding validates every field (24-bit QPNs and PSN, 16-byte GID
// in hex, QP count 1..255, known MTU).
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace yuebing::transport::rdma {

using Gid = std::array<uint8_t, 16>;

// One side's QPs of an endpoint (one local NIC to one remote NIC).
struct QpSetInfo {
  std::string nic;             // the sender's NIC name
  uint16_t lid = 0;            // InfiniBand LID; 0 on RoCE
  Gid gid{};                   // RoCE / global routing; all zero when unused
  uint32_t psn = 0;            // first packet sequence number of every QP (24 bits)
  uint32_t mtu = 4096;         // path MTU the sender will use (bytes); both sides use the minimum
  std::vector<uint32_t> qpns;  // QP numbers, 24 bits each
};

struct RdmaConnectRequest {
  std::string initiator;   // the initiator's segment name, for the target's endpoint key
  std::string target_nic;  // which of the target's NICs the QPs must live on
  QpSetInfo qps;
};

std::string EncodeRdmaConnectRequest(const RdmaConnectRequest& request);
std::string EncodeQpSetInfo(const QpSetInfo& info);
// Errors: kInvalidArgument describing the first bad field.
absl::StatusOr<RdmaConnectRequest> DecodeRdmaConnectRequest(absl::string_view json);
absl::StatusOr<QpSetInfo> DecodeQpSetInfo(absl::string_view json);

// 32 lowercase hex digits <-> 16 bytes. Errors: kInvalidArgument.
std::string GidToHex(const Gid& gid);
absl::StatusOr<Gid> GidFromHex(absl::string_view hex);

}  // namespace yuebing::transport::rdma
