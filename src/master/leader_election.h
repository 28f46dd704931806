// Leader election of yuebing-master through etcd. Every master of a cluster runs one; at most one
// of them serves at a time.
//
// etcd keys: LeaderKey(cluster_id) = "yuebing/<cluster_id>/master/leader" holds the leader's
// advertised rpc address ("host:port"), bound to the leader's lease. A master campaigns when the
// key is absent: it grants a lease of `lease_ttl` and, in one transaction, creates the key only if
// it still does not exist. The winner's term is the key's create revision, so terms grow with
// every election (etcd revisions never go back). Standbys poll the key every `poll_interval`.
//
// The leader renews its lease every lease_ttl/3. It serves only while it is sure the lease is
// alive: until (send time of the last successful renewal) + lease_ttl - safety margin, a bound
// that cannot pass the time etcd lets the lease expire. When that point passes without a renewal,
// or a renewal says the lease or the key is gone, the master stops serving (Admit() fails from
// then on) and calls `on_lost` once; this object never becomes leader again (its metadata would be
// stale). MasterServer (master/master_server.h) reports that to its owner; yuebing-master exits 3.
//
// Thread safety: all methods are thread-safe. `on_lost` runs on the election thread.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <thread>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "common/etcd_client.h"
#include "yuebing/common/mutex.h"

namespace yuebing::master {

class LeaderElection {
 public:
  struct Options {
    std::string etcd_endpoints;  // "h:p;h:p" (see EtcdClient::ParseEndpoints)
    std::string cluster_id;
    std::string advertise_address;  // the value written into the leader key
    std::chrono::seconds lease_ttl{5};
    std::chrono::milliseconds poll_interval{200};
    std::chrono::milliseconds etcd_timeout{1000};  // bound of each etcd call
  };

  static std::string LeaderKey(const std::string& cluster_id);

  // Starts campaigning on a background thread. Errors: kInvalidArgument (bad options).
  static absl::StatusOr<std::unique_ptr<LeaderElection>> Start(Options options,
                                                               std::function<void()> on_lost);

  ~LeaderElection();  // Resign()
  LeaderElection(const LeaderElection&) = delete;
  LeaderElection& operator=(const LeaderElection&) = delete;

  // OK while this master is the leader with a live lease; otherwise kUnavailableInCurrentStatus
  // (-1010) saying it is not the leader (and who is, when known).
  absl::Status Admit() const;
  bool IsLeader() const { return Admit().ok(); }
  // The term this master leads (0 before it wins an election).
  uint64_t term() const { return term_.load(); }
  // The leader's advertised address as last seen (this master's own while it leads); empty
  // when none is known.
  std::string KnownLeader() const;

  // Stops serving at once, stops campaigning and, when leader, revokes the lease so that the key
  // disappears and a standby takes over without waiting for the TTL. Idempotent; bounded by
  // etcd_timeout.
  void Resign();

 private:
  explicit LeaderElection(Options options, std::unique_ptr<EtcdClient> etcd,
                          std::function<void()> on_lost);
  void Run();
  // One campaign round as a standby; returns true when this master won.
  bool Campaign();
  // One renewal round as leader; returns false when leadership is lost.
  bool Renew();
  void StepDown(const std::string& why);
  // Waits up to `d` or until Resign(); returns false when resigning.
  bool Sleep(std::chrono::nanoseconds d);
  static int64_t NowNs();

  const Options options_;
  const std::string key_;
  const std::chrono::nanoseconds margin_;
  std::unique_ptr<EtcdClient> etcd_;
  std::function<void()> on_lost_;

  std::atomic<bool> leader_{false};
  std::atomic<int64_t> serve_until_ns_{0};  // steady-clock ns; Admit() fails after it
  std::atomic<uint64_t> term_{0};
  int64_t lease_ = 0;          // election thread only (and Resign() after join)
  int64_t next_renew_ns_ = 0;  // election thread only

  mutable yuebing::Mutex mu_;
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  std::string known_leader_ ABSL_GUARDED_BY(mu_);
  std::thread thread_;
};

}  // namespace yuebing::master
