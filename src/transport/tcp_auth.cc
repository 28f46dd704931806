#include "transport/tcp_auth.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>

#include <cerrno>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "transport/socket_util.h"
#include "yuebing/common/cluster_auth.h"
#include "yuebing/common/status.h"

namespace yuebing::transport {
namespace {

constexpr absl::string_view kTargetLabel = "yuebing-tcp-target";
constexpr absl::string_view kInitiatorLabel = "yuebing-tcp-initiator";

std::string Proof(const std::string& secret, absl::string_view label,
                  const std::string& initiator_nonce, const std::string& target_nonce) {
  return HmacSha256(secret, absl::StrCat(label, initiator_nonce, target_nonce));
}

absl::Status SendFrame(int fd, FrameType type, WireStatus status, const std::string& payload) {
  FrameHeader header;
  header.type = type;
  header.status = status;
  header.length = payload.size();
  uint8_t bytes[kFrameHeaderBytes];
  EncodeFrameHeader(header, bytes);
  iovec iov[2] = {{bytes, kFrameHeaderBytes}, {const_cast<char*>(payload.data()), payload.size()}};
  return SendAll(fd, iov, payload.empty() ? 1 : 2);
}

absl::StatusOr<FrameHeader> RecvHeader(int fd, AuthDeadline deadline) {
  uint8_t bytes[kFrameHeaderBytes];
  YB_RETURN_IF_ERROR(RecvAllUntil(fd, bytes, kFrameHeaderBytes, deadline));
  absl::StatusOr<FrameHeader> header = DecodeFrameHeader(bytes);
  if (!header.ok()) {
    return absl::InternalError(
        absl::StrCat("malformed frame during authentication: ", header.status().message()));
  }
  return header;
}

int RemainingMs(AuthDeadline deadline) {
  auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
      deadline - std::chrono::steady_clock::now());
  if (left.count() <= 0) return 0;
  return static_cast<int>(std::min<int64_t>(left.count() + 1, 1 << 30));
}

}  // namespace

absl::Status WaitReadableUntil(int fd, AuthDeadline deadline) {
  while (true) {
    int timeout = RemainingMs(deadline);
    if (timeout == 0) return absl::DeadlineExceededError("authentication handshake timed out");
    pollfd pfd{fd, POLLIN, 0};
    int rc = poll(&pfd, 1, timeout);
    if (rc < 0 && errno == EINTR) continue;
    if (rc < 0) return absl::UnavailableError(absl::StrCat("poll: ", std::strerror(errno)));
    if (rc == 0) continue;  // re-check the deadline
    if ((pfd.revents & (POLLIN | POLLHUP | POLLERR)) != 0) return absl::OkStatus();
  }
}

absl::Status RecvAllUntil(int fd, void* data, size_t length, AuthDeadline deadline) {
  char* out = static_cast<char*>(data);
  while (length > 0) {
    YB_RETURN_IF_ERROR(WaitReadableUntil(fd, deadline));
    ssize_t n = recv(fd, out, length, MSG_DONTWAIT);
    if (n > 0) {
      out += n;
      length -= static_cast<size_t>(n);
    } else if (n == 0) {
      return absl::UnavailableError("connection closed during authentication");
    } else if (errno != EINTR && errno != EAGAIN && errno != EWOULDBLOCK) {
      return absl::UnavailableError(absl::StrCat("recv: ", std::strerror(errno)));
    }
  }
  return absl::OkStatus();
}

std::string PeerAddress(int fd) {
  sockaddr_storage addr{};
  socklen_t len = sizeof(addr);
  if (getpeername(fd, reinterpret_cast<sockaddr*>(&addr), &len) != 0) return "?";
  char host[INET6_ADDRSTRLEN] = "?";
  uint16_t port = 0;
  if (addr.ss_family == AF_INET) {
    auto* in = reinterpret_cast<sockaddr_in*>(&addr);
    inet_ntop(AF_INET, &in->sin_addr, host, sizeof(host));
    port = ntohs(in->sin_port);
    return absl::StrCat(host, ":", port);
  }
  if (addr.ss_family == AF_INET6) {
    auto* in6 = reinterpret_cast<sockaddr_in6*>(&addr);
    inet_ntop(AF_INET6, &in6->sin6_addr, host, sizeof(host));
    port = ntohs(in6->sin6_port);
    return absl::StrCat("[", host, "]:", port);
  }
  return "?";
}

absl::Status AuthenticateToTarget(int fd, const std::string& secret, const std::string& target,
                                  AuthDeadline deadline) {
  YB_ASSIGN_OR_RETURN(std::string initiator_nonce, RandomBytes(kAuthNonceBytes));
  YB_RETURN_IF_ERROR(SendFrame(fd, FrameType::kAuthHello, WireStatus::kOk, initiator_nonce));
  absl::StatusOr<FrameHeader> challenge = RecvHeader(fd, deadline);
  if (absl::IsUnavailable(challenge.status())) {
    return absl::PermissionDeniedError(
        absl::StrCat("target ", target,
                     " closed the connection during cluster authentication (does it run without "
                     "authentication support?)"));
  }
  YB_RETURN_IF_ERROR(challenge.status());
  if (challenge->type != FrameType::kAuthChallenge) {
    return absl::InternalError(absl::StrCat("unexpected reply to AUTH_HELLO from ", target));
  }
  if (challenge->status == WireStatus::kUnauthenticated) {
    return absl::PermissionDeniedError(
        absl::StrCat("target ", target,
                     " has no cluster secret configured but this process has one; refusing to "
                     "talk to it"));
  }
  if (challenge->status != WireStatus::kOk ||
      challenge->length != kAuthNonceBytes + kAuthMacBytes) {
    return absl::InternalError(absl::StrCat("bad AUTH_CHALLENGE from ", target));
  }
  std::string payload(challenge->length, '\0');
  YB_RETURN_IF_ERROR(RecvAllUntil(fd, payload.data(), payload.size(), deadline));
  const std::string target_nonce = payload.substr(0, kAuthNonceBytes);
  if (!ConstantTimeEquals(payload.substr(kAuthNonceBytes),
                          Proof(secret, kTargetLabel, initiator_nonce, target_nonce))) {
    return absl::PermissionDeniedError(absl::StrCat(
        "target ", target, " does not know this cluster's secret (a different secret?)"));
  }
  YB_RETURN_IF_ERROR(SendFrame(fd, FrameType::kAuthProof, WireStatus::kOk,
                               Proof(secret, kInitiatorLabel, initiator_nonce, target_nonce)));
  YB_ASSIGN_OR_RETURN(FrameHeader result, RecvHeader(fd, deadline));
  if (result.type != FrameType::kAuthResult) {
    return absl::InternalError(absl::StrCat("unexpected reply to AUTH_PROOF from ", target));
  }
  if (result.status != WireStatus::kOk) {
    return absl::PermissionDeniedError(
        absl::StrCat("target ", target, " refused this process's cluster secret proof"));
  }
  return absl::OkStatus();
}

absl::Status AuthenticateInitiator(int fd, const std::string& secret, const FrameHeader& hello,
                                   AuthDeadline deadline) {
  if (secret.empty()) {
    (void)SendFrame(fd, FrameType::kAuthChallenge, WireStatus::kUnauthenticated, "");
    return absl::PermissionDeniedError(
        "initiator uses a cluster secret but this target has none configured");
  }
  if (hello.length != kAuthNonceBytes) {
    return absl::InternalError("AUTH_HELLO with a nonce of the wrong size");
  }
  std::string initiator_nonce(kAuthNonceBytes, '\0');
  YB_RETURN_IF_ERROR(RecvAllUntil(fd, initiator_nonce.data(), initiator_nonce.size(), deadline));
  YB_ASSIGN_OR_RETURN(std::string target_nonce, RandomBytes(kAuthNonceBytes));
  YB_RETURN_IF_ERROR(
      SendFrame(fd, FrameType::kAuthChallenge, WireStatus::kOk,
                target_nonce + Proof(secret, kTargetLabel, initiator_nonce, target_nonce)));
  absl::StatusOr<FrameHeader> proof = RecvHeader(fd, deadline);
  if (absl::IsUnavailable(proof.status())) {
    return absl::PermissionDeniedError(
        "initiator closed the connection after our challenge (it has a different secret?)");
  }
  YB_RETURN_IF_ERROR(proof.status());
  if (proof->type != FrameType::kAuthProof || proof->length != kAuthMacBytes) {
    return absl::InternalError("expected AUTH_PROOF");
  }
  std::string mac(kAuthMacBytes, '\0');
  YB_RETURN_IF_ERROR(RecvAllUntil(fd, mac.data(), mac.size(), deadline));
  const bool ok =
      ConstantTimeEquals(mac, Proof(secret, kInitiatorLabel, initiator_nonce, target_nonce));
  (void)SendFrame(fd, FrameType::kAuthResult, ok ? WireStatus::kOk : WireStatus::kUnauthenticated,
                  "");
  if (!ok) {
    return absl::PermissionDeniedError("initiator's proof does not match this cluster's secret");
  }
  return absl::OkStatus();
}

}  // namespace yuebing::transport
