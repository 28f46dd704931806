#include "transport/shm_transport.h"

#include <signal.h>

#include <cerrno>
#include <cstring>

#include "transport/peer_segment.h"
#include "yuebing/common/check.h"

namespace yuebing::transport {

void ShmTransport::Submit(PeerSegment* target, TransferBatch* batch, absl::Span<TransportWork> work,
                          SteadyTime /*deadline*/) {
  YB_CHECK(target != nullptr, "the shm transport serves opened peer segments only");
  for (TransportWork& item : work) {
    YB_CHECK(!item.accepted, "a request offered to shm was already taken");
    item.accepted = TryCopy(*target, batch, item);
  }
}

bool ShmTransport::TryCopy(PeerSegment& segment, TransferBatch* batch, TransportWork& item) {
  const TransferRequest& request = *item.request;
  for (int attempt = 0; attempt < 2; ++attempt) {
    std::shared_ptr<const SegmentDescriptor> descriptor = segment.Descriptor();
    if (descriptor->host_id != LocalHostId()) return false;
    if (kill(descriptor->pid, 0) != 0 && errno == ESRCH) return false;
    ShmTarget target = segment.shm.Translate(*descriptor, request.target_offset, request.length);
    if (target.address != nullptr) {
      YB_CHECK(target.region != nullptr && target.address >= target.region->data() &&
                   request.length <= target.region->length() &&
                   static_cast<uint64_t>(target.address - target.region->data()) <=
                       target.region->length() - request.length,
               "an shm translation lies inside its mapped region");
      item.task->Start(batch, 1);
      if (request.opcode == OpCode::kWrite) {
        std::memcpy(target.address, request.source, request.length);
      } else {
        std::memcpy(request.source, target.address, request.length);
      }
      bytes_.fetch_add(request.length, std::memory_order_relaxed);
      item.task->FinishSlice(request.length, absl::OkStatus());
      return true;
    }
    // The range may be in a buffer registered after our copy of the descriptor was taken.
    if (attempt == 0 && descriptor->FindBuffer(request.target_offset, request.length) == nullptr) {
      if (!refresh_(segment).ok()) return false;
      continue;
    }
    return false;
  }
  return false;
}

}  // namespace yuebing::transport
