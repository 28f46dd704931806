// Tuning of the RDMA transport, read from MC_* environment variables (the names Mooncake's transfer
// engine uses, so existing deployment scripts keep working). Unset variables keep the defaults;
// a set but invalid value is an error, not silently ignored.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace yuebing::transport::rdma {

struct RdmaConfig {
  uint32_t qps_per_endpoint = 2;           // MC_NUM_QP_PER_EP: RC QPs per (peer, local NIC)
  uint32_t max_endpoints = 256;            // MC_MAX_EP_PER_CTX: cached endpoints per local NIC
  uint64_t slice_bytes = 64 << 10;         // MC_SLICE_SIZE: requests are cut into slices of this
  uint32_t retry_count = 9;                // MC_RETRY_CNT: attempts of one slice, over all NICs
  uint8_t ib_port = 1;                     // MC_IB_PORT
  int32_t gid_index = 3;                   // MC_GID_INDEX (RoCE); ignored on InfiniBand (LID)
  uint32_t max_cqe = 4096;                 // MC_MAX_CQE_PER_CTX: CQ depth per NIC
  uint32_t max_wr = 256;                   // MC_MAX_WR: send queue depth per QP
  uint32_t mtu = 4096;                     // MC_MTU: 512, 1024, 2048 or 4096 (clamped to the port)
  std::vector<std::string> device_filter;  // MC_RDMA_DEVICES (ours): comma list; empty = all
};

// Reads the variables through `getenv` (std::getenv in production; a map in tests).
// Errors: kInvalidArgument naming the variable and the accepted range.
using EnvLookup = std::function<std::optional<std::string>(const char* name)>;
absl::StatusOr<RdmaConfig> LoadRdmaConfig(const EnvLookup& getenv);
absl::StatusOr<RdmaConfig> LoadRdmaConfigFromEnvironment();

}  // namespace yuebing::transport::rdma
