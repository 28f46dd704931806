// Built when libibverbs was not found (or YUEBING_WITH_RDMA=OFF): RDMA is never available.
#include "transport/rdma/rdma_transport.h"

namespace yuebing::transport::rdma {

absl::StatusOr<std::unique_ptr<RdmaTransport>> CreateRdmaTransport(const RdmaTransportOptions&) {
  return absl::UnavailableError(
      "this build has no RDMA transport (libibverbs not found, or YUEBING_WITH_RDMA=OFF)");
}

std::vector<std::string> ListRdmaDevices() { return {}; }

}  // namespace yuebing::transport::rdma
