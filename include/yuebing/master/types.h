// Value types shared by the master, its RPC layer and store clients.
#pragma once

#include <chrono>
#include <cstdint>
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
};

struct ReplicateConfig {
  uint32_t replica_num = 1;
  bool with_soft_pin = false;  // evicted only after unpinned objects
  bool with_hard_pin = false;  // never evicted (removed only by Remove)
  // When non-empty, the first replica goes to this segment if it has space.
  std::string preferred_segment;
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

enum class ClientState { kOk, kNeedRemount };

struct SegmentUsage {
  Segment segment;
  ClientId client_id;
  uint64_t epoch = 0;
  uint64_t used_bytes = 0;
};

struct MasterStats {
  uint64_t objects = 0;  // complete and in progress
  uint64_t used_bytes = 0;
  uint64_t capacity_bytes = 0;
  uint64_t evicted_objects = 0;  // since start
  uint64_t evictions = 0;        // eviction passes run
  uint64_t clients = 0;
  uint64_t disk_objects = 0;     // objects held only by a store's disk tier
  uint64_t spilled_objects = 0;  // objects moved from memory to a disk tier since start
  std::vector<SegmentUsage> segments;
};

}  // namespace yuebing::master
