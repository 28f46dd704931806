#include "transport/local_transport.h"

#include <cstring>

#include "yuebing/common/check.h"

namespace yuebing::transport {

void LocalTransport::Submit(PeerSegment* target, TransferBatch* batch,
                            absl::Span<TransportWork> work, SteadyTime /*deadline*/) {
  YB_CHECK(target == nullptr, "the local transport serves only this engine's segment");
  for (TransportWork& item : work) {
    const TransferRequest& request = *item.request;
    item.task->Start(batch, 1);
    item.accepted = true;
    absl::StatusOr<MemoryRegistry::Pin> pin =
        registry_->Acquire(request.target_offset, request.length);
    if (pin.ok()) {
      YB_CHECK(pin->Covers(request.target_offset, request.length),
               "a local copy stays inside the buffer the registry pinned for it");
      void* target_addr = reinterpret_cast<void*>(request.target_offset);
      if (request.opcode == OpCode::kWrite) {
        std::memmove(target_addr, request.source, request.length);
      } else {
        std::memmove(request.source, target_addr, request.length);
      }
      bytes_.fetch_add(request.length, std::memory_order_relaxed);
    }
    item.task->FinishSlice(request.length, pin.status());
  }
}

}  // namespace yuebing::transport
