#include "transport/rdma/slice_planner.h"

#include <algorithm>

#include "absl/strings/str_cat.h"

namespace yuebing::transport::rdma {

absl::StatusOr<std::vector<PlannedSlice>> PlanSlices(const SlicePlanInput& in) {
  if (in.length == 0 || in.slice_bytes == 0 || in.paths == 0 || in.qps_per_path == 0) {
    return absl::InvalidArgumentError("slice plan needs positive length, slice size, paths, QPs");
  }
  const uint64_t count = in.length / in.slice_bytes + (in.length % in.slice_bytes != 0 ? 1 : 0);
  if (count > in.max_slices) {
    return absl::ResourceExhaustedError(absl::StrCat("request of ", in.length, " bytes needs ",
                                                     count, " slices (limit ", in.max_slices, ")"));
  }
  std::vector<PlannedSlice> out;
  out.reserve(count);
  for (uint64_t i = 0; i < count; ++i) {
    PlannedSlice slice;
    slice.offset = i * in.slice_bytes;
    slice.length = std::min(in.slice_bytes, in.length - slice.offset);
    const uint64_t turn = in.rotation + i;
    slice.path = static_cast<uint32_t>(turn % in.paths);
    slice.qp = static_cast<uint32_t>((turn / in.paths) % in.qps_per_path);
    out.push_back(slice);
  }
  return out;
}

std::vector<uint32_t> PairRemoteNics(uint32_t local_candidates, uint32_t remote_nics) {
  std::vector<uint32_t> out;
  if (remote_nics == 0) return out;
  for (uint32_t k = 0; k < local_candidates; ++k) out.push_back(k % remote_nics);
  return out;
}

}  // namespace yuebing::transport::rdma
