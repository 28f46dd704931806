// MasterServer: one yuebing-master composed as an object. It owns the MasterService, the
// control-plane gRPC server and its fast path, the admin/metrics HTTP server (/metrics, /health,
// status page), the optional embedded HTTP metadata server, the Tick() thread and, with HA, the
// leader election through etcd (master/leader_election.h). tools/master/main.cc turns flags into
// Options and runs one; tests run several in one process.
//
// With HA, RPCs are admitted only while the election says this master leads; standbys answer
// every RPC with UNAVAILABLE_IN_CURRENT_STATUS (-1010). A standby's MasterService stays empty, so
// a new leader starts with no metadata. When the leader loses its leadership (its lease was not
// renewed in time, or its leader key is gone) it stops admitting RPCs at once and Wait() reports
// kLeadershipLost; it never leads again (its metadata would be stale). The owner then calls Stop()
// and, to rejoin as a standby, starts a fresh MasterServer. The class never signals its process.
//
// Thread safety: all methods are thread-safe; Stop() may race Wait() and the election thread.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <thread>

#include "absl/status/statusor.h"
#include "absl/synchronization/notification.h"
#include "absl/time/time.h"
#include "rpc/master_rpc_security.h"
#include "yuebing/common/http_metadata_server.h"
#include "yuebing/common/mutex.h"
#include "yuebing/master/master_service.h"

namespace yuebing::master {

class AdminHttpServer;
class FastRpcServer;
class GrpcMasterServer;
class LeaderElection;
class MasterMetrics;

class MasterServer {
 public:
  struct Options {
    MasterOptions master;
    // The gRPC server binds rpc_host:rpc_port; the metrics server binds rpc_host:metrics_port.
    // Port 0 picks a free one (see rpc_port() / metrics_port()).
    std::string rpc_host = "0.0.0.0";
    uint16_t rpc_port = 50051;
    uint16_t metrics_port = 9003;
    // The fast path of the hot calls (rpc/fast_rpc_wire.h) on rpc_host:fast_rpc_port (0: a free
    // port), advertised to clients through the Describe RPC. Never served with a cluster secret or
    // TLS (its frames carry no credential and are not encrypted).
    bool fast_rpc = true;
    uint16_t fast_rpc_port = 0;
    // The transfer engine's HTTP metadata service (/metadata), when enabled.
    bool http_metadata_server = false;
    std::string metadata_host = "0.0.0.0";
    uint16_t metadata_port = 8080;
    // High availability: elect one leader among the masters of cluster_id through etcd.
    bool ha = false;
    std::string etcd_endpoints;  // "h:p;h:p" or http://h:p
    std::string cluster_id = "mooncake_cluster";
    // The host clients dial, published in etcd with the rpc port. Empty: rpc_host, or this
    // machine's host name when rpc_host is a wildcard (0.0.0.0, ::).
    std::string advertise_host;
    std::chrono::seconds lease_ttl{5};                // >= 2 s
    std::chrono::milliseconds ha_poll_interval{200};  // how often a standby looks at the key
    MasterRpcSecurity security;
  };

  // How a server ended; kRunning while it has not.
  enum class End { kRunning, kStopped, kLeadershipLost };

  // Serves every endpoint and, with HA, starts campaigning. Returns once every endpoint accepts
  // connections. Errors: kInvalidArgument (the HA settings cannot work, e.g. bad etcd endpoints:
  // the binary exits 2), kUnavailable (an endpoint cannot be served, e.g. a port in use; the
  // message names it: the binary exits 1). Nothing keeps running after an error.
  static absl::StatusOr<std::unique_ptr<MasterServer>> Start(Options options);

  ~MasterServer();  // Stop()
  MasterServer(const MasterServer&) = delete;
  MasterServer& operator=(const MasterServer&) = delete;

  // Stops serving: resigns the leadership first (revoking the lease so that a standby takes over
  // without waiting for the TTL), then stops the ticker, the gRPC server and the HTTP servers.
  // Idempotent; bounded (etcd timeout plus the gRPC grace period). Afterwards Wait() returns
  // kLeadershipLost when that happened first, else kStopped.
  void Stop();

  // Waits up to `timeout` for the end: Stop(), or the leadership lost. Returns how it ended, or
  // kRunning on timeout.
  End Wait(absl::Duration timeout) const;

  // The bound ports (valid after Start(), also after Stop()).
  uint16_t rpc_port() const { return rpc_port_; }
  uint16_t metrics_port() const { return metrics_port_; }
  uint16_t metadata_port() const { return metadata_port_; }  // 0 without the metadata server
  uint16_t fast_rpc_port() const { return fast_rpc_port_; }  // 0 without the fast path
  // "host:port" this master publishes as leader (HA), with the bound rpc port.
  const std::string& advertise_address() const { return advertise_address_; }
  // The endpoints, as printed after "yuebing-master listening on ": "rpc H:P metrics P
  // [metadata http://H:P/metadata] [ha KEY as H:P] [fast P]".
  std::string Endpoints() const;
  // True when this master serves RPCs now: always without HA, while it leads with HA.
  bool IsLeader() const;
  // The term this master leads (0 without HA or before it won an election).
  uint64_t term() const;
  // Objects, segments and usage of this master's service.
  MasterStats Stats() const { return service_->Stats(); }

 private:
  explicit MasterServer(Options options);
  absl::Status Serve();
  void OnLeadershipLost();
  void TickLoop();

  const Options options_;
  // Set by Serve() before Start() returns; constant afterwards.
  std::string advertise_address_;
  uint16_t rpc_port_ = 0;
  uint16_t metrics_port_ = 0;
  uint16_t metadata_port_ = 0;
  uint16_t fast_rpc_port_ = 0;
  std::unique_ptr<MasterService> service_;
  std::unique_ptr<MasterMetrics> metrics_;
  std::unique_ptr<GrpcMasterServer> rpc_;
  std::unique_ptr<FastRpcServer> fast_rpc_;  // destroyed before rpc_ (it calls into rpc_)
  std::unique_ptr<AdminHttpServer> admin_;
  std::unique_ptr<HttpMetadataServer> metadata_;
  std::unique_ptr<LeaderElection> election_;       // set once before Start() returns
  std::atomic<LeaderElection*> elected_{nullptr};  // election_ once it runs; read by RPCs
  absl::Notification stop_ticking_;
  std::thread ticker_;

  yuebing::Mutex stop_mu_;  // serializes Stop(); never taken by the election thread
  bool stopped_ ABSL_GUARDED_BY(stop_mu_) = false;
  mutable yuebing::Mutex end_mu_;
  bool ended_ ABSL_GUARDED_BY(end_mu_) = false;
  End end_ ABSL_GUARDED_BY(end_mu_) = End::kRunning;
};

}  // namespace yuebing::master
