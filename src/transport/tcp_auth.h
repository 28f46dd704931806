// Mutual authentication of a transport TCP connection with the cluster secret, before any
// HELLO/DESCRIBE/READ/WRITE. Both sides prove they know the secret by an HMAC-SHA256 over fresh
// nonces from both sides; the secret never crosses the wire, and each proof carries a role label
// so one side's proof cannot be reflected back as the other's.
//
//   initiator -> AUTH_HELLO      Ni (32 random bytes)
//   target    -> AUTH_CHALLENGE  Nt (32 random bytes) || HMAC(K, "yuebing-tcp-target" || Ni || Nt)
//   initiator -> AUTH_PROOF      HMAC(K, "yuebing-tcp-initiator" || Ni || Nt)
//   target    -> AUTH_RESULT     status kOk or kUnauthenticated
//
// A target without a secret answers AUTH_HELLO with AUTH_CHALLENGE status kUnauthenticated; a
// target with a secret answers any other first frame with its reply type and status
// kUnauthenticated. The refusing side closes the connection. Every read here is bounded by the
// caller's deadline.
//
// Thread safety: the functions touch only the given socket. Errors: kPermissionDenied when the
// other side has no secret, another secret, or refuses ours; kDeadlineExceeded when the deadline
// passes; kUnavailable when the connection drops; kInternal for a protocol violation.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>

#include "absl/status/status.h"
#include "transport/wire_format.h"

namespace yuebing::transport {

using AuthDeadline = std::chrono::steady_clock::time_point;

// Initiator side, on a freshly connected socket. `target` names the peer in errors.
absl::Status AuthenticateToTarget(int fd, const std::string& secret, const std::string& target,
                                  AuthDeadline deadline);

// Target side, after the AUTH_HELLO header `hello` was read (its payload not yet). With an empty
// `secret` it sends the refusal and returns kPermissionDenied.
absl::Status AuthenticateInitiator(int fd, const std::string& secret, const FrameHeader& hello,
                                   AuthDeadline deadline);

// Waits until fd is readable or `deadline` passes. Errors: kDeadlineExceeded, kUnavailable.
absl::Status WaitReadableUntil(int fd, AuthDeadline deadline);

// Receives exactly `length` bytes before `deadline` (however slowly the peer trickles them).
// Errors: kDeadlineExceeded, kUnavailable.
absl::Status RecvAllUntil(int fd, void* data, size_t length, AuthDeadline deadline);

// "ip:port" of the connected peer, for logs ("?" when unknown).
std::string PeerAddress(int fd);

}  // namespace yuebing::transport
