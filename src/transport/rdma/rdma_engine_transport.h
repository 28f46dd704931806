// The RDMA path as one of the engine's transports: adapts rdma::RdmaTransport (verbs, or the
// stub of a build without libibverbs) to the Transport contract, and keeps what the engine needs
// for its own segment: every registered buffer's rkeys (published in the descriptor) and the
// NICs. Exists only when protocol "rdma" found a device; otherwise the engine has no RDMA path.
//
// Declines (the engine falls back to tcp): the peer lists no NICs, the source is not registered
// here, the target range is not in one of the peer's RDMA-registered buffers, or no endpoint
// could be connected (rdma::RdmaTransport::Submit's errors). An accepted request's slices end by
// its deadline through the RDMA pollers (no watchdog needed).
//
// Thread safety: thread-safe.
#pragma once

#include <atomic>
#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "transport/rdma/rdma_transport.h"
#include "transport/transport.h"
#include "yuebing/common/mutex.h"

namespace yuebing::transport {

struct RdmaEngineOptions {
  std::string devices;  // comma-separated device names; empty: MC_RDMA_DEVICES, else all
  std::string local_segment_name;
  std::chrono::milliseconds connect_timeout{3000};
  std::string cluster_secret;
};

class RdmaEngineTransport final : public Transport {
 public:
  // Opens RDMA with MC_* tuning from the environment. Returns nullptr (after one warning) when
  // RDMA is unavailable (no device, or a build without libibverbs). Errors: kInvalidArgument for
  // a malformed MC_* variable.
  static absl::StatusOr<std::unique_ptr<RdmaEngineTransport>> Open(
      const RdmaEngineOptions& options);

  std::vector<RdmaNicDescriptor> LocalNics() const { return rdma_->LocalNics(); }
  // Registers a buffer on every NIC and remembers its rkeys. Errors: as RegisterMemory's.
  absl::Status RegisterMemory(uint64_t addr, uint64_t length, const std::string& location);
  // Forgets and deregisters the buffer at addr; failures are logged (nothing left to undo).
  void UnregisterMemory(uint64_t addr);
  // The rkeys of the buffer at addr; false when it is not (yet) registered with the NICs.
  bool Rkeys(uint64_t addr, std::vector<uint32_t>* rkeys);
  // Target side of the QP exchange (the TcpServer's RDMA_CONNECT handler).
  absl::StatusOr<std::string> HandleConnect(const std::string& request) {
    return rdma_->HandleConnect(request);
  }
  // Fails what is in flight and stops the pollers (before memory goes away).
  void Shutdown() { rdma_->Shutdown(); }

  const char* name() const override { return "rdma"; }
  // `target` must be an opened peer segment.
  void Submit(PeerSegment* target, TransferBatch* batch, absl::Span<TransportWork> work,
              SteadyTime deadline) override;
  uint64_t bytes() const override { return bytes_.load(std::memory_order_relaxed); }

 private:
  explicit RdmaEngineTransport(std::unique_ptr<rdma::RdmaTransport> rdma)
      : rdma_(std::move(rdma)) {}

  const std::unique_ptr<rdma::RdmaTransport> rdma_;
  std::atomic<uint64_t> bytes_{0};
  yuebing::Mutex mu_;
  absl::flat_hash_map<uint64_t, std::vector<uint32_t>> rkeys_ ABSL_GUARDED_BY(mu_);
};

}  // namespace yuebing::transport
