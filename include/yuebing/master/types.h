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
// `segment_name`, valid while the segment's mount `epoch` is current.
struct Replica {
  std::string segment_name;
  uint64_t epoch = 0;
  uint64_t address = 0;
  uint64_t size = 0;
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
  std::vector<SegmentUsage> segments;
};

}  // namespace yuebing::master
