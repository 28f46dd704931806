// The master's logic: segment registry, object index, allocation, leases, eviction and client
// liveness. It never touches object bytes. No networking here: the gRPC layer (src/master/
// grpc_master_server.*) and tests call it directly. Time comes from the injected Clock, so tests
// drive leases, TTLs and timeouts with a FakeClock.
//
// Thread safety: every method is thread-safe. The object index is sharded; calls on different keys
// rarely contend.
//
// Errors carry Mooncake numeric codes (yuebing/common/error_code.h):
//   kInvalidParams (-600)        bad key (empty, > max_key_bytes), zero size, replica_num 0, a
//                                caller bound of yuebing/common/limits.h exceeded, ...
//   kObjectNotFound (-704)       no such key, or not complete yet (Get/Exist treat in-progress as
//                                absent)
//   kObjectAlreadyExists (-705)  PutStart of a key that exists (complete or being written by
//                                someone else within put_start_discard_timeout)
//   kObjectHasLease (-706)       Remove of a leased object without force
//   kNoAvailableHandle (-200)    no segment has room even after eviction
//   kSegmentAlreadyExists (-102) mounting a name already mounted by another live client
//   kSegmentNotFound (-101), kClientNotFound (-103), kIllegalClient (-601) for PutEnd/PutRevoke
//                                by a client other than the writer
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "yuebing/common/clock.h"
#include "yuebing/common/limits.h"
#include "yuebing/common/tenant_key.h"
#include "yuebing/master/types.h"

namespace yuebing::master {

struct MasterOptions {
  std::chrono::milliseconds default_kv_lease_ttl{10000};
  std::chrono::milliseconds default_kv_soft_pin_ttl{30 * 60 * 1000};
  // The longest soft-pin TTL a put may ask for (ReplicateConfig::soft_pin_ttl_ms).
  std::chrono::milliseconds max_kv_soft_pin_ttl{24 * 60 * 60 * 1000};
  double eviction_high_watermark_ratio = 0.90;
  double eviction_ratio = 0.05;
  bool allow_evict_soft_pinned_objects = true;
  // Lazy eviction: a pass above the watermark chooses its victims (least recently used first)
  // and counts their memory as free, but they stay readable until a put finds no room; then the
  // oldest of them are freed first. false: victims are freed by the pass (upstream's way).
  bool lazy_eviction = true;
  std::chrono::milliseconds client_ttl{10000};
  // An unfinished put older than this may be taken over by another PutStart of the same key.
  std::chrono::milliseconds put_start_discard_timeout{30000};
  // An unfinished put older than this is revoked by Tick() and its space freed.
  std::chrono::milliseconds put_start_release_timeout{600000};
  uint32_t num_shards = 64;
  // Longest key accepted; clamped to 1..limits::kMaxConfigurableKeyBytes.
  uint32_t max_key_bytes = limits::kMaxKeyBytes;
  // Objects are placed at this alignment inside segments.
  uint32_t allocation_alignment = 64;
  // Disk tier: an object chosen for eviction on a segment whose owner has a disk tier is handed
  // to that store as a spill task instead of being dropped; if the spill is not reported within
  // this time, the object is evicted plainly.
  std::chrono::milliseconds spill_timeout{30000};
  // Spill tasks waiting per store at most; past it eviction drops objects plainly.
  uint32_t max_queued_spills = 4096;
  // Promotion on hit: a disk-only object read promotion_admission_threshold times (1: every
  // read) is handed to its store, which copies it back to memory (docs/store.md "Promotion").
  bool promotion_on_hit = false;
  uint32_t promotion_admission_threshold = 2;
  // Promotions queued and not yet taken by their stores, at most; past it reads queue none.
  uint32_t promotion_queue_limit = 50000;
  // Promotions handed to one store per SyncDiskTier at most (the store syncs again at once
  // while it gets work).
  uint32_t promotion_max_per_sync = 1;
  // Multi-tenancy (upstream's --enable_multi_tenants): a tenant writes to memory only while it
  // has a quota policy, and only within its quota (docs/master.md "Tenants and quotas").
  // Tenants' keys are apart with or without it (yuebing/common/tenant_key.h).
  bool multi_tenant = false;
  // The policies it starts with (tenant -> requested bytes) and the file that PUT/DELETE of
  // /api/v1/tenant_quotas rewrite ("" none: changes last until the master stops).
  std::map<std::string, uint64_t> tenant_quotas;
  std::string tenant_policy_path;
};

// Drain jobs: a move is tried this many times before it fails its job; a move handed out and not
// reported within kDrainUnitTimeout is handed out again (its owner may have died mid-move).
inline constexpr uint32_t kMaxDrainAttempts = 3;
inline constexpr std::chrono::seconds kDrainUnitTimeout{30};
// Ended jobs kept for queries at most (the oldest are forgotten first).
inline constexpr size_t kMaxEndedDrainJobs = 1024;

class MasterService {
 public:
  explicit MasterService(MasterOptions options, Clock& clock = Clock::Real());
  ~MasterService();
  MasterService(const MasterService&) = delete;
  MasterService& operator=(const MasterService&) = delete;

  // --- clients and segments ---
  // Mounts a segment for `client` (registering the client if new) and returns the mount epoch
  // (unique, increasing). Mounting the same (client, name, base, size) again returns the existing
  // epoch. A name held by another client whose TTL expired is taken over: its objects are dropped
  // first. Errors: kInvalidParams (empty name, zero size), kSegmentAlreadyExists.
  absl::StatusOr<uint64_t> MountSegment(const ClientId& client, const Segment& segment);
  // MountSegment for an owner that will report what the segment holds: a fresh mount
  // (MountResult::fresh) takes no new objects until RestoreObjects(..., last = true) ends the
  // restore (or the owner expires); a mount the master already holds is returned as it is (fresh
  // again while its restore has not ended, so a failed restore can start over). Only segments
  // mounted this way are journaled (PullJournal). `has_disk_tier`: the owner runs a disk tier
  // it will announce (SyncDiskTier); until it does, eviction still spills its objects (the
  // tasks wait for that first sync, at most spill_timeout) instead of dropping them.
  absl::StatusOr<MountResult> MountSegmentForRestore(const ClientId& client, const Segment& segment,
                                                     bool has_disk_tier = false);
  // Records objects the owner of a segment mounted by MountSegmentForRestore reports: each
  // becomes a complete object (or one more replica of an equal complete object: same size and
  // checksum) unless its range is not free, outside the segment, or its key is held by a
  // different object or in progress. One status per object, OK when recorded. `last` ends the
  // restore. Errors of the whole call: kSegmentNotFound, kIllegalClient (not the owner),
  // kInvalidParams (more than limits::kMaxBatchKeys objects, or the restore already ended).
  absl::StatusOr<std::vector<absl::Status>> RestoreObjects(
      const ClientId& client, const std::string& segment_name,
      const std::vector<RestoredObject>& objects, bool last);
  // Manifest changes for the segments `client` owns, after `ack` (the last_seq of the previous
  // batch from the same journal_id; entries up to it are forgotten). A `journal_id` other than
  // this master's is taken as ack 0. At most `max_entries` entries; none when nothing is new.
  // Non-blocking. Errors: kInvalidParams (bad client id).
  absl::StatusOr<JournalBatch> PullJournal(const ClientId& client, uint64_t journal_id,
                                           uint64_t ack, size_t max_entries);
  // Called whenever an entry is added for any client or a client acknowledges entries, possibly
  // under the service's internal locks: it must only signal (for long polls), never call into the
  // service. nullptr: none.
  void SetJournalListener(std::function<void()> listener);
  // The owners that keep manifests of `keys`' replicas, each with the newest change queued for it
  // (one mark per owner). Taken after a PutEnd, ManifestsHave(marks) then tells when every owner
  // knows the objects, so that a master killed afterwards loses none of them (docs/master.md).
  std::vector<ManifestMark> ManifestMarks(const std::vector<std::string>& keys);
  // Whether every owner has acknowledged its mark (or is gone). Non-blocking.
  bool ManifestsHave(const std::vector<ManifestMark>& marks);
  // Unmounts: replicas on the segment are dropped; objects left with none are removed (in-progress
  // puts to it are revoked). Errors: kSegmentNotFound, kIllegalClient (owned by another client).
  absl::Status UnmountSegment(const ClientId& client, const std::string& name);
  // Records liveness. kNeedRemount when the master does not know the client (restart, or its TTL
  // expired and its segments were unmounted).
  ClientState Ping(const ClientId& client);

  // --- writes ---
  // Allocates min(replica_num, segments with room) replicas (>= 1), each on a distinct segment,
  // and records the object as in progress (invisible to readers). `checksum`: the one PutEnd
  // will record, announced early (0: none) so that the segments' owners learn of the object
  // while its bytes are written (journal; see PullJournal).
  absl::StatusOr<std::vector<Replica>> PutStart(const ClientId& client, const std::string& key,
                                                uint64_t size, const ReplicateConfig& config,
                                                uint64_t checksum = 0);
  // Makes the object visible with its checksum. Errors: kObjectNotFound, kIllegalClient.
  absl::Status PutEnd(const ClientId& client, const std::string& key, uint64_t checksum);
  // Abandons an in-progress put and frees its space.
  absl::Status PutRevoke(const ClientId& client, const std::string& key);
  // Like PutStart, but an existing complete object is replaced when the new put ends; the old
  // replicas stay readable until then and are freed once no read lease covers them.
  absl::StatusOr<std::vector<Replica>> UpsertStart(const ClientId& client, const std::string& key,
                                                   uint64_t size, const ReplicateConfig& config,
                                                   uint64_t checksum = 0);

  // --- reads ---
  // Replicas of a complete object; grants (extends) a read lease of default_kv_lease_ttl and
  // counts a reader (ObjectLocation::lease_id). While leased, the object is not evicted, and
  // Remove without force fails with kObjectHasLease; a dropped or replaced version's bytes stay
  // until its last reader releases or the lease ends.
  absl::StatusOr<ObjectLocation> GetReplicaList(const std::string& key);
  // Ends the read leases of `lease_ids` (a reader's transfer is over): when the last reader of
  // an object releases, its lease is over at once (removable, evictable; a dropped version's
  // bytes are freed). Unknown, stale and repeated ids are ignored. Returns how many ended a
  // reader. Errors: kInvalidParams (more than limits::kMaxBatchKeys ids).
  absl::StatusOr<uint64_t> ReleaseLeases(const std::vector<uint64_t>& lease_ids);
  // True when a complete object exists (no lease granted).
  bool Exist(const std::string& key);
  absl::StatusOr<uint64_t> GetSize(const std::string& key);

  // --- removal ---
  absl::Status Remove(const std::string& key, bool force = false);
  // Removes complete objects of `tenant` whose user key (yuebing/common/tenant_key.h) fully
  // matches the std::regex; returns how many. Leased objects are skipped unless force.
  // Errors: kInvalidParams (bad regex).
  absl::StatusOr<uint64_t> RemoveByRegex(const std::string& pattern, bool force = false,
                                         absl::string_view tenant = kDefaultTenant);
  // Removes the complete objects of `tenant`; of every tenant when `tenant` is empty.
  uint64_t RemoveAll(bool force = false, absl::string_view tenant = {});

  // --- batch forms: one result per key, in order; at most limits::kMaxBatchKeys keys ---
  std::vector<absl::StatusOr<std::vector<Replica>>> BatchPutStart(
      const ClientId& client, const std::vector<std::string>& keys,
      const std::vector<uint64_t>& sizes, const ReplicateConfig& config,
      const std::vector<uint64_t>& checksums = {});
  std::vector<absl::Status> BatchPutEnd(const ClientId& client,
                                        const std::vector<std::string>& keys,
                                        const std::vector<uint64_t>& checksums);
  std::vector<absl::Status> BatchPutRevoke(const ClientId& client,
                                           const std::vector<std::string>& keys);
  std::vector<absl::StatusOr<ObjectLocation>> BatchGetReplicaList(
      const std::vector<std::string>& keys);
  std::vector<bool> BatchExist(const std::vector<std::string>& keys);
  std::vector<absl::Status> BatchRemove(const std::vector<std::string>& keys, bool force = false);
  // Replica copy and move (Mooncake's copy/move tasks), run by the calling client in three
  // steps: ReplicaCopyStart reserves a replica of the object on each target segment that has
  // none (the object stays readable from its replicas; nothing else may replace, copy or move it
  // until the end: kObjectHasReplicationTask); the client writes the object's bytes to the
  // plan's targets; ReplicaCopyEnd adds them to the object or, with `revoke`, frees them. A move
  // (`move`, one target) also drops the replica on `source` at the end, its space held until
  // the leases of readers that may use it end. `source` empty: any replica (copy only).
  // Errors: kInvalidParams (no targets, an unknown segment, a source holding no replica, a move
  // to its source or to several targets, more than kMaxReplicas replicas in all), kObjectNotFound
  // (no complete object in memory), kUnavailableInCurrentStatus (a target being unmounted or
  // restored, or its owner gone), kNoAvailableHandle (a target without room),
  // kObjectHasReplicationTask. A put, copy or move unfinished when its writer expires, or past
  // put_start_release_timeout, is revoked.
  absl::StatusOr<CopyPlan> ReplicaCopyStart(const ClientId& client, const std::string& key,
                                            const std::string& source,
                                            const std::vector<std::string>& targets, bool move);
  // Errors: kObjectNotFound (no copy of the key under way: revoked, or the object removed),
  // kIllegalClient (started by another client).
  absl::Status ReplicaCopyEnd(const ClientId& client, const std::string& key, bool revoke);

  // Drops the replicas of complete objects nobody is reading (Mooncake's batch_replica_clear):
  // all of an object (memory replicas and disk tier) when `segment_name` is empty, else only its
  // memory replicas on that segment (the object goes with its last one). Per key: OK (cleared),
  // kObjectNotFound (no complete object, or none of its replicas on the segment), kObjectHasLease
  // (a read, a replacing put or a spill to disk is in progress: nothing dropped), kInvalidParams.
  std::vector<absl::Status> BatchReplicaClear(const std::vector<std::string>& keys,
                                              const std::string& segment_name);

  // --- drain jobs (Mooncake's /api/v1/drain_jobs; docs/master.md "Drain") ---
  // Marks `segments` DRAINING (no new objects; puts preferring one go elsewhere) and starts a
  // job that moves each of their objects to another segment: the owners of the segments make the
  // moves (FetchDrainWork / ReportDrainWork). When none of them holds an object any more the job
  // SUCCEEDED and they are DRAINED (they stay mounted, empty and closed until unmounted). An
  // object whose move failed kMaxDrainAttempts times fails the job (FAILED), and a cancel
  // (CANCELED) stops it; either way the segments take new objects again. A segment unmounted
  // during the job fails it. Errors: kInvalidParams (no segments, repeats, max_concurrency 0, a
  // target among the sources), kSegmentNotFound (an unknown segment or target),
  // kUnavailableInCurrentStatus (a segment not open: draining, drained, restoring, unmounting;
  // or a target that is not open).
  absl::StatusOr<std::string> CreateDrainJob(const DrainJobRequest& request);
  // Errors: kJobNotFound.
  absl::StatusOr<DrainJobInfo> QueryDrainJob(const std::string& job_id);
  // Errors: kJobNotFound; kUnavailableInCurrentStatus (the job has ended, or moves are under
  // way: as upstream, a cancel waits for none to be in flight).
  absl::Status CancelDrainJob(const std::string& job_id);
  // Errors: kSegmentNotFound (not mounted).
  absl::StatusOr<SegmentStatus> QuerySegmentStatus(const std::string& segment_name);
  // Up to `max_units` moves of objects on draining segments that `client` owns, within each
  // job's max_concurrency; moves handed out and not reported within kDrainUnitTimeout are handed
  // out again. Objects that also live on another open segment are dropped from the draining one
  // here, with no move. Errors: kInvalidParams (bad client id).
  absl::StatusOr<std::vector<DrainUnit>> FetchDrainWork(const ClientId& client, uint32_t max_units);
  // The outcome of a unit from FetchDrainWork (`status` OK: moved). Unknown jobs and units are
  // ignored (the job may have ended).
  void ReportDrainWork(const ClientId& client, const std::string& job_id, const std::string& key,
                       const absl::Status& status);

  // --- disk tier ---
  // Exchanges disk-tier state with a store (registering `client` when new): records its
  // endpoint, applies its reports and hands it up to request.max_tasks spill tasks and every
  // pending drop. A spilled object becomes disk-only: its memory replicas are freed (after any
  // read lease) and GetReplicaList returns one Replica with disk_endpoint. Reports that no
  // longer match the object (removed, replaced, changed size/checksum, spill timed out) come
  // back as drops. Errors: kInvalidParams (bad client id, empty endpoint, too many entries).
  absl::StatusOr<DiskSyncReply> SyncDiskTier(const ClientId& client,
                                             const DiskSyncRequest& request);

  // Periodic maintenance, run about every 100 ms by the server and explicitly by tests: expires
  // clients past client_ttl (unmounting their segments and revoking their puts), revokes puts
  // older than put_start_release_timeout, frees replaced replicas whose leases ended, and evicts
  // when usage is above the high watermark, and evicts objects whose spill timed out.
  void Tick();

  MasterStats Stats() const;

  // --- tenant quotas (multi_tenant; every call fails with kUnavailableInCurrentMode without) ---
  bool MultiTenant() const;
  // Tenants with a policy or a charge, sorted by id.
  absl::StatusOr<std::vector<TenantQuotaSnapshot>> ListTenantQuotas() const;
  // Errors: kInvalidParams (bad id), kObjectNotFound (no policy and no charge).
  absl::StatusOr<TenantQuotaSnapshot> GetTenantQuota(const std::string& tenant) const;
  // Creates or changes a policy (1..2^63-1 bytes), written to tenant_policy_path first. Lowering
  // it below the charge evicts nothing: the tenant's next writes evict its own objects or fail.
  // Errors: kInvalidParams, kPersistentFail (the file could not be written: nothing changed).
  absl::StatusOr<TenantQuotaSnapshot> UpsertTenantQuota(const std::string& tenant, uint64_t bytes);
  // Removes a policy. Errors: kInvalidParams, kObjectNotFound (no policy), kTenantNotEmpty (the
  // tenant still holds memory or objects, disk-only ones included), kPersistentFail.
  absl::Status DeleteTenantQuota(const std::string& tenant);

  // --- admin queries (read-only: no lease granted, no access recorded, no soft pin extended) ---
  // The replicas of a complete object, as GetReplicaList would return them, with lease_id 0
  // and lease_ttl 0. Errors: kInvalidParams (bad key), kObjectNotFound.
  absl::StatusOr<ObjectLocation> QueryReplicas(const std::string& key) const;
  // QueryReplicas of each key (kInvalidParams for all when more than limits::kMaxBatchKeys).
  std::vector<absl::StatusOr<ObjectLocation>> BatchQueryReplicas(
      const std::vector<std::string>& keys) const;
  // User keys of `tenant`'s complete objects (in memory or only on a disk tier), unordered, at
  // most `limit`; `*truncated` (when given) tells whether more exist. Walks every shard:
  // O(objects).
  std::vector<std::string> ListKeys(size_t limit, bool* truncated = nullptr,
                                    absl::string_view tenant = kDefaultTenant) const;

 private:
  class Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace yuebing::master
