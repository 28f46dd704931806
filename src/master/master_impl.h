// MasterService::Impl: the state behind the public API, shared by master_service.cc (objects),
// segments.cc (segments, clients, unmount) and eviction.cc (eviction and reclaim).
//
// Locks, always taken in this order (never the reverse):
//   unmount_mu_   one unmount at a time, from its start to its end; a mount waits for it.
//   topo_mu_      segments and clients. Shared by every object operation that touches segment
//                 data (placement, replica addresses, frees); exclusive for mount/unmount and
//                 client expiry, which also rewrite objects.
//   eviction_mu_  one eviction pass at a time.
//   drain_mu_     drain jobs (drain_jobs.cc); taken with topo_mu_ shared, before shard locks.
//   Shard::mu     one shard of the object index.
//   retired_mu_   allocations waiting for a deadline before they are freed, and the expiry
//                 queue of detached read holds.
//   spill_mu_     per-store queues of spill tasks and drops (a leaf: nothing is taken under it).
//   SegmentState::mu  one segment's allocator.
//
// Space rules (what keeps readers and late writers from seeing reused bytes):
//   - a complete object's replicas are freed when it goes, unless readers hold them (a read
//     hold with readers whose lease has not ended): then they stay with the hold until its last
//     reader releases or its lease deadline passes (read_leases.cc);
//   - an unfinished put's space is freed at once only when its writer revokes it or the put
//     passed put_start_release_timeout; otherwise (taken over, its writer expired, removed) it
//     is retired until put start + put_start_release_timeout, when the writer must be done;
//   - on an unmounted segment nothing is freed: the whole allocator goes.
#pragma once

#include <atomic>
#include <cstdint>
#include <deque>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/btree_map.h"
#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/container/node_hash_map.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "master/object_index.h"
#include "master/segment_allocator.h"
#include "master/segment_journal.h"
#include "master/segment_members.h"
#include "master/tenant_quotas.h"
#include "yuebing/common/clock.h"
#include "yuebing/common/limits.h"
#include "yuebing/common/mutex.h"
#include "yuebing/master/master_service.h"

namespace yuebing::master {

// Bounds on what callers send live in yuebing/common/limits.h (client id, segment name, segment
// and client counts, replicas, regex, batch size).
using limits::kMaxClientIdBytes;
using limits::kMaxClients;
using limits::kMaxRegexBytes;
using limits::kMaxReplicas;
using limits::kMaxSegmentNameBytes;
using limits::kMaxSegments;
// Object index shards at most (MasterOptions::num_shards is clamped to 1..this).
inline constexpr uint32_t kMaxShards = 4096;
// Eviction estimates its LRU cut-off from at most this many sampled candidates (exact below).
inline constexpr size_t kEvictionSampleCap = 65536;
// An unmount's sweep drops at most this many entries under one shard lock.
inline constexpr size_t kUnmountChunk = 64;
// A put over its tenant's quota evicts that tenant's own objects at most this many times.
inline constexpr int kMaxTenantEvictions = 2;
// A put that finds no room frees condemned objects (its own size each time) at most this many
// times before it runs an eviction pass.
inline constexpr int kMaxReclaims = 4;
// After a pass that evicted nothing, further passes wait this long.
inline constexpr std::chrono::milliseconds kFutileEvictionBackoff{100};

// Manifest changes queued for one segment owner at most (SegmentJournal; about 100 bytes each, so
// 100 MB for an owner that stopped pulling until it expires). An eviction pass can drop many
// objects of one segment at once; an owner further behind is told to reset.
inline constexpr size_t kMaxJournalEntriesPerClient = size_t{1} << 20;

struct ReplicaRef {
  uint32_t segment;
  uint64_t offset;
  friend bool operator==(const ReplicaRef&, const ReplicaRef&) = default;
};

// A replacing put (UpsertStart) in progress on a complete object.
// Also a replica copy or move in progress (ReplicaCopyStart): `replicas` are then the new
// replicas only, added to the object's at the end (and, for a move, `source` dropped).
struct PendingPut {
  uint64_t writer = 0;
  int64_t start_ns = 0;
  uint64_t size = 0;
  uint8_t pins = 0;        // kEntrySoftPin | kEntryHardPin
  uint64_t announced = 0;  // checksum announced by the UpsertStart (0: none)
  std::vector<ReplicaRef> replicas;
  bool copy = false;
  std::optional<ReplicaRef> move_source;  // a move: the replica dropped at the end
  int64_t soft_pin_ttl_ns = 0;            // with kEntrySoftPin in `pins`: the pin's lifetime
};

// A put whose object is not complete yet (Shard::in_progress): what its PutEnd records.
struct PutInProgress {
  uint64_t announced = 0;       // checksum announced by the PutStart (0: none)
  int64_t soft_pin_ttl_ns = 0;  // with kEntrySoftPin: the pin's lifetime from the PutEnd
  // A store bringing its disk-only object back to memory (ReplicateConfig::promotion): the key
  // is also in Shard::disk until the PutEnd, and reads go there meanwhile.
  bool promotion = false;
};

// An object held only by a store's disk tier.
struct DiskEntry {
  uint64_t owner = 0;     // client serial of the store holding the file
  uint32_t endpoint = 0;  // index into MasterService::Impl::endpoints_
  uint64_t size = 0;
  uint64_t checksum = 0;
  uint32_t hits = 0;              // reads since the last promotion handed out (promotion on hit)
  bool promotion_queued = false;  // waiting in its store's SpillQueue::promotions
};

// A replica range kept for readers after its object was dropped or replaced; freed only if its
// segment is still the same mount (epoch).
struct HeldRange {
  uint32_t segment;
  uint64_t epoch;
  uint64_t offset;
  uint64_t length;
};

// The readers of one version of one object (read_leases.cc). Attached to a complete entry
// (`entry`) while the object lives; detached (entry == kNoEntry) with the object's `ranges` once
// it is dropped or replaced while read. It ends when its last reader releases or at
// `deadline_ns` (the end of the last lease granted), whichever is first; then its ranges are
// freed and the slot is reused under a new generation.
struct ReadHold {
  static constexpr uint32_t kNoEntry = UINT32_MAX;
  uint32_t generation = 0;  // in lease ids; never 0
  uint32_t readers = 0;
  int64_t deadline_ns = 0;
  uint32_t entry = kNoEntry;
  std::vector<HeldRange> ranges;
};

struct Shard {
  explicit Shard(uint32_t shard_id) : id(shard_id) {}
  const uint32_t id;  // index in MasterService::Impl::shards_ (part of lease ids)
  yuebing::Mutex mu;
  ObjectTable table ABSL_GUARDED_BY(mu);
  // Replicas after the first, for objects with more than one.
  absl::flat_hash_map<uint32_t, std::vector<ReplicaRef>> extra ABSL_GUARDED_BY(mu);
  // The entries holding a replica on each segment (what an unmount visits).
  SegmentMembers members ABSL_GUARDED_BY(mu);
  // Soft-pinned entries (kEntrySoftPin) -> when their pin ends (set at the put's end; reads do
  // not extend it, as upstream).
  absl::flat_hash_map<uint32_t, int64_t> soft_pin_until ABSL_GUARDED_BY(mu);
  absl::flat_hash_map<uint32_t, PendingPut> pending ABSL_GUARDED_BY(mu);
  // Entries not yet complete -> what their PutEnd records.
  absl::flat_hash_map<uint32_t, PutInProgress> in_progress ABSL_GUARDED_BY(mu);
  // Disk-only objects. A key is in `table` or here, never both, except while its store
  // promotes it: then `table` holds the unfinished put (PutInProgress::promotion).
  absl::flat_hash_map<std::string, DiskEntry> disk ABSL_GUARDED_BY(mu);
  // Entries with kEntrySpilling: the deadline of their spill and the memory it will free.
  struct Spill {
    int64_t deadline_ns;
    uint64_t bytes;
  };
  absl::flat_hash_map<uint32_t, Spill> spilling ABSL_GUARDED_BY(mu);
  // Entries with kEntryCondemned by their last access (oldest first; an entry's last access does
  // not change while it is condemned): its index and the memory counted in condemned_bytes_.
  struct Condemned {
    uint32_t index;
    uint64_t bytes;
  };
  absl::btree_map<uint64_t, Condemned> condemned ABSL_GUARDED_BY(mu);
  // Read holds by slot; free slots are reused oldest first (a slot's generation then moves
  // slowly, so a very late release cannot match a reused slot).
  std::vector<ReadHold> holds ABSL_GUARDED_BY(mu);
  std::deque<uint32_t> free_holds ABSL_GUARDED_BY(mu);
};

// When a detached read hold ends by its deadline at the latest.
struct HoldExpiry {
  int64_t deadline_ns;
  uint32_t shard;
  uint32_t slot;
  uint32_t generation;
};

// Work waiting for one store's next SyncDiskTier.
struct SpillQueue {
  std::vector<SpillTask> tasks;
  std::vector<std::string> drops;
  std::vector<DiskObject> promotions;
};

struct ClientInfo {
  uint64_t serial = 0;  // never reused: identifies the writer of a put
  std::atomic<int64_t> last_ping_ns{0};
  // Registered by a put, copy, drain poll or disk-tier sync rather than by a ping or a mount:
  // its next ping answers kNeedRemount (an expired client that kept calling must mount its
  // segments again; one that has none ignores it, and a repeated mount is answered as it is).
  // Cleared by that ping.
  std::atomic<bool> remount_on_ping{false};
  // Index into endpoints_ + 1 of this store's disk tier; 0: none. Written under exclusive topo_mu_.
  uint32_t disk_endpoint = 0;
  // Its mount said it runs a disk tier (MountSegmentForRestore), announced or not yet: eviction
  // spills its objects. Written under exclusive topo_mu_.
  bool has_disk_tier = false;
};

struct SegmentState {
  SegmentState(const Segment& seg, uint64_t alignment)
      : segment(seg), alloc(seg.base, seg.size, alignment), capacity(alloc.capacity()) {}
  Segment segment;
  ClientId client_id;
  // Valid while mounted (clients outlive their mounted segments); nullptr once dying.
  const ClientInfo* owner = nullptr;
  uint64_t epoch = 0;
  bool dying = false;  // being unmounted: frees are dropped (written under exclusive topo_mu_)
  // Mounted by MountSegmentForRestore and its owner has not finished RestoreObjects: no new
  // objects are placed here (they could land on a range the owner is about to report).
  std::atomic<bool> restoring{false};
  // Mounted by MountSegmentForRestore: its owner keeps a manifest, so changes are journaled.
  bool journaled = false;
  // In a drain job (SegmentStatus kDraining, or kDrained once empty): no new objects are placed
  // here. Written under drain_mu_ with topo_mu_ held.
  std::atomic<bool> draining{false};
  std::atomic<bool> drained{false};
  yuebing::Mutex mu;
  SegmentAllocator alloc ABSL_GUARDED_BY(mu);
  // Multi-tenancy: the tenant (TenantQuotas index) charged for each allocated range, by offset,
  // and each tenant's bytes here (refunded at once when the segment goes).
  absl::flat_hash_map<uint64_t, uint32_t> range_tenant ABSL_GUARDED_BY(mu);
  absl::flat_hash_map<uint32_t, uint64_t> tenant_bytes ABSL_GUARDED_BY(mu);
  const uint64_t capacity;              // usable bytes, fixed
  std::atomic<uint64_t> free_bytes{0};  // mirror of alloc.free_bytes() for placement order
};

// A drain job (drain_jobs.cc). Its sources are (slot, epoch) pairs: a slot remounted or unmounted
// since the job started is no longer its segment.
struct DrainJob {
  DrainJobInfo info;  // counters and status as reported; active_units derived from `active`
  DrainJobRequest request;
  std::vector<std::pair<uint32_t, uint64_t>> sources;
  // Moves handed out: key -> when it is handed out again if not reported (ns, Clock).
  absl::flat_hash_map<std::string, int64_t> active;
  // Failed attempts per key (timeouts included); at kMaxDrainAttempts the job fails.
  absl::flat_hash_map<std::string, uint32_t> attempts;
};

struct RetiredRange {
  int64_t free_at_ns;
  uint32_t segment;
  uint64_t offset;
  uint64_t length;
};

// How to treat the space of an unfinished put that is dropped.
enum class Unfinished { kFreeNow, kHoldUntilRelease };

class MasterService::Impl {
 public:
  Impl(MasterOptions options, Clock& clock);

  // segments.cc
  absl::StatusOr<MountResult> MountSegment(const ClientId& client, const Segment& segment,
                                           bool restoring, bool has_disk_tier);
  absl::Status UnmountSegment(const ClientId& client, const std::string& name);
  ClientState Ping(const ClientId& client);
  void ExpireClients(int64_t now) ABSL_LOCKS_EXCLUDED(topo_mu_, unmount_mu_);
  // Drops these clients: their entries, their unfinished puts, and starts unmounting their
  // segments (BeginUnmount), whose slots it returns for the caller to sweep and finish.
  std::vector<uint32_t> BeginExpiry(const std::vector<ClientId>& ids, int64_t now)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(topo_mu_, unmount_mu_);
  MasterStats Stats();

  // master_service.cc
  absl::StatusOr<std::vector<Replica>> StartPut(const ClientId& client, const std::string& key,
                                                uint64_t size, const ReplicateConfig& config,
                                                bool upsert, bool evict_after, uint64_t checksum);
  absl::Status PutEnd(const ClientId& client, const std::string& key, uint64_t checksum);
  absl::Status PutRevoke(const ClientId& client, const std::string& key);
  absl::StatusOr<ObjectLocation> GetReplicaList(const std::string& key);
  bool Exist(const std::string& key);
  absl::StatusOr<uint64_t> GetSize(const std::string& key);
  absl::Status Remove(const std::string& key, bool force);
  absl::StatusOr<uint64_t> RemoveByRegex(const std::string& pattern, bool force,
                                         absl::string_view tenant);
  uint64_t RemoveAll(bool force, absl::string_view tenant);
  // replica_copy.cc (see MasterService::ReplicaCopyStart)
  absl::StatusOr<CopyPlan> ReplicaCopyStart(const ClientId& client, const std::string& key,
                                            const std::string& source,
                                            const std::vector<std::string>& targets, bool move)
      ABSL_LOCKS_EXCLUDED(topo_mu_);
  absl::Status ReplicaCopyEnd(const ClientId& client, const std::string& key, bool revoke)
      ABSL_LOCKS_EXCLUDED(topo_mu_);
  // replica_clear.cc (see MasterService::BatchReplicaClear)
  absl::Status ReplicaClear(const std::string& key, const std::string& segment_name)
      ABSL_LOCKS_EXCLUDED(topo_mu_);
  void Tick();
  // Takes topo_mu_ itself; for batch forms that defer the check to the end.
  void MaybeEvictAboveWatermark() ABSL_LOCKS_EXCLUDED(topo_mu_);

  // segment_restore.cc (manifests: docs/master.md "Restart and failover")
  absl::StatusOr<std::vector<absl::Status>> RestoreObjects(
      const ClientId& client, const std::string& segment_name,
      const std::vector<RestoredObject>& objects, bool last) ABSL_LOCKS_EXCLUDED(topo_mu_);
  absl::StatusOr<JournalBatch> PullJournal(const ClientId& client, uint64_t journal_id,
                                           uint64_t ack, size_t max_entries)
      ABSL_LOCKS_EXCLUDED(topo_mu_);
  SegmentJournal& journal() { return journal_; }
  std::vector<ManifestMark> ManifestMarks(const std::vector<std::string>& keys);
  // The segment of `ref` when its owner keeps a manifest of it (mounted with a restore, owned,
  // not being unmounted); nullptr otherwise.
  const SegmentState* JournaledSegment(const ReplicaRef& ref) const
      ABSL_SHARED_LOCKS_REQUIRED(topo_mu_);
  // Tells the owners of `refs` that object `key` is written there (kAdd, committed or not) or
  // no longer is (kDrop; key, size, checksum and pins unused).
  void JournalRefs(const std::vector<ReplicaRef>& refs, JournalEntry::Op op, bool committed,
                   absl::string_view key, uint64_t size, uint64_t checksum, uint8_t flags)
      ABSL_SHARED_LOCKS_REQUIRED(topo_mu_);
  void JournalDrops(const std::vector<ReplicaRef>& refs) ABSL_SHARED_LOCKS_REQUIRED(topo_mu_) {
    JournalRefs(refs, JournalEntry::Op::kDrop, false, {}, 0, 0, 0);
  }
  absl::Status RestoreOne(SegmentState& seg, uint32_t slot, const RestoredObject& object,
                          int64_t now) ABSL_SHARED_LOCKS_REQUIRED(topo_mu_);
  // Tells the owners of `refs` that the complete object at `index` lives there (kAdd,
  // committed) or no longer does (kDrop).
  void JournalReplicas(Shard& s, uint32_t index, const std::vector<ReplicaRef>& refs,
                       JournalEntry::Op op) ABSL_EXCLUSIVE_LOCKS_REQUIRED(s.mu)
      ABSL_SHARED_LOCKS_REQUIRED(topo_mu_);

  // admin_queries.cc
  absl::StatusOr<ObjectLocation> QueryReplicas(const std::string& key);
  // drain_jobs.cc (see MasterService::CreateDrainJob and the rest)
  absl::StatusOr<std::string> CreateDrainJob(const DrainJobRequest& request)
      ABSL_LOCKS_EXCLUDED(topo_mu_, drain_mu_);
  absl::StatusOr<DrainJobInfo> QueryDrainJob(const std::string& job_id)
      ABSL_LOCKS_EXCLUDED(topo_mu_, drain_mu_);
  absl::Status CancelDrainJob(const std::string& job_id) ABSL_LOCKS_EXCLUDED(topo_mu_, drain_mu_);
  absl::StatusOr<SegmentStatus> QuerySegmentStatus(const std::string& segment_name)
      ABSL_LOCKS_EXCLUDED(topo_mu_);
  absl::StatusOr<std::vector<DrainUnit>> FetchDrainWork(const ClientId& client, uint32_t max_units)
      ABSL_LOCKS_EXCLUDED(topo_mu_, drain_mu_);
  void ReportDrainWork(const std::string& job_id, const std::string& key, bool moved)
      ABSL_LOCKS_EXCLUDED(topo_mu_, drain_mu_);
  // Ends jobs whose segments are empty (SUCCEEDED) or gone, and re-offers moves not reported in
  // time (Tick).
  void AdvanceDrainJobs(int64_t now) ABSL_SHARED_LOCKS_REQUIRED(topo_mu_)
      ABSL_LOCKS_EXCLUDED(drain_mu_);
  std::vector<std::string> ListKeys(size_t limit, bool* truncated, absl::string_view tenant);

 private:
  // --- helpers in master_service.cc ---
  absl::Status ValidateKey(absl::string_view key) const;
  Shard& ShardFor(absl::string_view key) const;
  int64_t NowNs() const;
  // Serial of a known client (refreshing its liveness), registering it when new.
  absl::StatusOr<uint64_t> TouchClient(const ClientId& client) ABSL_LOCKS_EXCLUDED(topo_mu_);
  uint64_t SerialOf(const ClientId& client) ABSL_SHARED_LOCKS_REQUIRED(topo_mu_);
  // Clears the way for a new put of `key`: fails with kObjectAlreadyExists, or discards a stale
  // unfinished put. Returns the index of a complete object an upsert will replace, or kNone.
  absl::StatusOr<uint32_t> PrepareKey(Shard& s, absl::string_view key, bool upsert, int64_t now)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(s.mu) ABSL_SHARED_LOCKS_REQUIRED(topo_mu_);
  // The soft pin a put asks for: its lifetime in ns (0: none). Errors: kInvalidParams (a TTL
  // without a soft pin, or above max_kv_soft_pin_ttl).
  absl::StatusOr<int64_t> SoftPinTtlNs(const ReplicateConfig& config) const;
  absl::StatusOr<std::vector<Replica>> RecordPut(Shard& s, absl::string_view key, uint32_t existing,
                                                 uint64_t serial, uint64_t size,
                                                 const ReplicateConfig& config,
                                                 int64_t soft_pin_ttl_ns,
                                                 std::vector<ReplicaRef> refs, int64_t now,
                                                 uint64_t checksum)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(s.mu) ABSL_SHARED_LOCKS_REQUIRED(topo_mu_);
  std::vector<Replica> ToReplicas(const std::vector<ReplicaRef>& refs, uint64_t size) const
      ABSL_SHARED_LOCKS_REQUIRED(topo_mu_);
  // `put.announced`: the checksum the PutStart announced to the segments' owners; when it is the
  // one recorded now, they already know all they need and no commit is journaled.
  void CompletePut(Shard& s, uint32_t index, uint64_t checksum, PutInProgress put, int64_t now)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(s.mu) ABSL_SHARED_LOCKS_REQUIRED(topo_mu_);
  template <typename Match>
  uint64_t RemoveMatching(bool force, Match&& match) ABSL_LOCKS_EXCLUDED(topo_mu_);

 public:
  // --- object plumbing shared by the three files (shard lock held) ---
  std::vector<ReplicaRef> ReplicasOf(Shard& s, uint32_t index) ABSL_EXCLUSIVE_LOCKS_REQUIRED(s.mu);
  void SetReplicas(Shard& s, uint32_t index, const std::vector<ReplicaRef>& refs)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(s.mu);
  // Takes the entry's replicas out of the segment lists and Shard::extra (replicas becomes 0).
  void ForgetReplicas(Shard& s, uint32_t index) ABSL_EXCLUSIVE_LOCKS_REQUIRED(s.mu);
  // Removes the object (and any pending upsert), disposing of its space by the rules above.
  void DropObject(Shard& s, uint32_t index, int64_t now, Unfinished mode)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(s.mu) ABSL_SHARED_LOCKS_REQUIRED(topo_mu_);
  void CancelPending(Shard& s, uint32_t index, int64_t now, Unfinished mode)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(s.mu) ABSL_SHARED_LOCKS_REQUIRED(topo_mu_);

  // --- space (segments.cc) ---
  uint64_t AlignedSize(uint64_t size) const;
  // The segment memory a complete entry holds: its aligned size on each replica.
  uint64_t MemoryOf(const ObjectEntry& entry) const {
    return AlignedSize(entry.size) * entry.replicas;
  }
  // Whether a segment open to new objects could hold `length` bytes once emptied.
  bool AnySegmentCouldHold(uint64_t length, int64_t now) const ABSL_SHARED_LOCKS_REQUIRED(topo_mu_);
  // Up to `want` replicas of `length` bytes on distinct live segments: the config's preferred
  // segment, then its preferred_segments in order, then the others by most free space.
  // `tenant`: the TenantQuotas index charged for each range (its charge reserved by the
  // caller); 0 without multi-tenancy.
  std::vector<ReplicaRef> AllocateReplicas(uint64_t length, uint32_t want,
                                           const ReplicateConfig& config, int64_t now,
                                           uint32_t tenant) ABSL_SHARED_LOCKS_REQUIRED(topo_mu_);
  void FreeRange(uint32_t segment, uint64_t offset, uint64_t length)
      ABSL_SHARED_LOCKS_REQUIRED(topo_mu_);
  // `length` bytes on segment `slot` (open to new objects), or nullopt when it has no room.
  std::optional<ReplicaRef> AllocateOn(uint32_t slot, uint64_t length, int64_t now, uint32_t tenant)
      ABSL_SHARED_LOCKS_REQUIRED(topo_mu_);
  // Records that [offset, +length) of `seg` is charged to `tenant` (0: nobody).
  void OwnRange(SegmentState& seg, uint64_t offset, uint64_t length, uint32_t tenant)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(seg.mu);
  // --- tenants (tenants.cc) ---
  // The TenantQuotas index of the tenant of `key`; 0 without multi-tenancy.
  uint32_t TenantOf(absl::string_view key);
  // Reserves `bytes` more for `tenant` (see TenantQuotas::TryCharge); OK when `tenant` is 0.
  absl::Status ChargeTenant(uint32_t tenant, uint64_t bytes, uint64_t* deficit);
  // Evicts `tenant`'s own objects (as eviction does: unleased, unpinned first) until about
  // `bytes` of its charge are freed. Returns objects evicted.
  uint64_t EvictTenant(uint32_t tenant, uint64_t bytes, int64_t now)
      ABSL_SHARED_LOCKS_REQUIRED(topo_mu_) ABSL_LOCKS_EXCLUDED(eviction_mu_);
  // Whether some object (in memory, in progress or only on a disk tier) is `tenant`'s.
  bool TenantHasObjects(absl::string_view tenant);
  TenantQuotas* quotas() const { return quotas_.get(); }
  uint64_t capacity_bytes() const { return capacity_bytes_.load(); }
  // Frees now if free_at_ns <= now, else queues the range until then.
  void Retire(const ReplicaRef& ref, uint64_t length, int64_t free_at_ns, int64_t now)
      ABSL_SHARED_LOCKS_REQUIRED(topo_mu_);
  void FreeRetired(int64_t now) ABSL_SHARED_LOCKS_REQUIRED(topo_mu_);
  // Unmounting, in three steps, all under unmount_mu_ (one unmount at a time; a mount waits):
  // BeginUnmount marks `slots` dying (no placement, frees or journal there from now on), forgets
  // their names, capacity and used bytes, and drops the unfinished puts of `writers`; the sweep
  // visits the entries holding a replica on them (Shard::members, nothing else) and drops those
  // replicas, and the objects left with none; FinishUnmount removes the slots. Until the sweep
  // reaches an object, reads may still be pointed at its replica on the dying segment, as before
  // the unmount was asked for.
  void BeginUnmount(const std::vector<uint32_t>& slots,
                    const absl::flat_hash_set<uint64_t>& writers, int64_t now)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(topo_mu_, unmount_mu_);
  // Sweeps up to kUnmountChunk entries of shard `s` (`first`: also cancels its upserts writing to
  // a dying slot); true when more may be left there.
  bool SweepChunk(Shard& s, const std::vector<uint32_t>& slots, int64_t now, bool first)
      ABSL_SHARED_LOCKS_REQUIRED(topo_mu_, unmount_mu_) ABSL_LOCKS_EXCLUDED(s.mu);
  // The whole sweep while the caller holds topo_mu_ (a mount replacing a segment).
  void SweepUnmountLocked(const std::vector<uint32_t>& slots, int64_t now)
      ABSL_SHARED_LOCKS_REQUIRED(topo_mu_, unmount_mu_);
  // The whole sweep, taking topo_mu_ (shared) one chunk at a time so that puts and reads go on
  // beside it, then FinishUnmount.
  void SweepAndFinishUnmount(const std::vector<uint32_t>& slots, int64_t now)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(unmount_mu_) ABSL_LOCKS_EXCLUDED(topo_mu_);
  void FinishUnmount(const std::vector<uint32_t>& slots)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(topo_mu_, unmount_mu_);
  void DropSegmentReplicas(Shard& s, uint32_t index, int64_t now)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(s.mu) ABSL_SHARED_LOCKS_REQUIRED(topo_mu_);
  bool OwnerAlive(const SegmentState& seg, int64_t now) const;

  // --- eviction and reclaim (eviction.cc) ---
  // One eviction pass freeing about eviction_ratio of the objects and at least `bytes_target`
  // bytes when candidates allow; skipped during the back-off after a pass that found nothing.
  // Returns objects evicted.
  // With `condemn`, victims are condemned (Condemn) instead of freed.
  uint64_t RunEviction(uint64_t bytes_target, int64_t now, bool condemn)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(eviction_mu_) ABSL_SHARED_LOCKS_REQUIRED(topo_mu_);
  // Lazy eviction: marks the complete entry kEntryCondemned and counts its memory in
  // condemned_bytes_; Reprieve undoes it (a read, a replacing put, or the entry going).
  void Condemn(Shard& s, uint32_t index) ABSL_EXCLUSIVE_LOCKS_REQUIRED(s.mu);
  void Reprieve(Shard& s, uint32_t index) ABSL_EXCLUSIVE_LOCKS_REQUIRED(s.mu);
  // Frees condemned objects, the least recently used of all shards first, until `bytes_target`
  // bytes are freed or none is left; entries that can no longer be evicted are reprieved.
  // Returns the bytes freed. Takes one shard lock at a time (callers hold none).
  uint64_t ReclaimCondemned(uint64_t bytes_target, int64_t now)
      ABSL_SHARED_LOCKS_REQUIRED(topo_mu_);
  struct EvictionProgress;
  void EvictClass(bool soft_pinned, int64_t now, EvictionProgress& progress)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(eviction_mu_) ABSL_SHARED_LOCKS_REQUIRED(topo_mu_);
  // Unpinned objects (a few rounds), then soft-pinned ones when allowed, until `progress` is
  // done; counts what it evicted.
  void EvictRounds(int64_t now, EvictionProgress& progress)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(eviction_mu_) ABSL_SHARED_LOCKS_REQUIRED(topo_mu_);
  // Eviction after an allocation failure; skipped when another pass ran while waiting.
  void EvictForSpace(uint64_t bytes_target, int64_t now) ABSL_SHARED_LOCKS_REQUIRED(topo_mu_);
  void EvictAboveWatermark(int64_t now) ABSL_SHARED_LOCKS_REQUIRED(topo_mu_);
  void ReleaseZombiePuts(int64_t now) ABSL_SHARED_LOCKS_REQUIRED(topo_mu_);

  // --- read leases (read_leases.cc) ---
  // Grants a read lease on the complete object at `index`: extends its lease deadline, counts a
  // reader on its hold and returns the lease id (0 when no hold slot is left).
  uint64_t GrantLease(Shard& s, uint32_t index, int64_t now) ABSL_EXCLUSIVE_LOCKS_REQUIRED(s.mu);
  // Disposes of `refs` (`length` bytes each), the replicas of the object version at `index`
  // that is being dropped or replaced: freed now unless its readers hold them, then kept with
  // the detached hold. Leaves the entry without hold and lease.
  void ReleaseReplicas(Shard& s, uint32_t index, const std::vector<ReplicaRef>& refs,
                       uint64_t length, int64_t now) ABSL_EXCLUSIVE_LOCKS_REQUIRED(s.mu)
      ABSL_SHARED_LOCKS_REQUIRED(topo_mu_);
  // Ends the leases of `ids` (unknown, stale or repeated ids are ignored); returns how many
  // ended a reader.
  uint64_t ReleaseLeases(const std::vector<uint64_t>& ids) ABSL_LOCKS_EXCLUDED(topo_mu_);
  // Frees detached holds whose deadline passed.
  void ExpireHolds(int64_t now) ABSL_SHARED_LOCKS_REQUIRED(topo_mu_);
  // Ends hold `slot` (its readers are gone or its lease is over): detaches it from its entry,
  // frees its ranges and makes the slot reusable under a new generation.
  void EndHold(Shard& s, uint32_t slot) ABSL_EXCLUSIVE_LOCKS_REQUIRED(s.mu)
      ABSL_SHARED_LOCKS_REQUIRED(topo_mu_);

  // --- drain jobs (drain_jobs.cc) ---
  // The job `job_id`, brought up to date (AdvanceDrainJob); kJobNotFound when unknown.
  absl::StatusOr<DrainJob*> CurrentDrainJob(const std::string& job_id)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(drain_mu_) ABSL_SHARED_LOCKS_REQUIRED(topo_mu_);
  // Brings a running job up to date: fails it when a source is gone, re-offers moves past their
  // deadline, ends it (SUCCEEDED) when its sources hold no object.
  void AdvanceDrainJob(DrainJob& job, int64_t now) ABSL_EXCLUSIVE_LOCKS_REQUIRED(drain_mu_)
      ABSL_SHARED_LOCKS_REQUIRED(topo_mu_);
  // Ends a job: the status and message, and its sources open again (unless `drained`).
  void EndDrainJob(DrainJob& job, DrainJobStatus status, std::string message)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(drain_mu_) ABSL_SHARED_LOCKS_REQUIRED(topo_mu_);
  // Whether some shard still holds an entry with a replica on segment `slot`.
  bool SegmentHoldsObjects(uint32_t slot) const ABSL_SHARED_LOCKS_REQUIRED(topo_mu_);
  // Where the object at `index` (`length` bytes aligned) should move from `source`: an open
  // segment of the job's targets (any when none) that already holds a replica, else the one with
  // the most free space that can take it; nullopt when none can.
  std::optional<uint32_t> DrainTarget(const DrainJob& job, const std::vector<ReplicaRef>& replicas,
                                      uint32_t source, uint64_t length, int64_t now) const
      ABSL_SHARED_LOCKS_REQUIRED(topo_mu_);
  // Open to new objects: mounted, not being unmounted, restored or drained, its owner alive.
  bool OpenForNewObjects(const SegmentState& seg, int64_t now) const;

  // --- disk tier (disk_tier.cc) ---
  absl::StatusOr<DiskSyncReply> SyncDiskTier(const ClientId& client, const DiskSyncRequest& request)
      ABSL_LOCKS_EXCLUDED(topo_mu_);
  // Queues a spill of the object at `index` to a store with a disk tier holding one of its
  // replicas and marks it kEntrySpilling; false when none can take it (then evict plainly).
  bool TrySpill(Shard& s, uint32_t index, int64_t now) ABSL_EXCLUSIVE_LOCKS_REQUIRED(s.mu)
      ABSL_SHARED_LOCKS_REQUIRED(topo_mu_);
  // Clears kEntrySpilling of a live entry (its spill is over, whatever the outcome).
  void EndSpill(Shard& s, uint32_t index) ABSL_EXCLUSIVE_LOCKS_REQUIRED(s.mu);
  // Evicts objects whose spill passed its deadline.
  void ExpireSpills(int64_t now) ABSL_SHARED_LOCKS_REQUIRED(topo_mu_);
  // Forgets the disk objects and queues of these stores (expired clients).
  void DropDiskTiers(const absl::flat_hash_set<uint64_t>& serials)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(topo_mu_);
  // Removes a disk-only object and tells its store to delete the file.
  void DropDiskObject(Shard& s, const std::string& key) ABSL_EXCLUSIVE_LOCKS_REQUIRED(s.mu);
  void QueueDrop(uint64_t serial, std::string key) ABSL_LOCKS_EXCLUDED(spill_mu_);
  // The location of a disk-only object.
  ObjectLocation DiskLocation(const DiskEntry& entry) const ABSL_SHARED_LOCKS_REQUIRED(topo_mu_);
  // Counts a read of the disk-only object `key` and, with promotion_on_hit, queues its promotion
  // for its store once it was read promotion_admission_threshold times.
  void CountDiskHit(const std::string& key, DiskEntry& entry) ABSL_LOCKS_EXCLUDED(spill_mu_);
  // Whether the unfinished put at `index` is a promotion (PutInProgress::promotion).
  bool IsPromotion(const Shard& s, uint32_t index) const ABSL_EXCLUSIVE_LOCKS_REQUIRED(s.mu);
  // PutStart of a promotion: the disk-only object `key` must be `serial`'s, of `size` bytes,
  // and not being promoted already.
  absl::Status CheckPromotion(const Shard& s, absl::string_view key, uint64_t serial,
                              uint64_t size) const ABSL_EXCLUSIVE_LOCKS_REQUIRED(s.mu);
  // PutEnd of a promotion at `index`: completes it when the disk copy is still `serial`'s
  // (which it then replaces), else drops the put (kObjectNotFound).
  absl::Status EndPromotion(Shard& s, uint32_t index, uint64_t serial, uint64_t checksum,
                            int64_t now) ABSL_EXCLUSIVE_LOCKS_REQUIRED(s.mu)
      ABSL_SHARED_LOCKS_REQUIRED(topo_mu_);

  const MasterOptions options_;
  Clock& clock_;
  const uint64_t alignment_;
  const uint32_t max_key_bytes_;
  const int64_t lease_ttl_ns_;
  const int64_t soft_pin_ttl_ns_;
  const int64_t client_ttl_ns_;
  const int64_t discard_timeout_ns_;
  const int64_t release_timeout_ns_;

  // Held by an unmount from its start to its end and by a mount (see BeginUnmount).
  yuebing::Mutex unmount_mu_ ABSL_ACQUIRED_BEFORE(topo_mu_);
  mutable yuebing::Mutex topo_mu_;
  std::vector<std::unique_ptr<SegmentState>> segments_ ABSL_GUARDED_BY(topo_mu_);
  absl::flat_hash_map<std::string, uint32_t> segment_by_name_ ABSL_GUARDED_BY(topo_mu_);
  absl::node_hash_map<ClientId, ClientInfo> clients_ ABSL_GUARDED_BY(topo_mu_);
  uint64_t next_epoch_ ABSL_GUARDED_BY(topo_mu_);
  uint64_t next_client_serial_ ABSL_GUARDED_BY(topo_mu_) = 1;

  std::vector<std::unique_ptr<Shard>> shards_;  // fixed after construction

  yuebing::Mutex eviction_mu_ ABSL_ACQUIRED_AFTER(topo_mu_);
  bool had_futile_eviction_ ABSL_GUARDED_BY(eviction_mu_) = false;
  int64_t last_futile_eviction_ns_ ABSL_GUARDED_BY(eviction_mu_) = 0;
  uint64_t sample_seed_ ABSL_GUARDED_BY(eviction_mu_) = 0x9e3779b97f4a7c15ull;

  yuebing::Mutex retired_mu_;
  std::vector<RetiredRange> retired_ ABSL_GUARDED_BY(retired_mu_);    // min-heap on free_at_ns
  std::vector<HoldExpiry> hold_expiry_ ABSL_GUARDED_BY(retired_mu_);  // min-heap on deadline_ns
  std::atomic<uint64_t> next_hold_generation_{0};  // seeded at random: ids of a predecessor miss

  // Disk tiers seen (interned by tier id and endpoint, never removed).
  struct DiskTierInfo {
    std::string endpoint;
    std::string tier_id;
  };
  std::vector<DiskTierInfo> endpoints_ ABSL_GUARDED_BY(topo_mu_);
  absl::flat_hash_map<std::string, uint32_t> endpoint_ids_ ABSL_GUARDED_BY(topo_mu_);
  const int64_t spill_timeout_ns_;
  yuebing::Mutex spill_mu_ ABSL_ACQUIRED_AFTER(retired_mu_);
  absl::flat_hash_map<uint64_t, SpillQueue> spill_queues_ ABSL_GUARDED_BY(spill_mu_);
  std::atomic<uint64_t> disk_objects_{0};
  // Memory of objects being spilled: counted as freed by the watermark check.
  std::atomic<uint64_t> spilling_bytes_{0};
  // Memory of condemned objects (Shard::condemned): counted as freed by the watermark check.
  std::atomic<uint64_t> condemned_bytes_{0};
  std::atomic<uint64_t> spilled_objects_{0};
  std::atomic<uint64_t> promoted_objects_{0};
  std::atomic<uint64_t> queued_promotions_{0};  // in SpillQueue::promotions, all stores

  SegmentJournal journal_;

  yuebing::Mutex drain_mu_ ABSL_ACQUIRED_AFTER(topo_mu_);
  absl::flat_hash_map<std::string, DrainJob> drain_jobs_ ABSL_GUARDED_BY(drain_mu_);
  std::deque<std::string> ended_drain_jobs_ ABSL_GUARDED_BY(drain_mu_);  // oldest first
  uint64_t running_drain_jobs_ ABSL_GUARDED_BY(drain_mu_) = 0;

  std::atomic<uint64_t> access_seq_{0};
  std::atomic<uint64_t> objects_{0};
  std::atomic<uint64_t> used_bytes_{0};
  std::atomic<uint64_t> capacity_bytes_{0};
  // Multi-tenancy: per-tenant quotas; nullptr without.
  const std::unique_ptr<TenantQuotas> quotas_;
  std::atomic<uint64_t> evicted_objects_{0};
  std::atomic<uint64_t> eviction_passes_{0};
};

}  // namespace yuebing::master
