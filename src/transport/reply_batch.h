// Replies of the TCP server to READ and WRITE requests that arrived back to back, sent together
// in one sendmsg. The server adds each reply as it serves a request and sends the batch once no
// complete request is buffered behind it (the initiator may be waiting for these replies) or the
// batch is full; replies of other frames go out after the batch, so the stream stays in order.
//
// Ownership: a READ reply's payload is registered memory; the batch keeps its buffer pinned until
// the reply is sent. Thread safety: one thread at a time (the connection's).
#pragma once

#include <sys/uio.h>

#include <cstdint>
#include <vector>

#include "absl/status/status.h"
#include "transport/memory_registry.h"
#include "transport/wire_format.h"

namespace yuebing::transport {

class ReplyBatch {
 public:
  // Most replies and payload bytes sent in one batch.
  static constexpr size_t kMaxReplies = 64;
  static constexpr uint64_t kMaxBytes = 1ull << 20;

  // A reply of `type` and `status` to `request` with no payload.
  void Add(FrameType type, WireStatus status, const FrameHeader& request);
  // A kOk READ reply carrying `length` bytes at `payload`, inside the buffer `pin` holds.
  void AddRead(const FrameHeader& request, const void* payload, uint64_t length,
               MemoryRegistry::Pin pin);

  bool empty() const { return replies_.empty(); }
  bool full() const { return replies_.size() >= kMaxReplies || bytes_ >= kMaxBytes; }

  // Sends every reply in order and empties the batch (releasing its pins), also on error.
  // Errors: those of SendAll.
  absl::Status Send(int fd);

 private:
  struct Reply {
    uint8_t header[kFrameHeaderBytes];
    const void* payload;
    uint64_t length;
  };
  void Push(FrameType type, WireStatus status, const FrameHeader& request, const void* payload,
            uint64_t length);

  std::vector<Reply> replies_;
  std::vector<MemoryRegistry::Pin> pins_;
  std::vector<iovec> iov_;  // scratch of Send
  uint64_t bytes_ = 0;
};

// Encodes the header of a reply of `type` and `status` to `request` carrying `payload_length`
// bytes (request id and address echoed).
void EncodeReplyHeader(FrameType type, WireStatus status, const FrameHeader& request,
                       uint64_t payload_length, uint8_t* bytes);

}  // namespace yuebing::transport
