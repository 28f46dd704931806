// The local path: the target is this engine's own segment, so a request is one memmove inside
// this process, done within Submit. The target range must lie inside one registered buffer (it is
// pinned for the copy); otherwise the task fails with kPermissionDenied. Never declines.
//
// Thread safety: thread-safe.
#pragma once

#include <atomic>

#include "transport/memory_registry.h"
#include "transport/transport.h"

namespace yuebing::transport {

class LocalTransport final : public Transport {
 public:
  explicit LocalTransport(MemoryRegistry* registry) : registry_(registry) {}

  const char* name() const override { return "local"; }
  // `target` must be nullptr (this engine's segment).
  void Submit(PeerSegment* target, TransferBatch* batch, absl::Span<TransportWork> work,
              SteadyTime deadline) override;
  uint64_t bytes() const override { return bytes_.load(std::memory_order_relaxed); }

 private:
  MemoryRegistry* const registry_;
  std::atomic<uint64_t> bytes_{0};
};

}  // namespace yuebing::transport
