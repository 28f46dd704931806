// The RDMA transport as the engine sees it. Built on libibverbs when the build found it
// (verbs_rdma_transport.cc); otherwise CreateRdmaTransport always says why not
// (no_rdma_transport.cc). No verbs type appears here, so the engine compiles either way.
//
// Thread safety: every method may be called from any thread concurrently.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "transport/rdma/rdma_config.h"
#include "transport/segment_descriptor.h"
#include "transport/transfer_batch.h"
#include "yuebing/common/clock.h"

namespace yuebing::transport::rdma {

struct RdmaTransportOptions {
  RdmaConfig config;
  std::string sysfs_root = "/sys";
  std::string local_segment_name;  // sent to targets to key their endpoints
  std::chrono::milliseconds connect_timeout{3000};
  std::string cluster_secret;  // when set, the QP exchange connection authenticates first
};

class RdmaTransport {
 public:
  virtual ~RdmaTransport() = default;

  // This engine's NICs, for its segment descriptor (same order as the rkeys below).
  virtual std::vector<RdmaNicDescriptor> LocalNics() const = 0;

  // Registers [addr, addr+length) on every NIC for local and remote access; returns one rkey per
  // NIC. Errors: kAlreadyExists, kResourceExhausted / kInternal from the driver.
  virtual absl::StatusOr<std::vector<uint32_t>> RegisterMemory(void* addr, size_t length,
                                                               const std::string& location) = 0;
  // Deregisters the region starting at addr. Errors: kNotFound.
  virtual absl::Status UnregisterMemory(void* addr) = 0;

  // Target side of the QP exchange (the TcpServer's RDMA_CONNECT handler): creates QPs on the
  // named local NIC, connects them to the initiator's, returns this side's QP info (JSON).
  virtual absl::StatusOr<std::string> HandleConnect(const std::string& request) = 0;

  // Starts `request` toward `peer` over RDMA: plans slices, calls task.Start(batch, slices) and
  // posts them; every slice later finishes the task exactly once (COMPLETED, FAILED after retries
  // on other NICs, or TIMEOUT at `deadline`). Errors (task NOT started, the caller may use TCP):
  // kFailedPrecondition when RDMA cannot serve it (peer lists no NICs, source not registered
  // here, target range not in one of the peer's buffers), kUnavailable when no endpoint could be
  // connected.
  virtual absl::Status Submit(const SegmentDescriptor& peer, const TransferRequest& request,
                              TransferBatch* batch, TransferTask& task, SteadyTime deadline) = 0;

  // Fails what is in flight and stops the pollers. Called before the memory goes away.
  virtual void Shutdown() = 0;
};

// Opens the NICs that ibv_get_device_list returns (filtered by config.device_filter). Errors:
// kUnavailable with the reason (built without libibverbs, no device, none could be opened).
absl::StatusOr<std::unique_ptr<RdmaTransport>> CreateRdmaTransport(
    const RdmaTransportOptions& options);

// Names of the RDMA devices the verbs library reports; empty without libibverbs.
std::vector<std::string> ListRdmaDevices();

}  // namespace yuebing::transport::rdma
