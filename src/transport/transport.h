// A data path of the transfer engine. The engine keeps the memory registry, the opened segments,
// the batches and the watchdog; for every request it picks transports by locality and offers the
// request to each in turn until one accepts it:
//
//   target is this engine          local (memcpy)
//   target on this host (shm on)   shm, then rdma (if any), then tcp
//   any other target               rdma (if any), then tcp
//
// tcp is always last and accepts everything it is offered.
//
// Contract of Submit, which every implementation keeps:
// - Accepting: a transport accepts a work item by calling item.task->Start(batch, slices) and
//   setting item.accepted; from then on it must finish every one of those slices exactly once
//   (TransferTask::FinishSlice), by the request's `deadline` (plus the time a watchdog tick or a
//   poller needs to notice it), whatever the peer does: COMPLETED, FAILED with a reason, or
//   TIMEOUT (a kDeadlineExceeded status). A finished slice never touches the request's memory
//   again, so a task's final state releases the caller's buffer.
// - Declining: an item the transport cannot serve (wrong locality, range not reachable by this
//   path, path unavailable) is left untouched (task not started, accepted false) so the engine
//   offers it to the next transport. Declining is not an error and is never reported to the
//   caller; a failure after accepting is reported through the task.
// - Buffers: the transport never owns request memory. It may read (WRITE) or write (READ) the
//   request's `source` range and the target range only between accepting and finishing the slice.
// - Inputs: the engine validated every request (non-null source, non-zero length, no address
//   wrap-around, a known opcode) and resolved its target; implementations may YB_CHECK that.
// - Thread safety: every method may be called from any thread concurrently.
#pragma once

#include <cstdint>

#include "absl/types/span.h"
#include "transport/transfer_batch.h"
#include "yuebing/common/clock.h"
#include "yuebing/transport/transfer_engine.h"

namespace yuebing::transport {

struct PeerSegment;

// One request offered to a transport, and whether the transport took it.
struct TransportWork {
  const TransferRequest* request = nullptr;
  TransferTask* task = nullptr;
  bool accepted = false;  // set by the transport that started the task
};

class Transport {
 public:
  virtual ~Transport() = default;

  // Short name for logs and docs ("local", "shm", "tcp", "rdma").
  virtual const char* name() const = 0;

  // Offers `work` (requests of `batch` to one target, none accepted yet) as described above.
  // `target` is the opened peer segment, or nullptr for this engine's own segment.
  virtual void Submit(PeerSegment* target, TransferBatch* batch, absl::Span<TransportWork> work,
                      SteadyTime deadline) = 0;

  // Called by the engine's watchdog every few milliseconds: finishes (TIMEOUT) or aborts whatever
  // this transport holds past its deadline. Transports that enforce deadlines themselves (or
  // finish everything inside Submit) do nothing here.
  virtual void ExpireDeadlines(SteadyTime now) { (void)now; }

  // Bytes of the requests this transport accepted since the engine started (local counts only
  // those that succeeded, as the engine's statistics always did).
  virtual uint64_t bytes() const = 0;
};

// Helpers for implementations.
inline uint32_t SliceCount(uint64_t length, uint64_t slice_bytes) {
  return static_cast<uint32_t>((length + slice_bytes - 1) / slice_bytes);
}

}  // namespace yuebing::transport
