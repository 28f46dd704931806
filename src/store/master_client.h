// A store client's connection to yuebing-master: one gRPC channel, every call bounded by a
// deadline, replies converted to master types and Mooncake-coded statuses. Replies from a
// leadership term older than the newest seen are refused (kRpcFail), so a deposed master cannot
// steer the client.
//
// Addresses: "host:port", or "etcd://h:p[;h:p...][?cluster_id=C]" for masters running with
// --enable_ha: the leader's address is read from etcd key yuebing/<C>/master/leader (C defaults
// to "mooncake_cluster", the master's default). The leader is re-read from etcd when a call fails
// in transport or a master answers "not the leader" (UNAVAILABLE_IN_CURRENT_STATUS, -1010); a
// not-leader answer is retried once against the re-read leader within the same deadline. A call
// never outlives its deadline, including the etcd lookup.
//
// Implements MasterApi (src/store/master_api.h) and follows its contract. Released read leases
// are queued and ride along with the next BatchPutStart, BatchPutRevoke, BatchGetReplicaList,
// BatchExist or BatchRemove; a background thread sends them on their own (ReleaseLeases RPC)
// when no such call goes out within kReleaseDelay (they wait between one and two periods then).
// Releases queued under one master term are dropped when a newer term is seen (a new leader does
// not know those leases). Thread safety: all methods are thread-safe. Errors: kRpcFail (-900) when
// the master cannot be reached in time or refuses the call; otherwise the master's code (see
// master_service.h).
#pragma once

#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "rpc/master_rpc_security.h"
#include "store/master_api.h"
#include "yuebing/common/mutex.h"
#include "yuebing/master/types.h"

namespace yuebing::store {

// How long a released lease may wait for a call to ride along with before it is sent alone.
inline constexpr std::chrono::milliseconds kReleaseDelay{2};

class MasterClient final : public MasterApi {
 public:
  // Creates the channel (connection happens lazily). `security`: cluster secret sent as a per-call
  // credential, and a CA bundle for TLS (empty: off). Errors: kInvalidParams for an empty address
  // or a malformed etcd:// address.
  static absl::StatusOr<std::unique_ptr<MasterClient>> Create(
      const std::string& address, std::chrono::milliseconds timeout,
      const MasterRpcSecurity& security = {});
  ~MasterClient() override;

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

  // Called (on the calling thread of whichever RPC saw it) when a reply carries a term higher
  // than a non-zero term seen before: a new leader that knows nothing of this client. Set it
  // before the first call; it must not block.
  void SetNewTermCallback(std::function<void(uint64_t term)> callback) override {
    on_new_term_ = std::move(callback);
  }

  class Impl;  // defined and used only in master_client.cc

 private:
  MasterClient(std::string address, std::unique_ptr<Impl> impl);
  // The MountSegment RPC; `restoring` as in MasterService::MountSegmentForRestore.
  std::vector<absl::StatusOr<master::ObjectLocation>> LookUp(const std::vector<std::string>& keys,
                                                             bool query_only);
  absl::StatusOr<master::MountResult> Mount(const master::ClientId& client,
                                            const master::Segment& segment, bool restoring,
                                            bool has_disk_tier);
  // Adds up to limits::kMaxBatchKeys queued releases to a request about to go out, after any
  // flush in flight has been answered (so the request cannot overtake releases queued before it).
  template <typename Ids>
  void AttachReleases(Ids* ids);
  // Takes up to limits::kMaxBatchKeys queued releases (none when the term changed).
  std::vector<uint64_t> TakeReleasesLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(release_mu_);
  void FlushLoop();

  const std::string address_;
  std::unique_ptr<Impl> impl_;
  std::atomic<uint64_t> max_term_{0};
  std::function<void(uint64_t)> on_new_term_;

  yuebing::Mutex release_mu_;
  std::vector<uint64_t> releases_ ABSL_GUARDED_BY(release_mu_);
  uint64_t releases_term_ ABSL_GUARDED_BY(release_mu_) = 0;  // the term they were granted under
  bool stopping_ ABSL_GUARDED_BY(release_mu_) = false;
  bool flushing_ ABSL_GUARDED_BY(release_mu_) = false;  // a ReleaseLeases RPC is in flight
  // When releases_ last went from empty to non-empty, and how many ReleaseLeases calls queued any.
  std::chrono::steady_clock::time_point releases_since_ ABSL_GUARDED_BY(release_mu_);
  uint64_t releases_queued_ ABSL_GUARDED_BY(release_mu_) = 0;
  std::thread flusher_;
};

}  // namespace yuebing::store
