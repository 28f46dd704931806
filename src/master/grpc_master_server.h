// The master's control-plane endpoint: serves yuebing.rpc.MasterService (master.proto) over gRPC
// by calling a MasterService. Statuses travel as Mooncake numeric codes; every reply carries the
// term given by the term provider. Requests are checked before they reach the MasterService: a
// batch over limits::kMaxBatchKeys keys, parallel lists of different lengths, a client id that
// is empty or over limits::kMaxClientIdBytes, or a regex over limits::kMaxRegexBytes
// (yuebing/common/limits.h) get a whole-request kInvalidParams (-600) and touch nothing. No input
// makes it crash.
//
// Threads: RPCs are served with gRPC's callback API, inline on gRPC's own fixed-size pool (sized
// by the CPU count); a burst of RPCs queues rather than being refused. (The synchronous API with
// a ResourceQuota thread cap answers RESOURCE_EXHAUSTED "Server Threadpool Exhausted" once the
// cap is reached.) Handlers never block on I/O; MasterService calls are short. A PullJournal
// with nothing to answer is parked (LongPolls, its own thread) instead of holding a gRPC thread.
// The hot calls are also served from a FastRpcServer through FastDispatcher(), by the same code.
//
// Thread safety: Start() and Shutdown() from one owning thread. The MasterService and
// MasterMetrics must outlive the server.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "master/fast_rpc_server.h"
#include "master/master_metrics.h"
#include "rpc/master_rpc_security.h"
#include "yuebing/master/master_service.h"

namespace grpc {
class Server;
}  // namespace grpc

namespace yuebing::master {

class GrpcMasterServer {
 public:
  struct Options {
    // RPCs one client connection may have in flight at once (HTTP/2 streams); more wait in the
    // client.
    int max_concurrent_streams = 256;
    int max_message_bytes = 64 << 20;
    // The leadership term put in every reply; nullptr means a constant 0 (no HA).
    std::function<uint64_t()> term_provider;
    // Called before each RPC (must be cheap and non-blocking); a non-OK status is the whole
    // reply and the MasterService is not called. With HA it refuses RPCs on a master that is
    // not the leader. nullptr admits everything.
    std::function<absl::Status()> admit;
    // Counters updated per RPC; may be nullptr. Not owned.
    MasterMetrics* metrics = nullptr;
    // Cluster secret (calls without a valid credential get UNAUTHENTICATED) and TLS certificate;
    // empty fields mean off. See rpc/master_rpc_security.h and docs/security.md.
    MasterRpcSecurity security;
  };

  // Binds `address` ("host:port"; port 0 picks a free one; "[v6]:port" for IPv6) and starts
  // serving `service` (not owned) before returning. A port already in use is an error (the socket
  // is bound without SO_REUSEPORT). Errors: kInvalidArgument (malformed address or options),
  // kUnavailable (cannot bind).
  static absl::StatusOr<std::unique_ptr<GrpcMasterServer>> Start(const std::string& address,
                                                                 MasterService* service,
                                                                 Options options);
  static absl::StatusOr<std::unique_ptr<GrpcMasterServer>> Start(const std::string& address,
                                                                 MasterService* service) {
    return Start(address, service, Options{});
  }

  ~GrpcMasterServer();  // Shutdown()
  GrpcMasterServer(const GrpcMasterServer&) = delete;
  GrpcMasterServer& operator=(const GrpcMasterServer&) = delete;

  // The bound port.
  uint16_t port() const { return port_; }

  // Serves fast-path frames (rpc/fast_rpc_wire.h) with the same checks, admission, metrics,
  // terms and manifest waits as the gRPC methods. After Shutdown() it still serves (parked calls
  // are answered at once); it must not be called once this server is destroyed.
  FastRpcServer::Dispatcher FastDispatcher();
  // The port DescribeReply advertises to clients (0, the default: no fast path). Thread-safe.
  void AdvertiseFastRpcPort(uint16_t port);

  // Stops accepting RPCs, lets those in flight finish for up to `grace`, cancels the rest and
  // joins the serving threads. Idempotent. Takes the whole grace period while an idle client
  // connection stays open (the peer does not answer the GOAWAY), so keep it short: handlers
  // never block.
  void Shutdown(std::chrono::milliseconds grace = std::chrono::milliseconds(500));

 private:
  class Handler;
  GrpcMasterServer() = default;

  std::unique_ptr<Handler> handler_;
  std::unique_ptr<grpc::Server> server_;
  MasterService* service_ = nullptr;
  uint16_t port_ = 0;
  bool shut_down_ = false;
};

}  // namespace yuebing::master
