#include "transport/rdma/rdma_engine_transport.h"

#include "absl/strings/ascii.h"
#include "absl/strings/str_split.h"
#include "transport/peer_segment.h"
#include "yuebing/common/check.h"
#include "yuebing/common/logging.h"
#include "yuebing/common/status.h"

namespace yuebing::transport {

absl::StatusOr<std::unique_ptr<RdmaEngineTransport>> RdmaEngineTransport::Open(
    const RdmaEngineOptions& options) {
  YB_ASSIGN_OR_RETURN(rdma::RdmaConfig config, rdma::LoadRdmaConfigFromEnvironment());
  rdma::RdmaTransportOptions rdma_options;
  rdma_options.config = std::move(config);
  if (!options.devices.empty()) {
    rdma_options.config.device_filter.clear();
    for (absl::string_view name : absl::StrSplit(options.devices, ',')) {
      name = absl::StripAsciiWhitespace(name);
      if (!name.empty()) rdma_options.config.device_filter.emplace_back(name);
    }
  }
  rdma_options.local_segment_name = options.local_segment_name;
  rdma_options.connect_timeout = options.connect_timeout;
  rdma_options.cluster_secret = options.cluster_secret;
  absl::StatusOr<std::unique_ptr<rdma::RdmaTransport>> transport =
      rdma::CreateRdmaTransport(rdma_options);
  if (!transport.ok()) {
    YB_LOG_WARN("protocol \"rdma\" requested but RDMA is unavailable ({}); using TCP",
                transport.status().message());
    return std::unique_ptr<RdmaEngineTransport>();
  }
  return std::unique_ptr<RdmaEngineTransport>(new RdmaEngineTransport(*std::move(transport)));
}

absl::Status RdmaEngineTransport::RegisterMemory(uint64_t addr, uint64_t length,
                                                 const std::string& location) {
  YB_ASSIGN_OR_RETURN(std::vector<uint32_t> rkeys,
                      rdma_->RegisterMemory(reinterpret_cast<void*>(addr), length, location));
  YB_CHECK(rkeys.size() == rdma_->LocalNics().size(), "one rkey per local NIC");
  yuebing::MutexLock lock(&mu_);
  rkeys_[addr] = std::move(rkeys);
  return absl::OkStatus();
}

void RdmaEngineTransport::UnregisterMemory(uint64_t addr) {
  {
    yuebing::MutexLock lock(&mu_);
    rkeys_.erase(addr);
  }
  absl::Status status = rdma_->UnregisterMemory(reinterpret_cast<void*>(addr));
  if (!status.ok()) YB_LOG_WARN("RDMA deregistration: {}", status.ToString());
}

bool RdmaEngineTransport::Rkeys(uint64_t addr, std::vector<uint32_t>* rkeys) {
  yuebing::MutexLock lock(&mu_);
  auto it = rkeys_.find(addr);
  if (it == rkeys_.end()) return false;
  *rkeys = it->second;
  return true;
}

void RdmaEngineTransport::Submit(PeerSegment* target, TransferBatch* batch,
                                 absl::Span<TransportWork> work, SteadyTime deadline) {
  YB_CHECK(target != nullptr, "the rdma transport serves opened peer segments only");
  std::shared_ptr<const SegmentDescriptor> descriptor = target->Descriptor();
  for (TransportWork& item : work) {
    YB_CHECK(!item.accepted, "a request offered to rdma was already taken");
    absl::Status status = rdma_->Submit(*descriptor, *item.request, batch, *item.task, deadline);
    if (!status.ok()) {
      YB_LOG_DEBUG("request to {} not over RDMA: {}", target->name, status.ToString());
      continue;
    }
    item.accepted = true;
    bytes_.fetch_add(item.request->length, std::memory_order_relaxed);
  }
}

}  // namespace yuebing::transport
