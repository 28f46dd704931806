#include "transport/rdma/rdma_handshake.h"

#include <sys/socket.h>
#include <sys/time.h>

#include "absl/strings/str_cat.h"
#include "transport/socket_util.h"
#include "transport/tcp_auth.h"
#include "transport/wire_format.h"
#include "yuebing/common/status.h"

namespace yuebing::transport::rdma {
namespace {

absl::Status SendFrame(int fd, FrameType type, uint64_t addr, const std::string& payload) {
  FrameHeader header;
  header.type = type;
  header.addr = addr;
  header.length = payload.size();
  uint8_t bytes[kFrameHeaderBytes];
  EncodeFrameHeader(header, bytes);
  YB_RETURN_IF_ERROR(SendAll(fd, bytes, kFrameHeaderBytes));
  return SendAll(fd, payload.data(), payload.size());
}

absl::StatusOr<FrameHeader> RecvHeader(int fd, FrameType expected) {
  uint8_t bytes[kFrameHeaderBytes];
  YB_RETURN_IF_ERROR(RecvAll(fd, bytes, kFrameHeaderBytes));
  absl::StatusOr<FrameHeader> header = DecodeFrameHeader(bytes);
  if (!header.ok() || header->type != expected) {
    return absl::InternalError("malformed reply to the RDMA QP exchange");
  }
  return header;
}

absl::StatusOr<std::string> Exchange(int fd, const std::string& segment_name, uint64_t epoch,
                                     const std::string& request) {
  YB_RETURN_IF_ERROR(SendFrame(fd, FrameType::kHello, epoch, segment_name));
  YB_ASSIGN_OR_RETURN(FrameHeader hello, RecvHeader(fd, FrameType::kHelloReply));
  if (hello.status != WireStatus::kOk) {
    return absl::FailedPreconditionError(
        absl::StrCat("segment ", segment_name, " is not the incarnation expected (restarted?)"));
  }
  YB_RETURN_IF_ERROR(SendFrame(fd, FrameType::kRdmaConnect, 0, request));
  YB_ASSIGN_OR_RETURN(FrameHeader reply, RecvHeader(fd, FrameType::kRdmaConnectReply));
  std::string payload(reply.length, '\0');
  YB_RETURN_IF_ERROR(RecvAll(fd, payload.data(), payload.size()));
  if (reply.status != WireStatus::kOk) {
    return absl::AbortedError(absl::StrCat(segment_name, " refused RDMA QP exchange: ", payload));
  }
  return payload;
}

}  // namespace

absl::StatusOr<std::string> ExchangeQpInfo(const std::string& host, uint16_t port,
                                           const std::string& segment_name, uint64_t epoch,
                                           const std::string& cluster_secret,
                                           const std::string& request,
                                           std::chrono::milliseconds timeout) {
  if (request.size() > kMaxRdmaConnectBytes) {
    return absl::InvalidArgumentError("RDMA connect request too large");
  }
  YB_ASSIGN_OR_RETURN(int fd, ConnectTcp(host, port, timeout));
  SetRecvTimeout(fd, timeout);
  SetSendTimeout(fd, timeout);
  if (!cluster_secret.empty()) {
    absl::Status auth = AuthenticateToTarget(fd, cluster_secret, segment_name,
                                             std::chrono::steady_clock::now() + timeout);
    if (!auth.ok()) {
      CloseFd(fd);
      return auth;
    }
  }
  absl::StatusOr<std::string> out = Exchange(fd, segment_name, epoch, request);
  CloseFd(fd);
  return out;
}

}  // namespace yuebing::transport::rdma
