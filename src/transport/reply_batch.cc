#include "transport/reply_batch.h"

#include "transport/socket_util.h"

namespace yuebing::transport {

void EncodeReplyHeader(FrameType type, WireStatus status, const FrameHeader& request,
                       uint64_t payload_length, uint8_t* bytes) {
  FrameHeader reply;
  reply.type = type;
  reply.status = status;
  reply.request_id = request.request_id;
  reply.addr = request.addr;
  reply.length = payload_length;
  EncodeFrameHeader(reply, bytes);
}

void ReplyBatch::Push(FrameType type, WireStatus status, const FrameHeader& request,
                      const void* payload, uint64_t length) {
  Reply& reply = replies_.emplace_back();
  EncodeReplyHeader(type, status, request, length, reply.header);
  reply.payload = payload;
  reply.length = length;
  bytes_ += length;
}

void ReplyBatch::Add(FrameType type, WireStatus status, const FrameHeader& request) {
  Push(type, status, request, nullptr, 0);
}

void ReplyBatch::AddRead(const FrameHeader& request, const void* payload, uint64_t length,
                         MemoryRegistry::Pin pin) {
  Push(FrameType::kReadReply, WireStatus::kOk, request, payload, length);
  pins_.push_back(std::move(pin));
}

absl::Status ReplyBatch::Send(int fd) {
  iov_.clear();
  for (Reply& reply : replies_) {
    iov_.push_back({reply.header, kFrameHeaderBytes});
    if (reply.length > 0) {
      iov_.push_back({const_cast<void*>(reply.payload), static_cast<size_t>(reply.length)});
    }
  }
  absl::Status sent =
      iov_.empty() ? absl::OkStatus() : SendAll(fd, iov_.data(), static_cast<int>(iov_.size()));
  replies_.clear();
  pins_.clear();
  bytes_ = 0;
  return sent;
}

}  // namespace yuebing::transport
