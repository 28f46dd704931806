// The store client: Put/Get/Exist/Remove of immutable objects, batch and zero-copy forms, against
// a yuebing-master (metadata) and the transfer engine (bytes). Optionally contributes a memory
// segment of `global_segment_size` bytes (shared-memory backed, so same-host clients read it with
// one memcpy).
//
// Guarantees: a Get returns exactly the bytes of a completed Put of that key, or a miss. With
// checksums on (the default) every read is verified against the checksum recorded at PutEnd; a
// mismatch is a miss (the next replica is tried) and is counted in Stats().checksum_failures.
// A read that outlives its lease fails with kLeaseExpired rather than returning bytes that may
// have been reused.
// Objects are immutable: Put of an existing key succeeds without writing (the first value stays);
// Upsert replaces.
//
// Thread safety: all methods are thread-safe. Every call ends within its deadlines (rpc_timeout for
// each master call, transfer_timeout for data movement).
// Errors carry Mooncake codes (yuebing/common/error_code.h): kObjectNotFound on a miss,
// kInvalidParams for bad arguments, kNoAvailableHandle when the cluster is full, kRpcFail when the
// master cannot be reached, kTransferFail when no replica could be moved.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "yuebing/master/types.h"
#include "yuebing/store/replica_task.h"
#include "yuebing/transport/transfer_engine.h"

namespace yuebing::store {

struct ClientConfig {
  // Host (and optional port) of the transfer engine; without a port, one is picked in
  // 12300..14300 as upstream does (src/store/engine_port.h).
  std::string local_hostname = "127.0.0.1";
  std::string metadata_server = "P2PHANDSHAKE";
  uint64_t global_segment_size = 0;          // bytes contributed to the cluster (0: none)
  uint64_t local_buffer_size = 16ull << 20;  // accepted for compatibility; reads need no staging
  std::string protocol = "tcp";
  std::string device_name;
  std::string master_server_address = "127.0.0.1:50051";
  std::chrono::milliseconds rpc_timeout{5000};
  std::chrono::milliseconds transfer_timeout{10000};
  std::chrono::milliseconds ping_interval{1000};
  bool enable_checksum = true;
  bool enable_shm = true;
  // Cluster secret (docs/security.md), read once by Client::Create: this value when non-empty,
  // else the file cluster_secret_file, else $YUEBING_CLUSTER_SECRET_FILE, else
  // $YUEBING_CLUSTER_SECRET; none of them set means no authentication. It authenticates the
  // transfer engine's connections and every master call.
  std::string cluster_secret;
  std::string cluster_secret_file;
  // PEM CA bundle the master's TLS certificate must chain to (else $YUEBING_MASTER_TLS_CA_FILE);
  // when neither is set the master is reached in plaintext.
  std::string master_tls_ca_file;
  // Disk tier (needs global_segment_size > 0): objects the master evicts from this client's
  // segment are spilled into files under ssd_path (at most ssd_capacity bytes) and served from
  // there, to readers through this client's transfer engine (ReadObject). ssd_port is accepted
  // and ignored: there is no separate disk read service any more. See docs/store.md.
  std::string ssd_path;
  uint64_t ssd_capacity = 0;
  uint16_t ssd_port = 0;
  // The tenant whose namespace this client's keys live in (yuebing/common/tenant_key.h): clients
  // of different tenants never see each other's objects; a master with multi-tenancy also holds
  // each tenant to its memory quota (docs/store.md "Tenants"). Must pass CheckTenantId
  // (Client::Create fails with kInvalidParams otherwise).
  std::string tenant_id = "default";
};

struct ClientStats {
  uint64_t puts = 0;
  uint64_t gets = 0;
  uint64_t hits = 0;
  uint64_t misses = 0;
  uint64_t checksum_failures = 0;
  uint64_t lease_expired = 0;
  uint64_t replica_failovers = 0;  // reads that moved on to another replica
  uint64_t disk_reads = 0;         // objects read from a store's disk tier
};

class Client {
 public:
  // Starts the transfer engine, connects to the master and mounts the global segment.
  // Errors: kInvalidParams (bad config), kRpcFail (master unreachable), engine errors.
  static absl::StatusOr<std::unique_ptr<Client>> Create(const ClientConfig& config);
  virtual ~Client() = default;  // unmounts the segment and stops the engine

  // --- single object ---
  virtual absl::Status Put(const std::string& key, absl::string_view value,
                           const master::ReplicateConfig& config = {}) = 0;
  // Put of a value given in parts (concatenated).
  virtual absl::Status PutParts(const std::string& key, absl::Span<const absl::string_view> parts,
                                const master::ReplicateConfig& config = {}) = 0;
  virtual absl::Status Upsert(const std::string& key, absl::string_view value,
                              const master::ReplicateConfig& config = {}) = 0;
  virtual absl::StatusOr<std::string> Get(const std::string& key) = 0;
  // Reads into [buffer, buffer+capacity); returns the object size. kInvalidParams when the
  // buffer is too small (nothing read).
  virtual absl::StatusOr<uint64_t> GetInto(const std::string& key, void* buffer,
                                           uint64_t capacity) = 0;
  virtual absl::StatusOr<bool> IsExist(const std::string& key) = 0;
  virtual absl::StatusOr<uint64_t> GetSize(const std::string& key) = 0;
  virtual absl::Status Remove(const std::string& key, bool force = false) = 0;
  virtual absl::StatusOr<uint64_t> RemoveByRegex(const std::string& pattern,
                                                 bool force = false) = 0;
  virtual absl::StatusOr<uint64_t> RemoveAll(bool force = false) = 0;

  // --- batches: one result per key, in order ---
  struct Buffer {
    void* data = nullptr;
    uint64_t size = 0;
  };
  virtual std::vector<absl::Status> BatchPut(const std::vector<std::string>& keys,
                                             const std::vector<absl::string_view>& values,
                                             const master::ReplicateConfig& config = {},
                                             bool upsert = false) = 0;
  // Writes each object from its list of parts (concatenated in order).
  virtual std::vector<absl::Status> BatchPutParts(
      const std::vector<std::string>& keys,
      const std::vector<std::vector<absl::string_view>>& parts,
      const master::ReplicateConfig& config = {}, bool upsert = false) = 0;
  virtual std::vector<absl::StatusOr<std::string>> BatchGet(
      const std::vector<std::string>& keys) = 0;
  // Reads each object into its list of buffers, filling them in order. Returns bytes read.
  virtual std::vector<absl::StatusOr<uint64_t>> BatchGetIntoParts(
      const std::vector<std::string>& keys, const std::vector<std::vector<Buffer>>& buffers) = 0;
  virtual std::vector<absl::StatusOr<uint64_t>> BatchGetInto(
      const std::vector<std::string>& keys, const std::vector<Buffer>& buffers) = 0;
  // Gives each object's memory once its size is known: called once, on the calling thread, after
  // the lookup, with every key's size (or the lookup's error); returns one buffer per key, which
  // must hold that key's whole object (data == nullptr: that key is not read). The buffers stay
  // the caller's; they must live until the batch returns.
  using Allocate =
      std::function<std::vector<Buffer>(const std::vector<absl::StatusOr<uint64_t>>& sizes)>;
  // Reads each object whole into the memory `allocate` gives (so callers that own the final
  // memory, such as the Python binding's bytes objects, need no copy and no zeroing). Returns
  // bytes read per key: the lookup's error, kInvalidParams for a key given too small a buffer or
  // none.
  virtual std::vector<absl::StatusOr<uint64_t>> BatchGetAllocated(
      const std::vector<std::string>& keys, const Allocate& allocate) = 0;
  // A byte range of an object and where it goes: object bytes [offset, offset+size) to `data`.
  struct Range {
    void* data = nullptr;
    uint64_t offset = 0;
    uint64_t size = 0;
  };
  // Reads byte ranges of each object (Mooncake's get_into_ranges). Per key: the status of each
  // of its ranges (kInvalidParams for a null destination or a range past the object's end: not
  // read; the others are), or the key's own error (kObjectNotFound, kTransferFail,
  // kLeaseExpired, ...). Ranges are read under the key's read lease (its space is not reused
  // meanwhile) and verified by checksum only when they cover the whole object in order: a
  // checksum covers whole objects.
  virtual std::vector<absl::StatusOr<std::vector<absl::Status>>> BatchGetRanges(
      const std::vector<std::string>& keys, const std::vector<std::vector<Range>>& ranges) = 0;

  // --- read sessions (Mooncake's batch_get_session_start / _end) ---
  // Looks each key up once and keeps its replica list and read lease (the object is not evicted
  // or its space reused meanwhile) until EndReadSessions or the lease's end, so that
  // ReadSessionRanges reads without asking the master. Sessions belong to this client and are
  // named by key: starting one of a key that has one replaces it (a fresh lease). Per key: OK or
  // the lookup's error (kObjectNotFound, ...).
  virtual std::vector<absl::Status> StartReadSessions(const std::vector<std::string>& keys) = 0;
  // Reads ranges of keys that have sessions. Per key, all or nothing: the bytes read (the sum of
  // its ranges), or kInvalidParams (no session, a range out of bounds), kLeaseExpired (the
  // session's lease ended: the session is gone), or a transfer error. Checksum-verified as
  // BatchGetRanges is.
  virtual std::vector<absl::StatusOr<uint64_t>> ReadSessionRanges(
      const std::vector<std::string>& keys, const std::vector<std::vector<Range>>& ranges) = 0;
  // Ends the sessions of `keys` (unknown keys are ignored) and releases their leases.
  virtual void EndReadSessions(const std::vector<std::string>& keys) = 0;

  // --- put sessions (Mooncake's batch_put_session_start / _end / _revoke) ---
  // Starts a put of each key with its full size and no bytes yet: space is reserved and the
  // object stays invisible until EndPutSessions. Per key: OK, kInvalidParams (bad key, size 0,
  // or the key already has a put session of this client), or the master's error
  // (kObjectAlreadyExists: the key exists; nothing will be written).
  virtual std::vector<absl::Status> StartPutSessions(const std::vector<std::string>& keys,
                                                     const std::vector<uint64_t>& sizes,
                                                     const master::ReplicateConfig& config) = 0;
  // Writes byte ranges of keys that have put sessions to every replica: Range::data is the
  // source, Range::offset where it goes in the object. Per key, all or nothing: the bytes written
  // (the sum of its ranges), kInvalidParams (no session, one being ended, a range past the
  // object's end or without source), kLeaseExpired (the session is older than its write window,
  // ObjectClient::kPutSessionWriteWindow, 5 min: revoke it), or a transfer error (the ranges may
  // be written again).
  virtual std::vector<absl::StatusOr<uint64_t>> WritePutSessionRanges(
      const std::vector<std::string>& keys, const std::vector<std::vector<Range>>& ranges) = 0;
  // Makes the objects readable, after the writes under way, once the ranges written cover every
  // byte of the object: otherwise kInvalidParams and the session stays open (to be written
  // further or revoked), so an object never shows bytes nobody wrote. The object carries no
  // checksum (its bytes were never whole in this client). Per key: OK, kInvalidParams (no
  // session, not covered), or the master's error (the session stays for a retry or a revoke,
  // unless the master no longer has the put: then it is gone).
  virtual std::vector<absl::Status> EndPutSessions(const std::vector<std::string>& keys) = 0;
  // Abandons the puts after the writes under way; their space is freed. Per key: OK,
  // kInvalidParams (no session), or the master's error (the session stays for a retry).
  virtual std::vector<absl::Status> RevokePutSessions(const std::vector<std::string>& keys) = 0;
  virtual std::vector<absl::StatusOr<bool>> BatchIsExist(const std::vector<std::string>& keys) = 0;
  virtual std::vector<absl::Status> BatchRemove(const std::vector<std::string>& keys,
                                                bool force = false) = 0;
  // Where each object's replicas are (size, checksum, replicas), as a read would find them. The
  // read lease the lookup takes is given back at once (lease_id and lease_ttl are 0). Per key:
  // the location, kObjectNotFound, kInvalidParams (bad key) or the master's error.
  virtual std::vector<absl::StatusOr<master::ObjectLocation>> BatchQueryReplicas(
      const std::vector<std::string>& keys) = 0;
  // Mooncake's copy and move tasks (src/store/replica_tasks.h): new replicas of `key` on
  // `targets`, or its replica on `source` moved to `target`. Checked and reserved at once (the
  // errors of MasterService::ReplicaCopyStart, kTaskPendingLimitExceeded), written in the
  // background; QueryTask reports progress (kTaskNotFound for another client's task).
  virtual absl::StatusOr<TaskId> CreateCopyTask(const std::string& key,
                                                const std::vector<std::string>& targets) = 0;
  virtual absl::StatusOr<TaskId> CreateMoveTask(const std::string& key, const std::string& source,
                                                const std::string& target) = 0;
  virtual absl::StatusOr<TaskInfo> QueryTask(const TaskId& id) = 0;
  // Drops replicas of objects nobody is reading: see MasterService::BatchReplicaClear.
  virtual std::vector<absl::Status> BatchReplicaClear(const std::vector<std::string>& keys,
                                                      const std::string& segment_name) = 0;

  // --- memory ---
  // Registers user memory with the transfer engine (for zero-copy use by peers; optional for
  // put_from/get_into on this client).
  virtual absl::Status RegisterBuffer(void* data, uint64_t size) = 0;
  virtual absl::Status UnregisterBuffer(void* data) = 0;

  // OK when the master answers.
  virtual absl::Status HealthCheck() = 0;
  // This client's transfer engine segment name ("host:port").
  virtual const std::string& SegmentName() const = 0;
  virtual const master::ClientId& Id() const = 0;
  virtual ClientStats Stats() const = 0;
  virtual transport::TransferEngine& Engine() = 0;
};

}  // namespace yuebing::store
