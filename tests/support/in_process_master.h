// An in-process master for tests that drive real client code: InProcessMaster holds one real
// master::MasterService (the "server"), InProcessMasterApi is one client's connection to it (a
// store::MasterApi, used instead of the gRPC MasterClient through store::CreateClientWithMaster).
// Requests get the same checks and dispatch as the gRPC server (src/master/request_rules.h).
//
// Faults, all seeded: a call fails with kRpcFail as if the master were unreachable (the service
// never sees it); a reply is late (the service served the call; a delay past the connection's
// timeout fails the call with kRpcFail after the timeout, as a gRPC deadline would, so the caller
// cannot tell whether it was served); Restart() replaces the service by a fresh one (empty
// metadata) with a higher term, as an HA failover does.
//
// Thread safety: all methods of both classes are thread-safe.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "store/master_api.h"
#include "yuebing/common/mutex.h"
#include "yuebing/master/master_service.h"

namespace yuebing::test_support {

struct InProcessFaults {
  double fail_probability = 0;   // per call
  double delay_probability = 0;  // per call
  std::chrono::milliseconds max_delay{0};
};

class InProcessMaster {
 public:
  InProcessMaster(master::MasterOptions options, uint64_t seed);

  // A fresh MasterService (no clients, no objects) with term() + 1. Calls already running finish
  // on the old one; their replies carry the old term.
  void Restart();
  void Tick();
  void SetFaults(const InProcessFaults& faults);

  struct Snapshot {
    std::shared_ptr<master::MasterService> service;
    uint64_t term = 0;
  };
  Snapshot Current() const;

  // What one call suffers: drawn from the faults set, counted.
  struct Fault {
    bool fail = false;
    std::chrono::milliseconds delay{0};
  };
  Fault DrawFault();

  uint64_t failed_calls() const { return failed_calls_.load(); }
  uint64_t delayed_calls() const { return delayed_calls_.load(); }
  uint64_t calls() const { return calls_.load(); }

 private:
  const master::MasterOptions options_;
  mutable yuebing::Mutex mu_;
  std::shared_ptr<master::MasterService> service_ ABSL_GUARDED_BY(mu_);
  uint64_t term_ ABSL_GUARDED_BY(mu_) = 1;
  InProcessFaults faults_ ABSL_GUARDED_BY(mu_);
  std::mt19937_64 random_ ABSL_GUARDED_BY(mu_);
  std::atomic<uint64_t> calls_{0}, failed_calls_{0}, delayed_calls_{0};
};

class InProcessMasterApi final : public store::MasterApi {
 public:
  // `master` must outlive this. `timeout`: the per-call deadline (rpc_timeout).
  InProcessMasterApi(InProcessMaster* master, std::chrono::milliseconds timeout);

  absl::StatusOr<uint64_t> MountSegment(const master::ClientId& client,
                                        const master::Segment& segment) override;
  absl::Status UnmountSegment(const master::ClientId& client, const std::string& name) override;
  absl::StatusOr<master::ClientState> Ping(const master::ClientId& client) override;
  absl::StatusOr<master::MountResult> MountSegmentForRestore(const master::ClientId& client,
                                                             const master::Segment& segment,
                                                             bool has_disk_tier) override;
  absl::StatusOr<std::vector<absl::Status>> RestoreObjects(
      const master::ClientId& client, const std::string& segment_name,
      const std::vector<master::RestoredObject>& objects, bool last) override;
  // Polls the service every millisecond until entries come or `wait` passes.
  absl::StatusOr<master::JournalBatch> PullJournal(const master::ClientId& client,
                                                   uint64_t journal_id, uint64_t ack,
                                                   std::chrono::milliseconds wait) override;
  std::vector<absl::StatusOr<std::vector<master::Replica>>> BatchPutStart(
      const master::ClientId& client, const std::vector<std::string>& keys,
      const std::vector<uint64_t>& sizes, const master::ReplicateConfig& config, bool upsert,
      const std::vector<uint64_t>& checksums) override;
  std::vector<absl::Status> BatchPutEnd(const master::ClientId& client,
                                        const std::vector<std::string>& keys,
                                        const std::vector<uint64_t>& checksums) override;
  std::vector<absl::Status> BatchPutRevoke(const master::ClientId& client,
                                           const std::vector<std::string>& keys) override;
  std::vector<absl::StatusOr<master::ObjectLocation>> BatchGetReplicaList(
      const std::vector<std::string>& keys) override;
  std::vector<absl::StatusOr<master::ObjectLocation>> BatchQueryReplicas(
      const std::vector<std::string>& keys) override;
  // Sent at once (with the injected faults of any call: a lost release ends at its deadline).
  void ReleaseLeases(std::vector<uint64_t> lease_ids) override;
  absl::StatusOr<std::vector<bool>> BatchExist(const std::vector<std::string>& keys) override;
  std::vector<absl::Status> BatchRemove(const std::vector<std::string>& keys, bool force) override;
  std::vector<absl::Status> BatchReplicaClear(const std::vector<std::string>& keys,
                                              const std::string& segment_name) override;
  absl::StatusOr<master::CopyPlan> ReplicaCopyStart(const master::ClientId& client,
                                                    const std::string& key,
                                                    const std::string& source,
                                                    const std::vector<std::string>& targets,
                                                    bool move) override;
  absl::Status ReplicaCopyEnd(const master::ClientId& client, const std::string& key,
                              bool revoke) override;
  absl::StatusOr<std::vector<master::DrainUnit>> FetchDrainWork(const master::ClientId& client,
                                                                uint32_t max_units) override;
  absl::Status ReportDrainWork(const master::ClientId& client, const std::string& job_id,
                               const std::string& key, const absl::Status& outcome) override;
  absl::StatusOr<uint64_t> GetSize(const std::string& key) override;
  absl::StatusOr<uint64_t> RemoveByRegex(const std::string& pattern, bool force,
                                         const std::string& tenant) override;
  absl::StatusOr<uint64_t> RemoveAll(bool force, const std::string& tenant) override;
  absl::StatusOr<master::DiskSyncReply> SyncDiskTier(
      const master::ClientId& client, const master::DiskSyncRequest& request) override;

  const std::string& address() const override { return address_; }
  uint64_t term() const override { return max_term_.load(); }
  void SetNewTermCallback(std::function<void(uint64_t term)> callback) override {
    on_new_term_ = std::move(callback);
  }

 private:
  // Draws a fault, runs body(service) on the current service unless the call fails before it,
  // delays the reply as drawn, then applies the term rule
  // of MasterClient (raise the highest term seen, call back on a new one, refuse older ones).
  // The status is that of the call as a whole (kRpcFail for faults and stale terms).
  absl::Status Call(const char* name, const std::function<void(master::MasterService&)>& body);

  InProcessMaster* const master_;
  const std::chrono::milliseconds timeout_;
  const std::string address_ = "in-process";
  std::atomic<uint64_t> max_term_{0};
  std::function<void(uint64_t)> on_new_term_;
};

}  // namespace yuebing::test_support
