// Raw TCP baseline on loopback, one connection with TCP_NODELAY:
//   stream:   the client send()s block_size buffers for --duration, then half-closes; the server
//             recv()s until EOF and replies with the byte count; the client reports GB/s up to
//             that reply (so bytes still queued in socket buffers are counted only once drained).
//   pingpong: the client sends a block_size message and waits for an 8-byte reply, repeatedly;
//             it reports round-trip latency percentiles. With --busy_poll the client spins on a
//             non-blocking recv() for the reply instead of sleeping in the kernel (the server
//             always blocks), as an initiator that spins briefly on completion does.
// The server serves exactly one client, which says in its hello which of the two it wants.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstring>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/strings/str_cat.h"
#include "bench_buffer.h"
#include "bench_flags.h"
#include "latency_stats.h"
#include "report.h"
#include "subcommands.h"
#include "yuebing/common/status.h"

namespace yuebing::bench {
namespace {

constexpr uint32_t kHelloMagic = 0x59425342;  // "YBSB"
constexpr uint32_t kKindStream = 1;
constexpr uint32_t kKindPingPong = 2;
constexpr int kIoTimeoutS = 10;            // bound on every blocking send/recv/connect
constexpr int kAcceptTimeoutS = 60;        // server default wait for its one client
constexpr int kConnectRetryMs = 5000;      // client: the server may still be starting
constexpr uint64_t kPingPongWarmup = 100;  // round trips not recorded
constexpr uint64_t kMaxBlock = 256ull << 20;

struct Hello {
  uint32_t magic;
  uint32_t kind;
  uint64_t block_size;
};

// Owns a file descriptor.
class Fd {
 public:
  explicit Fd(int fd = -1) : fd_(fd) {}
  Fd(Fd&& other) noexcept : fd_(other.fd_) { other.fd_ = -1; }
  Fd& operator=(Fd&&) = delete;
  ~Fd() {
    if (fd_ >= 0) close(fd_);
  }
  int get() const { return fd_; }

 private:
  int fd_;
};

absl::Status SetSocketOptions(int fd) {
  int one = 1;
  if (setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one)) != 0) {
    return ErrnoToStatus("setsockopt(TCP_NODELAY)");
  }
  timeval tv{kIoTimeoutS, 0};
  if (setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv)) != 0 ||
      setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv)) != 0) {
    return ErrnoToStatus("setsockopt(timeouts)");
  }
  return absl::OkStatus();
}

sockaddr_in Loopback(uint16_t port) {
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(port);
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  return addr;
}

absl::Status SendAll(int fd, const char* data, size_t len) {
  while (len > 0) {
    ssize_t n = send(fd, data, len, MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return ErrnoToStatus("send");
    data += n;
    len -= static_cast<size_t>(n);
  }
  return absl::OkStatus();
}

// Reads exactly `len` bytes. kNotFound when the peer closed before the first byte.
// With `spin`, polls with MSG_DONTWAIT instead of sleeping in recv(), for at most kIoTimeoutS.
absl::Status RecvAll(int fd, char* data, size_t len, bool spin = false) {
  size_t got = 0;
  const uint64_t spin_deadline = spin ? NowNanos() + kIoTimeoutS * 1'000'000'000ull : 0;
  while (got < len) {
    ssize_t n = recv(fd, data + got, len - got, spin ? MSG_DONTWAIT : 0);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && spin && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      if (NowNanos() >= spin_deadline) return absl::DeadlineExceededError("recv: no reply");
      continue;
    }
    if (n < 0) return ErrnoToStatus("recv");
    if (n == 0) {
      return got == 0 ? absl::NotFoundError("peer closed")
                      : absl::UnavailableError("peer closed mid-message");
    }
    got += static_cast<size_t>(n);
  }
  return absl::OkStatus();
}

absl::StatusOr<Fd> AcceptOne(uint16_t port, int timeout_s) {
  Fd listener(socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
  if (listener.get() < 0) return ErrnoToStatus("socket");
  int one = 1;
  setsockopt(listener.get(), SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
  sockaddr_in addr = Loopback(port);
  if (bind(listener.get(), reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
    return ErrnoToStatus(absl::StrCat("bind 127.0.0.1:", port));
  }
  if (listen(listener.get(), 1) != 0) return ErrnoToStatus("listen");
  std::printf("LISTENING 127.0.0.1:%u\n", port);
  std::fflush(stdout);
  pollfd pfd{listener.get(), POLLIN, 0};
  int ready = poll(&pfd, 1, timeout_s * 1000);
  if (ready < 0) return ErrnoToStatus("poll");
  if (ready == 0) return absl::DeadlineExceededError("no client connected in time");
  Fd conn(accept4(listener.get(), nullptr, nullptr, SOCK_CLOEXEC));
  if (conn.get() < 0) return ErrnoToStatus("accept");
  YB_RETURN_IF_ERROR(SetSocketOptions(conn.get()));
  return conn;
}

absl::StatusOr<Fd> Connect(uint16_t port) {
  const uint64_t deadline = NowNanos() + kConnectRetryMs * 1'000'000ull;
  while (true) {
    Fd fd(socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
    if (fd.get() < 0) return ErrnoToStatus("socket");
    YB_RETURN_IF_ERROR(SetSocketOptions(fd.get()));  // SO_SNDTIMEO also bounds connect()
    sockaddr_in addr = Loopback(port);
    if (connect(fd.get(), reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0) return fd;
    if (errno != ECONNREFUSED || NowNanos() >= deadline) {
      return ErrnoToStatus(absl::StrCat("connect 127.0.0.1:", port));
    }
    usleep(50'000);
  }
}

absl::Status Serve(bool json) {
  const int32_t duration = absl::GetFlag(FLAGS_duration);
  YB_ASSIGN_OR_RETURN(Fd conn, AcceptOne(static_cast<uint16_t>(absl::GetFlag(FLAGS_port)),
                                         duration > 0 ? duration : kAcceptTimeoutS));
  Hello hello{};
  YB_RETURN_IF_ERROR(RecvAll(conn.get(), reinterpret_cast<char*>(&hello), sizeof(hello)));
  if (hello.magic != kHelloMagic || hello.block_size == 0 || hello.block_size > kMaxBlock) {
    return absl::InvalidArgumentError("bad hello from client");
  }
  YB_ASSIGN_OR_RETURN(MappedBuffer buffer, MappedBuffer::Create(hello.block_size, 0));
  uint64_t bytes = 0;
  uint64_t messages = 0;
  if (hello.kind == kKindStream) {
    while (true) {
      ssize_t n = recv(conn.get(), buffer.data(), buffer.size(), 0);
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) return ErrnoToStatus("recv");
      if (n == 0) break;
      bytes += static_cast<uint64_t>(n);
    }
    YB_RETURN_IF_ERROR(SendAll(conn.get(), reinterpret_cast<const char*>(&bytes), sizeof(bytes)));
  } else if (hello.kind == kKindPingPong) {
    while (true) {
      absl::Status status = RecvAll(conn.get(), buffer.data(), buffer.size());
      if (absl::IsNotFound(status)) break;
      YB_RETURN_IF_ERROR(status);
      bytes += buffer.size();
      ++messages;
      YB_RETURN_IF_ERROR(
          SendAll(conn.get(), reinterpret_cast<const char*>(&messages), sizeof(messages)));
    }
  } else {
    return absl::InvalidArgumentError("unknown kind in hello");
  }
  Report report;
  report.Add("test", hello.kind == kKindStream ? "socket_server" : "socket_pingpong_server");
  report.Add("bytes", bytes);
  report.Print(json);
  return absl::OkStatus();
}

absl::Status Stream(int fd, const MappedBuffer& buffer, int32_t duration_s, Report& report) {
  const uint64_t start = NowNanos();
  const uint64_t end = start + static_cast<uint64_t>(duration_s) * 1'000'000'000ull;
  uint64_t sent = 0;
  while (NowNanos() < end) {
    YB_RETURN_IF_ERROR(SendAll(fd, buffer.data(), buffer.size()));
    sent += buffer.size();
  }
  if (shutdown(fd, SHUT_WR) != 0) return ErrnoToStatus("shutdown");
  uint64_t received = 0;
  YB_RETURN_IF_ERROR(RecvAll(fd, reinterpret_cast<char*>(&received), sizeof(received)));
  const double seconds = static_cast<double>(NowNanos() - start) / 1e9;
  if (received != sent) {
    return absl::DataLossError(absl::StrCat("server received ", received, " of ", sent, " bytes"));
  }
  report.Add("test", "socket_stream");
  report.Add("block_size", static_cast<uint64_t>(buffer.size()));
  report.Add("seconds", seconds);
  report.Add("bytes", sent);
  report.Add("gbps", seconds > 0 ? static_cast<double>(sent) / seconds / 1e9 : 0.0);
  return absl::OkStatus();
}

absl::Status PingPong(int fd, const MappedBuffer& buffer, int32_t duration_s, Report& report) {
  const bool busy_poll = absl::GetFlag(FLAGS_busy_poll);
  LatencyRecorder latency;
  uint64_t reply = 0;
  const uint64_t start = NowNanos();
  const uint64_t end = start + static_cast<uint64_t>(duration_s) * 1'000'000'000ull;
  for (uint64_t i = 0;; ++i) {
    const uint64_t t0 = NowNanos();
    if (t0 >= end) break;
    YB_RETURN_IF_ERROR(SendAll(fd, buffer.data(), buffer.size()));
    YB_RETURN_IF_ERROR(RecvAll(fd, reinterpret_cast<char*>(&reply), sizeof(reply), busy_poll));
    if (reply != i + 1) return absl::DataLossError("ping-pong reply out of sequence");
    if (i >= kPingPongWarmup) latency.Record(NowNanos() - t0);
  }
  report.Add("test", "socket_pingpong");
  report.Add("block_size", static_cast<uint64_t>(buffer.size()));
  report.Add("busy_poll", busy_poll ? "yes" : "no");
  report.Add("seconds", static_cast<double>(NowNanos() - start) / 1e9);
  report.AddLatency("rtt", latency.Summarize());
  return absl::OkStatus();
}

absl::Status Client(bool json) {
  YB_ASSIGN_OR_RETURN(const uint64_t block, BlockSizeFlag());
  if (block > kMaxBlock) return absl::InvalidArgumentError("--block_size above 256 MiB");
  const bool pingpong = absl::GetFlag(FLAGS_pingpong);
  YB_ASSIGN_OR_RETURN(MappedBuffer buffer, MappedBuffer::Create(block, 0x5a));
  YB_ASSIGN_OR_RETURN(Fd conn, Connect(static_cast<uint16_t>(absl::GetFlag(FLAGS_port))));
  Hello hello{kHelloMagic, pingpong ? kKindPingPong : kKindStream, block};
  YB_RETURN_IF_ERROR(SendAll(conn.get(), reinterpret_cast<const char*>(&hello), sizeof(hello)));
  Report report;
  const int32_t duration_s = DurationSeconds(10);
  if (pingpong) {
    YB_RETURN_IF_ERROR(PingPong(conn.get(), buffer, duration_s, report));
  } else {
    YB_RETURN_IF_ERROR(Stream(conn.get(), buffer, duration_s, report));
  }
  report.Print(json);
  return absl::OkStatus();
}

}  // namespace

absl::Status RunSocketBench() {
  YB_ASSIGN_OR_RETURN(const bool json, ReportJson());
  const std::string mode = absl::GetFlag(FLAGS_mode);
  if (mode == "server") return Serve(json);
  if (mode == "client") return Client(json);
  return absl::InvalidArgumentError("socket needs --mode=server or --mode=client");
}

}  // namespace yuebing::bench
