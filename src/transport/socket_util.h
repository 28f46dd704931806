// Blocking TCP socket helpers shared by the transport's client and server sides.
// All functions are thread-safe (they touch only the descriptors they are given). Sends never raise
// SIGPIPE. Errors: kUnavailable (peer gone / refused), kDeadlineExceeded (connect timeout),
// kInvalidArgument (bad address), kInternal (other system errors).
#pragma once

#include <sys/uio.h>

#include <chrono>
#include <cstdint>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace yuebing::transport {

// Connects to host:port within `timeout` and returns a blocking socket with TCP_NODELAY and
// keepalive set. The caller owns the descriptor.
absl::StatusOr<int> ConnectTcp(const std::string& host, uint16_t port,
                               std::chrono::milliseconds timeout);

// Binds and listens on host:port (0 picks a port); returns the socket and the bound port.
absl::StatusOr<int> ListenTcp(const std::string& host, uint16_t port, uint16_t* bound_port);

// Sets options every data socket gets (TCP_NODELAY, keepalive, large buffers).
void TuneDataSocket(int fd);

// Bounds each blocking send (SO_SNDTIMEO) / receive (SO_RCVTIMEO) on fd to `timeout`; a timeout
// under 1 ms becomes 1 ms (a zero would mean "no bound"). An expired bound fails the call.
void SetSendTimeout(int fd, std::chrono::milliseconds timeout);
void SetRecvTimeout(int fd, std::chrono::milliseconds timeout);

// Sends every byte of the iovecs (modified in place). Errors: kUnavailable when the peer is gone.
absl::Status SendAll(int fd, struct iovec* iov, int iovcnt);
absl::Status SendAll(int fd, const void* data, size_t length);

// Receives exactly `length` bytes. Errors: kUnavailable on EOF or reset.
absl::Status RecvAll(int fd, void* data, size_t length);
// Receives what is there, at most `length` (> 0) bytes, waiting (without a deadline of its own)
// until at least one byte is. Returns the count. Errors: kUnavailable on EOF or reset.
absl::StatusOr<size_t> RecvSome(int fd, void* data, size_t length);

// Closes fd if >= 0 (retrying EINTR is wrong for close; it is called once).
void CloseFd(int fd);

// For a connection with no reply outstanding: true while nothing has arrived on it, not even EOF
// or an error (a peer that closed or reset it, or sent bytes nobody asked for, makes it unusable).
// Never waits.
bool SocketStillIdle(int fd);

}  // namespace yuebing::transport
