// Cuts one RDMA request into slices and spreads them over NICs and QPs (striping). Pure function:
// no verbs, no state, unit-tested.
#pragma once

#include <cstdint>
#include <vector>

#include "absl/status/statusor.h"

namespace yuebing::transport::rdma {

struct PlannedSlice {
  uint64_t offset = 0;  // from the start of the request
  uint64_t length = 0;
  uint32_t path = 0;  // index into the request's usable paths (local NIC -> remote NIC pairs)
  uint32_t qp = 0;    // QP of that path's endpoint, in [0, qps_per_path)
};

struct SlicePlanInput {
  uint64_t length = 0;
  uint64_t slice_bytes = 0;
  uint32_t paths = 0;         // usable paths, > 0
  uint32_t qps_per_path = 0;  // > 0
  uint64_t rotation = 0;      // which path/QP the first slice takes (a per-transport counter, so
                              // consecutive small requests spread too)
  uint64_t max_slices = 1ull << 20;
};

// Slices cover [0, length) in order, each slice_bytes long except the last. Slice i goes to path
// (rotation + i) % paths and, per path, round-robin over its QPs.
// Errors: kInvalidArgument for zero length/slice size/paths/QPs; kResourceExhausted when more
// than max_slices would be needed.
absl::StatusOr<std::vector<PlannedSlice>> PlanSlices(const SlicePlanInput& input);

// Pairs each usable local NIC with a remote NIC: local candidate k uses remote NIC k % remote_nics
// (rail alignment when both hosts have the same NIC layout). Returns one remote index per local
// candidate; empty when remote_nics is 0.
std::vector<uint32_t> PairRemoteNics(uint32_t local_candidates, uint32_t remote_nics);

}  // namespace yuebing::transport::rdma
