// Fuzzes the RDMA QP-exchange decoders (the payload of RDMA_CONNECT and its reply, from an
// authenticated but otherwise untrusted peer): any text decodes or fails cleanly; a decoded message
// re-encodes to JSON that decodes to the same message.
#include <cstdint>
#include <cstdlib>

#include "absl/strings/string_view.h"
#include "transport/rdma/qp_exchange.h"

namespace rdma = yuebing::transport::rdma;

namespace {

bool SameQps(const rdma::QpSetInfo& a, const rdma::QpSetInfo& b) {
  return a.nic == b.nic && a.lid == b.lid && a.gid == b.gid && a.psn == b.psn && a.mtu == b.mtu &&
         a.qpns == b.qpns;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const absl::string_view text(reinterpret_cast<const char*>(data), size);
  if (absl::StatusOr<rdma::QpSetInfo> info = rdma::DecodeQpSetInfo(text); info.ok()) {
    absl::StatusOr<rdma::QpSetInfo> again = rdma::DecodeQpSetInfo(rdma::EncodeQpSetInfo(*info));
    if (!again.ok() || !SameQps(*info, *again)) std::abort();
  }
  if (absl::StatusOr<rdma::RdmaConnectRequest> request = rdma::DecodeRdmaConnectRequest(text);
      request.ok()) {
    absl::StatusOr<rdma::RdmaConnectRequest> again =
        rdma::DecodeRdmaConnectRequest(rdma::EncodeRdmaConnectRequest(*request));
    if (!again.ok() || again->initiator != request->initiator ||
        again->target_nic != request->target_nic || !SameQps(again->qps, request->qps)) {
      std::abort();
    }
  }
  return 0;
}
