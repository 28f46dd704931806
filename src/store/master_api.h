// MasterApi: every call a store client (object client, segment host, disk tier) makes to the
// master, as one interface. The production implementation is MasterClient (gRPC,
// src/store/master_client.h); tests use an in-process implementation over a MasterService
// (tests/support/in_process_master.h), so the seeded simulation drives real client code.
//
// Contract of every implementation:
// - Thread safety: all methods may be called from any thread at once.
// - Deadlines: every call returns within the implementation's timeout (rpc_timeout for gRPC),
//   whether the master answers or not.
// - Errors: kRpcFail (-900) when the master cannot be reached in time, refuses the call, or
//   answers from an older term than one seen before; otherwise the master's own code (see
//   yuebing/master/master_service.h), after the same request checks the gRPC server makes
//   (client id 1..kMaxClientIdBytes, batches up to kMaxBatchKeys, regex 1..kMaxRegexBytes:
//   kInvalidParams). Per-key results of a batch come one per key, in order; a failure of the
//   whole call is repeated for every key.
// - Terms: term() is the highest master term seen in a reply (0 before the first). The new-term
//   callback runs when a reply carries a term higher than a non-zero term seen before.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "yuebing/master/types.h"

namespace yuebing::store {

class MasterApi {
 public:
  virtual ~MasterApi() = default;

  // Returns the mount epoch (see MasterService::MountSegment).
  virtual absl::StatusOr<uint64_t> MountSegment(const master::ClientId& client,
                                                const master::Segment& segment) = 0;
  virtual absl::Status UnmountSegment(const master::ClientId& client, const std::string& name) = 0;
  // kNeedRemount when the master does not know the client (restart, TTL expiry).
  virtual absl::StatusOr<master::ClientState> Ping(const master::ClientId& client) = 0;

  // Segment manifests (see MasterService::MountSegmentForRestore, RestoreObjects, PullJournal).
  virtual absl::StatusOr<master::MountResult> MountSegmentForRestore(const master::ClientId& client,
                                                                     const master::Segment& segment,
                                                                     bool has_disk_tier) = 0;
  virtual absl::StatusOr<std::vector<absl::Status>> RestoreObjects(
      const master::ClientId& client, const std::string& segment_name,
      const std::vector<master::RestoredObject>& objects, bool last) = 0;
  // A long poll: the master may hold the call up to `wait` while it has nothing new (the call's
  // deadline is the timeout plus `wait`).
  virtual absl::StatusOr<master::JournalBatch> PullJournal(const master::ClientId& client,
                                                           uint64_t journal_id, uint64_t ack,
                                                           std::chrono::milliseconds wait) = 0;

  // One result per key. upsert: replace an existing object (UpsertStart per key). checksums:
  // what the PutEnd will record, one per key, or empty.
  virtual std::vector<absl::StatusOr<std::vector<master::Replica>>> BatchPutStart(
      const master::ClientId& client, const std::vector<std::string>& keys,
      const std::vector<uint64_t>& sizes, const master::ReplicateConfig& config, bool upsert,
      const std::vector<uint64_t>& checksums) = 0;
  virtual std::vector<absl::Status> BatchPutEnd(const master::ClientId& client,
                                                const std::vector<std::string>& keys,
                                                const std::vector<uint64_t>& checksums) = 0;
  virtual std::vector<absl::Status> BatchPutRevoke(const master::ClientId& client,
                                                   const std::vector<std::string>& keys) = 0;
  // Grants a read lease per found key; ObjectLocation::lease_ttl is whole milliseconds.
  virtual std::vector<absl::StatusOr<master::ObjectLocation>> BatchGetReplicaList(
      const std::vector<std::string>& keys) = 0;
  // The same lookup without its effects (MasterService::QueryReplicas): no lease (lease_id 0,
  // lease_ttl 0), no access recorded, no promotion hit counted. For metadata queries.
  virtual std::vector<absl::StatusOr<master::ObjectLocation>> BatchQueryReplicas(
      const std::vector<std::string>& keys) = 0;
  // Ends read leases whose reads are over (ObjectLocation::lease_id; each grant released at most
  // once). Best effort and cheap: an implementation may hold the ids briefly and send them with
  // its next call that carries keys, but they reach the master before any later call of this
  // object does. Lost releases end at their lease deadline. Never blocks on the master.
  virtual void ReleaseLeases(std::vector<uint64_t> lease_ids) = 0;
  // Per key: true/false, or the error of the whole call.
  virtual absl::StatusOr<std::vector<bool>> BatchExist(const std::vector<std::string>& keys) = 0;
  virtual std::vector<absl::Status> BatchRemove(const std::vector<std::string>& keys,
                                                bool force) = 0;
  // See MasterService::ReplicaCopyStart / ReplicaCopyEnd.
  virtual absl::StatusOr<master::CopyPlan> ReplicaCopyStart(const master::ClientId& client,
                                                            const std::string& key,
                                                            const std::string& source,
                                                            const std::vector<std::string>& targets,
                                                            bool move) = 0;
  virtual absl::Status ReplicaCopyEnd(const master::ClientId& client, const std::string& key,
                                      bool revoke) = 0;
  // Drain jobs (see MasterService::FetchDrainWork / ReportDrainWork).
  virtual absl::StatusOr<std::vector<master::DrainUnit>> FetchDrainWork(
      const master::ClientId& client, uint32_t max_units) = 0;
  virtual absl::Status ReportDrainWork(const master::ClientId& client, const std::string& job_id,
                                       const std::string& key, const absl::Status& outcome) = 0;
  // See MasterService::BatchReplicaClear.
  virtual std::vector<absl::Status> BatchReplicaClear(const std::vector<std::string>& keys,
                                                      const std::string& segment_name) = 0;
  virtual absl::StatusOr<uint64_t> GetSize(const std::string& key) = 0;
  // Within `tenant` (yuebing/common/tenant_key.h): the pattern matches its user keys.
  virtual absl::StatusOr<uint64_t> RemoveByRegex(const std::string& pattern, bool force,
                                                 const std::string& tenant) = 0;
  virtual absl::StatusOr<uint64_t> RemoveAll(bool force, const std::string& tenant) = 0;
  // Disk tier exchange (see MasterService::SyncDiskTier).
  virtual absl::StatusOr<master::DiskSyncReply> SyncDiskTier(
      const master::ClientId& client, const master::DiskSyncRequest& request) = 0;

  // Where the master is, for log messages.
  virtual const std::string& address() const = 0;
  virtual uint64_t term() const = 0;
  // Set before the first call; the callback runs on the calling thread of whichever call saw
  // the new term and must not block.
  virtual void SetNewTermCallback(std::function<void(uint64_t term)> callback) = 0;
};

}  // namespace yuebing::store
