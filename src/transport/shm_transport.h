// The same-host path: the target process is on this host and the target range lies in one of its
// shm-backed buffers (AllocateSharedMemory), so the buffer is mapped into this process
// (ShmPeerMappings) and the request is one memcpy, done within Submit.
//
// Declines (the engine falls back to rdma/tcp): the target is on another host, its process is
// gone (a mapping outlives its owner, and a dead owner's memory must not look like a live
// target), the range is not in an shm buffer, or the buffer cannot be mapped. A range that is in
// no buffer of the descriptor makes it refresh the descriptor once (the buffer may be newer).
//
// Thread safety: thread-safe.
#pragma once

#include <atomic>
#include <functional>

#include "absl/status/status.h"
#include "transport/transport.h"

namespace yuebing::transport {

class ShmTransport final : public Transport {
 public:
  // `refresh` re-reads a segment's descriptor (the engine's rate-limited Refresh).
  explicit ShmTransport(std::function<absl::Status(PeerSegment&)> refresh)
      : refresh_(std::move(refresh)) {}

  const char* name() const override { return "shm"; }
  void Submit(PeerSegment* target, TransferBatch* batch, absl::Span<TransportWork> work,
              SteadyTime deadline) override;
  uint64_t bytes() const override { return bytes_.load(std::memory_order_relaxed); }

 private:
  // Copies one request if this path can serve it; false (task untouched) otherwise.
  bool TryCopy(PeerSegment& segment, TransferBatch* batch, TransportWork& item);

  const std::function<absl::Status(PeerSegment&)> refresh_;
  std::atomic<uint64_t> bytes_{0};
};

}  // namespace yuebing::transport
