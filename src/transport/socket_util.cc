#include "transport/socket_util.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "yuebing/common/status.h"

namespace yuebing::transport {
namespace {

constexpr int kSocketBufferBytes = 8 << 20;

absl::StatusOr<addrinfo*> Resolve(const std::string& host, uint16_t port, bool passive) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = passive ? AI_PASSIVE : 0;
  addrinfo* result = nullptr;
  std::string service = std::to_string(port);
  int rc = getaddrinfo(host.empty() ? nullptr : host.c_str(), service.c_str(), &hints, &result);
  if (rc != 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("cannot resolve '", host, "': ", gai_strerror(rc)));
  }
  return result;
}

absl::Status WaitConnected(int fd, std::chrono::milliseconds timeout) {
  pollfd pfd{fd, POLLOUT, 0};
  int rc;
  do {
    rc = poll(&pfd, 1, static_cast<int>(timeout.count()));
  } while (rc < 0 && errno == EINTR);
  if (rc == 0) return absl::DeadlineExceededError("connect timed out");
  if (rc < 0) return ErrnoToStatus("poll");
  int err = 0;
  socklen_t len = sizeof(err);
  getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len);
  if (err != 0) return ErrnoToStatus("connect", err);
  return absl::OkStatus();
}

}  // namespace

void TuneDataSocket(int fd) {
  int one = 1;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
  setsockopt(fd, SOL_SOCKET, SO_KEEPALIVE, &one, sizeof(one));
  int bytes = kSocketBufferBytes;
  setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &bytes, sizeof(bytes));
  setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &bytes, sizeof(bytes));
}

absl::StatusOr<int> ConnectTcp(const std::string& host, uint16_t port,
                               std::chrono::milliseconds timeout) {
  YB_ASSIGN_OR_RETURN(addrinfo * list, Resolve(host, port, false));
  absl::Status last = absl::UnavailableError(absl::StrCat("no address for ", host));
  for (addrinfo* ai = list; ai != nullptr; ai = ai->ai_next) {
    int fd = socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC | SOCK_NONBLOCK, ai->ai_protocol);
    if (fd < 0) {
      last = ErrnoToStatus("socket");
      continue;
    }
    TuneDataSocket(fd);
    int rc = connect(fd, ai->ai_addr, ai->ai_addrlen);
    absl::Status status = absl::OkStatus();
    if (rc != 0) {
      status = errno == EINPROGRESS ? WaitConnected(fd, timeout) : ErrnoToStatus("connect");
    }
    if (status.ok()) {
      int flags = fcntl(fd, F_GETFL);
      fcntl(fd, F_SETFL, flags & ~O_NONBLOCK);
      freeaddrinfo(list);
      return fd;
    }
    last = absl::Status(status.code(), absl::StrCat(status.message(), " (", host, ":", port, ")"));
    close(fd);
  }
  freeaddrinfo(list);
  return last;
}

absl::StatusOr<int> ListenTcp(const std::string& host, uint16_t port, uint16_t* bound_port) {
  YB_ASSIGN_OR_RETURN(addrinfo * list, Resolve(host, port, true));
  absl::Status last = absl::UnavailableError(absl::StrCat("cannot listen on ", host));
  for (addrinfo* ai = list; ai != nullptr; ai = ai->ai_next) {
    int fd = socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC, ai->ai_protocol);
    if (fd < 0) {
      last = ErrnoToStatus("socket");
      continue;
    }
    int one = 1;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    if (bind(fd, ai->ai_addr, ai->ai_addrlen) != 0 || listen(fd, 512) != 0) {
      last = errno == EADDRINUSE
                 ? absl::AlreadyExistsError(absl::StrCat("address in use: ", host, ":", port))
                 : ErrnoToStatus(absl::StrCat("bind/listen ", host, ":", port));
      close(fd);
      continue;
    }
    sockaddr_storage addr{};
    socklen_t len = sizeof(addr);
    getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
    *bound_port =
        ntohs(addr.ss_family == AF_INET6 ? reinterpret_cast<sockaddr_in6*>(&addr)->sin6_port
                                         : reinterpret_cast<sockaddr_in*>(&addr)->sin_port);
    freeaddrinfo(list);
    return fd;
  }
  freeaddrinfo(list);
  return last;
}

namespace {

void SetTimeout(int fd, int option, std::chrono::milliseconds timeout) {
  const int64_t ms = std::max<int64_t>(1, timeout.count());
  timeval tv{static_cast<time_t>(ms / 1000), static_cast<suseconds_t>(ms % 1000 * 1000)};
  setsockopt(fd, SOL_SOCKET, option, &tv, sizeof(tv));
}

}  // namespace

void SetSendTimeout(int fd, std::chrono::milliseconds timeout) {
  SetTimeout(fd, SO_SNDTIMEO, timeout);
}

void SetRecvTimeout(int fd, std::chrono::milliseconds timeout) {
  SetTimeout(fd, SO_RCVTIMEO, timeout);
}

absl::Status SendAll(int fd, struct iovec* iov, int iovcnt) {
  while (iovcnt > 0) {
    msghdr msg{};
    msg.msg_iov = iov;
    msg.msg_iovlen = static_cast<size_t>(iovcnt);
    ssize_t sent = sendmsg(fd, &msg, MSG_NOSIGNAL);
    if (sent < 0) {
      if (errno == EINTR) continue;
      return ErrnoToStatus("send");
    }
    size_t left = static_cast<size_t>(sent);
    while (iovcnt > 0 && left >= iov->iov_len) {
      left -= iov->iov_len;
      ++iov;
      --iovcnt;
    }
    if (iovcnt > 0) {
      iov->iov_base = static_cast<char*>(iov->iov_base) + left;
      iov->iov_len -= left;
    }
  }
  return absl::OkStatus();
}

absl::Status SendAll(int fd, const void* data, size_t length) {
  iovec iov{const_cast<void*>(data), length};
  return SendAll(fd, &iov, 1);
}

absl::Status RecvAll(int fd, void* data, size_t length) {
  char* out = static_cast<char*>(data);
  while (length > 0) {
    ssize_t got = recv(fd, out, length, MSG_WAITALL);
    if (got == 0) return absl::UnavailableError("connection closed by peer");
    if (got < 0) {
      if (errno == EINTR) continue;
      return ErrnoToStatus("recv");
    }
    out += got;
    length -= static_cast<size_t>(got);
  }
  return absl::OkStatus();
}

absl::StatusOr<size_t> RecvSome(int fd, void* data, size_t length) {
  while (true) {
    const ssize_t got = recv(fd, data, length, 0);
    if (got > 0) return static_cast<size_t>(got);
    if (got == 0) return absl::UnavailableError("connection closed by peer");
    if (errno != EINTR) return ErrnoToStatus("recv");
  }
}

void CloseFd(int fd) {
  if (fd >= 0) close(fd);
}

bool SocketStillIdle(int fd) {
  pollfd pfd{fd, POLLIN, 0};
  return poll(&pfd, 1, 0) == 0;
}

}  // namespace yuebing::transport
