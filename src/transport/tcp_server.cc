#include "transport/tcp_server.h"

#include <poll.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "transport/buffered_socket_reader.h"
#include "transport/reply_batch.h"
#include "transport/socket_util.h"
#include "transport/tcp_auth.h"
#include "transport/wire_format.h"
#include "yuebing/common/check.h"
#include "yuebing/common/logging.h"
#include "yuebing/common/status.h"

namespace yuebing::transport {
namespace {

absl::Status SendReply(int fd, FrameType type, WireStatus status, const FrameHeader& request,
                       const void* payload, uint64_t payload_length) {
  uint8_t bytes[kFrameHeaderBytes];
  EncodeReplyHeader(type, status, request, payload_length, bytes);
  iovec iov[2] = {{bytes, kFrameHeaderBytes},
                  {const_cast<void*>(payload), static_cast<size_t>(payload_length)}};
  return SendAll(fd, iov, payload_length > 0 ? 2 : 1);
}

// Waits until the socket has data or is closed; idle connections wait here without a deadline.
bool WaitReadable(int fd) {
  pollfd pfd{fd, POLLIN, 0};
  int rc;
  do {
    rc = poll(&pfd, 1, -1);
  } while (rc < 0 && errno == EINTR);
  return rc > 0 && (pfd.revents & POLLIN) != 0;
}

// The reply type answering a request type (for refusals before authentication).
FrameType ReplyTypeOf(FrameType request) {
  switch (request) {
    case FrameType::kHello:
      return FrameType::kHelloReply;
    case FrameType::kWrite:
      return FrameType::kWriteReply;
    case FrameType::kRead:
      return FrameType::kReadReply;
    case FrameType::kReadObject:
      return FrameType::kReadObjectReply;
    default:
      return FrameType::kDescribeReply;
  }
}

}  // namespace

absl::StatusOr<std::unique_ptr<TcpServer>> TcpServer::Bind(const TcpServerOptions& options,
                                                           MemoryRegistry* registry) {
  uint16_t port = 0;
  YB_ASSIGN_OR_RETURN(int fd, ListenTcp(options.bind_host, options.port, &port));
  return std::unique_ptr<TcpServer>(new TcpServer(options, registry, fd, port));
}

TcpServer::TcpServer(const TcpServerOptions& options, MemoryRegistry* registry, int listen_fd,
                     uint16_t port)
    : options_(options),
      registry_(registry),
      port_(port),
      threads_(listen_fd, options.max_connections, "transfer engine tcp server",
               [this](int fd) { ServeConnection(fd); }) {}

TcpServer::~TcpServer() { threads_.Stop(); }

void TcpServer::Serve(std::string segment_name, uint64_t epoch,
                      std::function<std::string()> describe) {
  segment_name_ = std::move(segment_name);
  epoch_ = epoch;
  describe_ = std::move(describe);
  threads_.Start();
}

void TcpServer::SetObjectSource(ObjectSource source) {
  ObjectSource previous;
  yuebing::MutexLock lock(&source_mu_);
  previous.swap(object_source_);
  object_source_ = std::move(source);
  // Calls that started before the swap may still use `previous`; later ones are counted too,
  // which only makes this wait a little longer (each call is bounded by its source).
  source_mu_.Await(yuebing::Condition(
      +[](int* calls) { return *calls == 0; }, &source_calls_));
}

absl::Status TcpServer::ServeObject(int fd, const FrameHeader& request, const std::string& key) {
  auto reply = [&](WireStatus status, uint64_t size, const void* payload, uint64_t length) {
    FrameHeader header;
    header.type = FrameType::kReadObjectReply;
    header.status = status;
    header.request_id = request.request_id;
    header.addr = size;
    header.length = length;
    uint8_t bytes[kFrameHeaderBytes];
    EncodeFrameHeader(header, bytes);
    iovec iov[2] = {{bytes, kFrameHeaderBytes},
                    {const_cast<void*>(payload), static_cast<size_t>(length)}};
    return SendAll(fd, iov, length > 0 ? 2 : 1);
  };
  if (key.empty()) return reply(WireStatus::kProtocolError, 0, nullptr, 0);
  ObjectSource source;
  {
    yuebing::MutexLock lock(&source_mu_);
    if (!object_source_) return reply(WireStatus::kNoObjectSource, 0, nullptr, 0);
    source = object_source_;
    ++source_calls_;
  }
  absl::StatusOr<std::string> object = source(key);
  {
    yuebing::MutexLock lock(&source_mu_);
    --source_calls_;
  }
  if (!object.ok()) {
    WireStatus status = absl::IsNotFound(object.status())   ? WireStatus::kNotFound
                        : absl::IsDataLoss(object.status()) ? WireStatus::kCorrupt
                                                            : WireStatus::kInternal;
    if (status == WireStatus::kInternal) {
      YB_LOG_WARN("object source failed: {}", object.status().ToString());
    }
    return reply(status, 0, nullptr, 0);
  }
  const uint64_t size = object->size();
  if (size > request.addr || size > kMaxDataFrameBytes) {
    return reply(WireStatus::kTooSmall, size, nullptr, 0);
  }
  return reply(WireStatus::kOk, size, object->data(), size);
}

void TcpServer::ServeConnection(int fd) {
  SetRecvTimeout(fd, options_.frame_timeout);
  SetSendTimeout(fd, options_.frame_timeout);
  const AuthDeadline handshake_deadline =
      std::chrono::steady_clock::now() + options_.handshake_timeout;
  const bool needs_auth = !options_.cluster_secret.empty();
  bool authenticated = !needs_auth;
  bool bounded = true;  // reads are bounded by the handshake deadline until the connection is in
  bool greeted = false;
  absl::Status status;
  // Used once the connection is in (the handshake reads the socket itself, unbuffered).
  BufferedSocketReader reader(fd);
  // A header is read ahead (taking what follows it) unless the last frame was a large WRITE: a
  // stream of those is better received straight into memory than partly through the buffer.
  bool read_ahead = true;
  ReplyBatch replies;
  while (!threads_.stopping()) {
    uint8_t bytes[kFrameHeaderBytes];
    if (bounded) {
      status = RecvAllUntil(fd, bytes, kFrameHeaderBytes, handshake_deadline);
      if (absl::IsDeadlineExceeded(status)) {
        YB_LOG_WARN("closing connection from {}: no {} within {} ms", PeerAddress(fd),
                    needs_auth ? "authentication" : "request", options_.handshake_timeout.count());
      }
    } else {
      if (reader.buffered() == 0 && !WaitReadable(fd)) break;
      status = reader.Read(bytes, kFrameHeaderBytes, read_ahead);
    }
    if (!status.ok()) break;
    absl::StatusOr<FrameHeader> header = DecodeFrameHeader(bytes);
    if (!header.ok()) {
      status = header.status();
      YB_LOG_WARN("closing connection: malformed frame: {}", status.message());
      break;
    }
    if (header->type == FrameType::kAuthHello) {
      if (authenticated && needs_auth) {
        status = absl::InvalidArgumentError("second AUTH_HELLO");
        break;
      }
      status = AuthenticateInitiator(fd, options_.cluster_secret, *header, handshake_deadline);
      if (!status.ok()) {
        YB_LOG_WARN("refused transport connection from {}: {}", PeerAddress(fd), status.message());
        break;
      }
      authenticated = true;
      bounded = false;
      continue;
    }
    if (!authenticated) {
      // Nothing of the request is read or served: no registered memory, no descriptor.
      (void)SendReply(fd, ReplyTypeOf(header->type), WireStatus::kUnauthenticated, *header, nullptr,
                      0);
      status = absl::PermissionDeniedError(
          "request without cluster authentication (the initiator has no cluster secret)");
      YB_LOG_WARN("refused transport connection from {}: {}", PeerAddress(fd), status.message());
      break;
    }
    bounded = false;
    read_ahead = header->type != FrameType::kWrite || header->length <= kReadAheadPayloadBytes;
    const bool batched = header->type == FrameType::kRead || header->type == FrameType::kWrite;
    if (!batched && !replies.empty()) {
      status = replies.Send(fd);
      if (!status.ok()) break;
    }
    switch (header->type) {
      case FrameType::kHello: {
        std::string name(header->length, '\0');
        status = reader.Read(name.data(), name.size(), /*read_ahead=*/false);
        if (!status.ok()) break;
        bool ok = name == segment_name_ && (header->addr == 0 || header->addr == epoch_);
        FrameHeader echo = *header;
        echo.addr = epoch_;
        status = SendReply(fd, FrameType::kHelloReply,
                           ok ? WireStatus::kOk : WireStatus::kStaleEpoch, echo, nullptr, 0);
        if (!ok) status = absl::FailedPreconditionError("HELLO for another segment or epoch");
        greeted = ok;
        break;
      }
      case FrameType::kDescribe: {
        std::string descriptor = describe_();
        status = SendReply(fd, FrameType::kDescribeReply, WireStatus::kOk, *header,
                           descriptor.data(), descriptor.size());
        break;
      }
      case FrameType::kRdmaConnect: {
        std::string request(header->length, '\0');
        status = reader.Read(request.data(), request.size(), /*read_ahead=*/false);
        if (!status.ok()) break;
        absl::StatusOr<std::string> reply =
            !greeted        ? absl::FailedPreconditionError("RDMA_CONNECT before HELLO")
            : rdma_connect_ ? rdma_connect_(request)
                            : absl::UnimplementedError("this engine does not serve RDMA");
        std::string payload = reply.ok() ? *std::move(reply) : reply.status().ToString();
        status = SendReply(fd, FrameType::kRdmaConnectReply,
                           reply.ok() ? WireStatus::kOk : WireStatus::kProtocolError, *header,
                           payload.data(), std::min<size_t>(payload.size(), kMaxRdmaConnectBytes));
        break;
      }
      case FrameType::kWrite: {
        if (!greeted) {
          status = absl::FailedPreconditionError("WRITE before HELLO");
          break;
        }
        absl::StatusOr<MemoryRegistry::Pin> pin = registry_->Acquire(header->addr, header->length);
        if (pin.ok()) {
          YB_CHECK(pin->Covers(header->addr, header->length),
                   "a WRITE lands inside the buffer the registry pinned for it");
          status = reader.Read(reinterpret_cast<void*>(header->addr), header->length,
                               /*read_ahead=*/header->length <= kReadAheadPayloadBytes);
        } else {
          status = reader.Skip(header->length);
        }
        if (status.ok()) {
          replies.Add(FrameType::kWriteReply, pin.ok() ? WireStatus::kOk : WireStatus::kOutOfRange,
                      *header);
        }
        break;
      }
      case FrameType::kRead: {
        if (!greeted) {
          status = absl::FailedPreconditionError("READ before HELLO");
          break;
        }
        absl::StatusOr<MemoryRegistry::Pin> pin = registry_->Acquire(header->addr, header->length);
        if (pin.ok()) {
          YB_CHECK(pin->Covers(header->addr, header->length),
                   "a READ comes from inside the buffer the registry pinned for it");
          replies.AddRead(*header, reinterpret_cast<const void*>(header->addr), header->length,
                          *std::move(pin));
        } else {
          replies.Add(FrameType::kReadReply, WireStatus::kOutOfRange, *header);
        }
        break;
      }
      case FrameType::kReadObject: {
        std::string key(header->length, '\0');
        status = reader.Read(key.data(), key.size(), /*read_ahead=*/false);
        if (!status.ok()) break;
        if (!greeted) {
          status = absl::FailedPreconditionError("READ_OBJECT before HELLO");
          break;
        }
        status = ServeObject(fd, *header, key);
        break;
      }
      default:
        status = absl::InvalidArgumentError("reply frame sent to a server");
        break;
    }
    if (!status.ok()) break;
    // The batch goes out once no complete request is buffered behind it: the initiator may be
    // waiting for these replies before it sends more.
    if (!replies.empty() && (reader.buffered() < kFrameHeaderBytes || replies.full())) {
      status = replies.Send(fd);
      if (!status.ok()) break;
    }
  }
  if (!status.ok() && status.code() != absl::StatusCode::kUnavailable) {
    YB_LOG_DEBUG("closing connection: {}", status.ToString());
  }
}

}  // namespace yuebing::transport
