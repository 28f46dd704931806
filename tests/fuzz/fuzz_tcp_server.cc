// Fuzzes the TCP server's frame handling over a real loopback connection. One TcpServer per
// process serves a 4 KiB buffer registered at the fixed address kBufferAddr (so corpus inputs
// can name it), between two unregistered guard pages. Each input is sent as the byte stream of
// one connection (preceded by a valid HELLO when its first byte is odd); the replies are read
// until the server closes. READ_OBJECT frames are answered by an object source that knows "obj"
// (and reports "bad" as a broken copy). Checked: the server never writes outside the registered
// buffer, and it stays up.
#include <poll.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>

#include "transport/memory_registry.h"
#include "transport/socket_util.h"
#include "transport/tcp_server.h"
#include "transport/wire_format.h"

namespace yt = yuebing::transport;

namespace {

constexpr uint64_t kPageBytes = 4096;
// In x86-64 high memory, clear of ASan's shadow (below 0x10007fff8000) and allocator (0x6000...).
constexpr uint64_t kRegionAddr = 0x500000000000ull;
constexpr uint64_t kBufferAddr = kRegionAddr + kPageBytes;  // the registered page
constexpr uint8_t kGuardByte = 0xA5;
constexpr const char* kSegmentName = "fuzz:1";
constexpr uint64_t kEpoch = 7;

struct Fixture {
  yt::MemoryRegistry registry;
  std::unique_ptr<yt::TcpServer> server;
  uint8_t* region = nullptr;  // guard page, buffer page, guard page
};

Fixture* Setup() {
  auto* f = new Fixture;
  void* p = mmap(reinterpret_cast<void*>(kRegionAddr), 3 * kPageBytes, PROT_READ | PROT_WRITE,
                 MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
  if (p != reinterpret_cast<void*>(kRegionAddr)) {
    std::perror("mmap at the fixed fuzz address");
    std::abort();
  }
  f->region = static_cast<uint8_t*>(p);
  std::memset(f->region, kGuardByte, 3 * kPageBytes);
  yt::RegisteredBuffer buffer;
  buffer.addr = kBufferAddr;
  buffer.length = kPageBytes;
  if (!f->registry.Add(buffer).ok()) std::abort();
  yt::TcpServerOptions options;
  options.bind_host = "127.0.0.1";
  options.frame_timeout = std::chrono::milliseconds(2000);
  absl::StatusOr<std::unique_ptr<yt::TcpServer>> server =
      yt::TcpServer::Bind(options, &f->registry);
  if (!server.ok()) std::abort();
  f->server = std::move(*server);
  f->server->SetObjectSource([](absl::string_view key) -> absl::StatusOr<std::string> {
    if (key == "obj") return std::string("object bytes served by key");
    if (key == "bad") return absl::DataLossError("broken copy");
    return absl::NotFoundError("no such key");
  });
  f->server->Serve(kSegmentName, kEpoch, [] { return std::string("{\"name\":\"fuzz:1\"}"); });
  return f;
}

void SendHello(int fd) {
  yt::FrameHeader hello;
  hello.type = yt::FrameType::kHello;
  hello.addr = kEpoch;
  hello.length = std::strlen(kSegmentName);
  uint8_t bytes[yt::kFrameHeaderBytes];
  yt::EncodeFrameHeader(hello, bytes);
  (void)yt::SendAll(fd, bytes, sizeof(bytes));
  (void)yt::SendAll(fd, kSegmentName, hello.length);
}

// Reads and drops replies until the server closes the connection.
void DrainUntilClosed(int fd) {
  static char sink[1 << 16];
  while (true) {
    pollfd pfd{fd, POLLIN, 0};
    if (poll(&pfd, 1, 10000) <= 0) std::abort();  // the server must close within its timeout
    ssize_t n = recv(fd, sink, sizeof(sink), 0);
    if (n == 0) return;
    if (n < 0 && errno != EINTR) return;  // reset counts as closed
  }
}

void CheckGuards(const uint8_t* region) {
  for (uint64_t i = 0; i < kPageBytes; ++i) {
    if (region[i] != kGuardByte || region[2 * kPageBytes + i] != kGuardByte) {
      std::fprintf(stderr, "server wrote outside the registered buffer at offset %llu\n",
                   static_cast<unsigned long long>(i));
      std::abort();
    }
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static Fixture* fixture = Setup();
  absl::StatusOr<int> fd =
      yt::ConnectTcp("127.0.0.1", fixture->server->port(), std::chrono::milliseconds(5000));
  if (!fd.ok()) std::abort();
  if (size > 0 && (data[0] & 1) != 0) SendHello(*fd);
  if (size > 1) (void)yt::SendAll(*fd, data + 1, size - 1);
  shutdown(*fd, SHUT_WR);
  DrainUntilClosed(*fd);
  yt::CloseFd(*fd);
  CheckGuards(fixture->region);
  return 0;
}
