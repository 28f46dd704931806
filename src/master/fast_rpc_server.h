// The master's fast-path listener (rpc/fast_rpc_wire.h): accepts plain TCP connections and serves
// their frames one at a time, each on its connection's own thread, through a dispatcher (in
// production GrpcMasterServer::ServeFast, which runs the same handler bodies as gRPC).
//
// A connection may stay idle for any time between calls. Once a frame's first byte arrived, the
// rest of its header and its message must arrive within frame_timeout, and its reply must leave
// within frame_timeout, or the connection is closed. A malformed header closes the connection; a
// message the dispatcher cannot parse gets a kBadRequest reply and the connection stays usable. At
// most max_connections are open; more are closed at once (their clients fall back to gRPC).
//
// Thread safety: Start/port/Shutdown from the owner. The dispatcher is called on connection
// threads, concurrently; it must call `done` exactly once, on any thread, and the connection waits
// for it.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "master/master_metrics.h"
#include "rpc/fast_rpc_wire.h"
#include "transport/connection_threads.h"

namespace yuebing::master {

class FastRpcServer {
 public:
  using Done = std::function<void(rpc::FastStatus status, std::string reply)>;
  using Dispatcher = std::function<void(uint8_t method, std::string request, Done done)>;

  struct Options {
    uint32_t max_connections = 4096;
    std::chrono::milliseconds frame_timeout{30000};
    // Frames answered and connections open; may be nullptr. Not owned; must outlive the server.
    MasterMetrics* metrics = nullptr;
  };

  // Binds host:port (port 0 picks a free one) and starts serving. Errors: kAlreadyExists (port in
  // use), kInvalidArgument (bad host), kUnavailable.
  static absl::StatusOr<std::unique_ptr<FastRpcServer>> Start(const std::string& host,
                                                              uint16_t port, Dispatcher dispatcher,
                                                              Options options);
  ~FastRpcServer();  // Shutdown()
  FastRpcServer(const FastRpcServer&) = delete;
  FastRpcServer& operator=(const FastRpcServer&) = delete;

  uint16_t port() const { return port_; }

  // Stops accepting, closes every connection and joins their threads (a call being served is
  // let finish: the dispatcher's calls are short, or parked for a bounded time). Idempotent.
  void Shutdown() { threads_.Stop(); }

 private:
  FastRpcServer(Dispatcher dispatcher, Options options, int listen_fd, uint16_t port);
  void Serve(int fd);
  // At most once per kTrimIntervalMs, when a connection ends: hands the heap's free pages back
  // to the system (malloc_trim). Each connection is served on a new thread, and glibc gives new
  // threads their own malloc arenas, whose freed memory it keeps: a master serving a stream of
  // short-lived clients grew by ~25% in the cluster soak (tests/soak/cluster_soak.sh) without it.
  void ReturnFreedMemory();
  static constexpr int64_t kTrimIntervalMs = 1000;

  const Dispatcher dispatcher_;
  const Options options_;
  const uint16_t port_;
  std::atomic<int64_t> last_trim_ms_{0};
  transport::ConnectionThreads threads_;  // last: stopped before the members above go
};

}  // namespace yuebing::master
