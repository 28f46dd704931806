// Value types shared by the master, its RPC layer and store clients.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace yuebing::master {

// A client process is identified by a random id it picks at start (hex string, <= 64 chars).
using ClientId = std::string;

// A memory range a client contributes: `size` bytes at virtual address `base` inside the transfer
// engine segment `name` ("host:port") of that client.
struct Segment {
  std::string name;
  uint64_t base = 0;
  uint64_t size = 0;
};

// Where one copy of an object lives: bytes [address, address+size) of transfer-engine segment
// `segment_name`, valid while the segment's mount `epoch` is current. A disk replica instead has
// `disk_endpoint` set (the owning store's transfer engine segment name, "host:port";
// segment_name, epoch and address are then empty/0): the bytes are read by key from that store's
// engine (TransferEngine::ReadObject), not from a segment address.
struct Replica {
  std::string segment_name;
  uint64_t epoch = 0;
  uint64_t address = 0;
  uint64_t size = 0;
  std::string disk_endpoint;
};

// --- disk tier (see docs/store.md "Disk tier") ---

// An object file a store holds: reported after a spill, or announced after a (re)start.
struct DiskObject {
  std::string key;
  uint64_t size = 0;
  uint64_t checksum = 0;
};

// "Copy this object from your segment into your file store": bytes [address, address+size) of
// the store's own segment, whose recorded checksum is `checksum` (0: none recorded).
struct SpillTask {
  std::string key;
  uint64_t address = 0;
  uint64_t size = 0;
  uint64_t checksum = 0;
};

struct DiskSyncRequest {
  // The store's transfer engine segment name ("host:port"), where readers ReadObject its files.
  std::string endpoint;
  // Identity of the file directory (kept in it): a restarted store with the same directory
  // takes back the objects its previous incarnation reported.
  std::string tier_id;
  bool full = false;  // `announced` starts a full listing (after a restart or need_full_sync)
  std::vector<DiskObject> spilled;    // spill tasks done
  std::vector<DiskObject> announced;  // files held from before (restart, resync)
  std::vector<std::string> removed;   // files gone (capacity bound, failed verification)
  uint32_t max_tasks = 64;            // spill tasks wanted in the reply
};

struct DiskSyncReply {
  // The master did not know this store's disk tier (it restarted, or the store expired): the
  // reports were ignored and the store should announce every file with full = true.
  bool need_full_sync = false;
  std::vector<SpillTask> spill;
  std::vector<std::string> drop;  // files the master no longer wants (removed, replaced, stale)
  // Disk-only objects read often enough to come back to memory (promotion on hit): the store
  // reads each file and puts the value with ReplicateConfig::promotion.
  std::vector<DiskObject> promote;
};

struct ReplicateConfig {
  uint32_t replica_num = 1;
  bool with_soft_pin = false;  // evicted only after unpinned objects while the pin lasts
  // With with_soft_pin: how long the pin lasts from the put's end, in ms (Mooncake's
  // soft_pin_ttl_ms). Unset: the master's default_kv_soft_pin_ttl; 0: no pin. Set without
  // with_soft_pin, or above the master's max_kv_soft_pin_ttl: the put fails (kInvalidParams).
  std::optional<uint64_t> soft_pin_ttl_ms;
  bool with_hard_pin = false;  // never evicted (removed only by Remove)
  // When non-empty, the first replica goes to this segment if it has space.
  std::string preferred_segment;
  // Then replicas go to these segments, in order, as far as replica_num and their space allow.
  std::vector<std::string> preferred_segments;
  // Set only by a store's disk tier: this put brings back to memory a disk-only object the
  // store holds (promotion on hit). The object stays readable from disk until the PutEnd, which
  // succeeds only while the disk copy is still the store's (a Remove or a new put meanwhile
  // makes it fail). Errors of the PutStart: kObjectNotFound (no such disk-only object of this
  // store), kObjectAlreadyExists (a promotion of it is under way).
  bool promotion = false;
};

// What GetReplicaList returns: the replicas of a complete object and the read lease granted.
struct ObjectLocation {
  uint64_t size = 0;
  uint64_t checksum = 0;  // xxh3-64 of the bytes, as given to PutEnd (0: none recorded)
  std::vector<Replica> replicas;
  std::chrono::milliseconds lease_ttl{0};  // the read must finish within this time from the reply
  // Identifies this read's lease for MasterService::ReleaseLeases; 0: none to release (disk-only
  // objects, or the master kept no reader count for it).
  uint64_t lease_id = 0;
};

// What ReplicaCopyStart returns: where to write the object's bytes. `targets` empty: nothing to
// write (every target holds a replica already; a move's source replica is already dropped).
struct CopyPlan {
  uint64_t size = 0;
  uint64_t checksum = 0;  // as recorded at the object's PutEnd (0: none)
  std::vector<Replica> targets;
};

enum class ClientState { kOk, kNeedRemount };

// One tenant's quota account on a master with multi-tenancy (upstream's snapshot of
// GET /api/v1/tenant_quotas; docs/master.md "Tenants and quotas").
struct TenantQuotaSnapshot {
  std::string tenant_id;
  uint64_t requested_quota_bytes = 0;  // its policy; 0: none
  uint64_t effective_quota_bytes = 0;  // what is enforced: scaled down when memory is short
  uint64_t charged_bytes = 0;          // memory its replicas hold (aligned), in progress included
  bool admission_closed = true;        // its writes are refused (no policy, or being deleted)
  bool over_quota = false;             // charged above effective
  bool has_explicit_policy = false;
  uint64_t quota_rejects = 0;  // writes refused for the quota since start (-1700 in the end)
  uint64_t evicted_bytes = 0;  // bytes of its objects evicted for its quota since start
};

// --- drain jobs: moving every object off segments before they go (docs/master.md "Drain") ---

// Numbered as upstream's JobStatus and SegmentStatus (the admin API reports the numbers too).
enum class DrainJobStatus : int32_t {
  kCreated = 0,
  kPlanning = 1,
  kRunning = 2,
  kSucceeded = 3,
  kFailed = 4,
  kCanceled = 5,
};
enum class SegmentStatus : int32_t {
  kUndefined = 0,
  kOk = 1,        // mounted, takes new objects
  kDraining = 2,  // readable, takes no new objects, its objects are being moved away
  kDrained = 3,   // holds no object and takes none: waiting to be unmounted
  kGracefullyUnmounting = 4,
  kUnmounting = 5,
};
// Upstream's names: "CREATED", ..., "CANCELED"; "UNDEFINED", "OK", "DRAINING", ...
const char* DrainJobStatusName(DrainJobStatus status);
const char* SegmentStatusName(SegmentStatus status);

struct DrainJobRequest {
  std::vector<std::string> segments;         // to empty; mounted and open, no repeats
  std::vector<std::string> target_segments;  // where objects may go; empty: any open segment
  uint32_t max_concurrency = 4;              // moves under way at once, per job (>= 1)
};

struct DrainJobInfo {
  std::string id;  // a UUID, "8-4-4-4-12" hex
  DrainJobStatus status = DrainJobStatus::kCreated;
  int64_t created_at_ms = 0;  // since the Unix epoch
  int64_t last_updated_at_ms = 0;
  std::vector<std::string> segments;
  uint64_t succeeded_units = 0;  // objects moved off (or dropped from) a draining segment
  uint64_t failed_units = 0;     // moves that failed (each is retried up to kMaxDrainAttempts)
  uint64_t blocked_units = 0;    // objects that could not be moved at the last look (busy, no room)
  uint64_t active_units = 0;     // moves handed out and not yet reported
  uint64_t migrated_bytes = 0;
  std::string message;
};

// One move a segment's owner is asked to make (MasterService::FetchDrainWork): object `key`
// from segment `source` to segment `target` (ReplicaCopyStart with move), then report it.
struct DrainUnit {
  std::string job_id;
  std::string key;
  std::string source;
  std::string target;
  uint64_t size = 0;
};

// --- segment manifests: what survives a master restart or failover (docs/master.md) ---

// One change to what a mounted segment holds, in the order the master made it. The master sends
// these to the segment's owner (MasterService::PullJournal), which keeps the segment's manifest;
// after a new master's fresh mount it reports the manifest back (MasterService::RestoreObjects).
struct JournalEntry {
  enum class Op : uint8_t {
    // A replica of object `key` lives at [address, address + size): being written (PutStart,
    // committed = false) or complete (PutEnd, committed = true).
    kAdd,
    // The replica at `address` is no longer an object (removed, evicted, replaced, revoked).
    kDrop,
  };
  Op op = Op::kAdd;
  bool committed = false;  // kAdd only
  uint64_t address = 0;
  uint64_t size = 0;      // kAdd only
  uint64_t checksum = 0;  // kAdd only; 0: none recorded
  uint32_t pins = 0;      // kAdd only: kPinSoft | kPinHard
  std::string key;        // kAdd only
  static constexpr uint32_t kPinSoft = 1;
  static constexpr uint32_t kPinHard = 2;
};

// A reply to PullJournal: the entries after the acknowledged sequence number.
struct JournalBatch {
  uint64_t journal_id = 0;  // identifies this master's journal; changes when the master does
  uint64_t last_seq = 0;    // sequence number of the last entry (acknowledge it next time)
  // The master dropped entries this client had not acknowledged (it fell too far behind): the
  // client's manifest may name objects that are gone; it keeps only what it can check (objects
  // with a checksum, verified before any report).
  bool reset = false;
  std::vector<JournalEntry> entries;
};

// Where one segment owner's journal stood after a call: the newest change queued for it. A call
// whose changes must survive a master crash waits until the owner has acknowledged `seq`.
struct ManifestMark {
  uint64_t owner = 0;  // the owner's serial (internal to one master incarnation)
  uint64_t seq = 0;
};

// One object a segment's owner reports after a fresh mount (its manifest entry, whose bytes it
// checked against the checksum where one was recorded).
struct RestoredObject {
  std::string key;
  uint64_t address = 0;
  uint64_t size = 0;
  uint64_t checksum = 0;
  uint32_t pins = 0;  // JournalEntry::kPinSoft | kPinHard
};

struct MountResult {
  uint64_t epoch = 0;
  // A new mount (the master did not hold this segment): the owner may restore its manifest.
  bool fresh = false;
};

struct SegmentUsage {
  Segment segment;
  ClientId client_id;
  uint64_t epoch = 0;
  uint64_t used_bytes = 0;
};

struct MasterStats {
  uint64_t objects = 0;  // complete and in progress
  uint64_t used_bytes = 0;
  // Of used_bytes: objects chosen by lazy eviction, still readable, freed when a put needs room.
  uint64_t condemned_bytes = 0;
  uint64_t capacity_bytes = 0;
  uint64_t evicted_objects = 0;  // since start
  uint64_t evictions = 0;        // eviction passes run
  uint64_t clients = 0;
  uint64_t disk_objects = 0;      // objects held only by a store's disk tier
  uint64_t spilled_objects = 0;   // objects moved from memory to a disk tier since start
  uint64_t promoted_objects = 0;  // disk-only objects brought back to memory since start
  std::vector<SegmentUsage> segments;
};

}  // namespace yuebing::master
