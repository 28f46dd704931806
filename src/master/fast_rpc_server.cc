#include "master/fast_rpc_server.h"

#include <malloc.h>
#include <sys/uio.h>

#include <utility>

#include "absl/synchronization/notification.h"
#include "transport/socket_util.h"
#include "transport/tcp_auth.h"
#include "yuebing/common/logging.h"

namespace yuebing::master {
namespace {

// One call between the connection thread and whichever thread answers it; shared, so that the
// answering thread never touches memory the connection thread has already released.
struct PendingCall {
  absl::Notification answered;
  rpc::FastStatus status = rpc::FastStatus::kOk;
  std::string reply;
};

}  // namespace

absl::StatusOr<std::unique_ptr<FastRpcServer>> FastRpcServer::Start(const std::string& host,
                                                                    uint16_t port,
                                                                    Dispatcher dispatcher,
                                                                    Options options) {
  if (dispatcher == nullptr) return absl::InvalidArgumentError("no dispatcher given");
  uint16_t bound = 0;
  absl::StatusOr<int> fd = transport::ListenTcp(host, port, &bound);
  if (!fd.ok()) return fd.status();
  std::unique_ptr<FastRpcServer> server(
      new FastRpcServer(std::move(dispatcher), options, *fd, bound));
  server->threads_.Start();
  return server;
}

FastRpcServer::FastRpcServer(Dispatcher dispatcher, Options options, int listen_fd, uint16_t port)
    : dispatcher_(std::move(dispatcher)),
      options_(options),
      port_(port),
      threads_(listen_fd, options.max_connections, "master fast rpc",
               [this](int fd) { Serve(fd); }) {}

FastRpcServer::~FastRpcServer() { Shutdown(); }

void FastRpcServer::Serve(int fd) {
  transport::SetSendTimeout(fd, options_.frame_timeout);
  if (options_.metrics != nullptr) options_.metrics->AddFastRpcConnections(1);
  while (!threads_.stopping()) {
    uint8_t head[rpc::kFastHeaderBytes];
    // Idle connections wait for a frame's first bytes without a deadline (Shutdown() ends the
    // wait); the rest of the frame must come within frame_timeout.
    const absl::StatusOr<size_t> got = transport::RecvSome(fd, head, sizeof(head));
    if (!got.ok()) break;
    const auto deadline = std::chrono::steady_clock::now() + options_.frame_timeout;
    if (*got < sizeof(head) &&
        !transport::RecvAllUntil(fd, head + *got, sizeof(head) - *got, deadline).ok()) {
      break;
    }
    const std::optional<rpc::FastHeader> header = rpc::DecodeFastHeader(head);
    if (!header.has_value()) {
      YB_LOG_WARN("fast rpc: closing the connection from {}: malformed frame header",
                  transport::PeerAddress(fd));
      break;
    }
    std::string request(header->length, '\0');
    if (!transport::RecvAllUntil(fd, request.data(), request.size(), deadline).ok()) break;

    auto pending = std::make_shared<PendingCall>();
    if (threads_.stopping()) {
      pending->status = rpc::FastStatus::kShuttingDown;
    } else {
      dispatcher_(header->method, std::move(request),
                  [pending](rpc::FastStatus status, std::string reply) {
                    pending->status = status;
                    pending->reply = std::move(reply);
                    pending->answered.Notify();
                  });
      pending->answered.WaitForNotification();
    }
    rpc::FastHeader answer{header->method, pending->status,
                           static_cast<uint32_t>(pending->reply.size())};
    if (pending->status != rpc::FastStatus::kOk ||
        pending->reply.size() > rpc::kFastMaxPayloadBytes) {
      answer.status = pending->status == rpc::FastStatus::kOk ? rpc::FastStatus::kReplyTooLarge
                                                              : pending->status;
      answer.length = 0;
    }
    uint8_t out[rpc::kFastHeaderBytes];
    rpc::EncodeFastHeader(answer, out);
    iovec parts[2] = {{out, sizeof(out)}, {pending->reply.data(), answer.length}};
    // Counted before the reply leaves, so that a client reading the metrics next sees it.
    if (options_.metrics != nullptr && answer.status == rpc::FastStatus::kOk) {
      options_.metrics->RecordFastRpcFrame();
    }
    if (!transport::SendAll(fd, parts, answer.length > 0 ? 2 : 1).ok()) break;
  }
  if (options_.metrics != nullptr) options_.metrics->AddFastRpcConnections(-1);
  ReturnFreedMemory();
}

void FastRpcServer::ReturnFreedMemory() {
  const int64_t now = std::chrono::duration_cast<std::chrono::milliseconds>(
                          std::chrono::steady_clock::now().time_since_epoch())
                          .count();
  int64_t last = last_trim_ms_.load();
  if (now - last < kTrimIntervalMs || !last_trim_ms_.compare_exchange_strong(last, now)) return;
  malloc_trim(0);
}

}  // namespace yuebing::master
