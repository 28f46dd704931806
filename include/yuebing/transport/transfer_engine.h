// The transfer engine: moves bytes between registered memory of this process and of other
// processes (same host or remote), one-sided: the target's application code is not involved.
//
// Model (as Mooncake's): every engine owns one *segment*, named "host:port", made of the buffers
// it registered. An initiator opens a peer's segment by name, then submits batches of READ/WRITE
// requests (local address, target segment, target address, length) and polls per-request status.
// Target addresses are virtual addresses in the target process, as the target registered them.
//
// Transports are chosen per request: local memcpy (target is this engine), shared memory (target
// on this host and the target buffer is shm-backed), RDMA (protocol "rdma" with a device, both
// sides registered the memory), otherwise TCP. A request that a path cannot serve falls back to
// the next one (shm, then RDMA, then TCP). The target checks every remote access against its
// registered buffers and refuses anything outside them.
//
// Thread safety: every method may be called from any thread concurrently.
// Buffer contract: memory named in a submitted request must stay valid until that request's status
// is final (COMPLETED, FAILED or TIMEOUT); after that the engine no longer touches it.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"

namespace yuebing::transport {

using SegmentHandle = int64_t;
using BatchId = uint64_t;

// Handle of this engine's own segment, valid for local transfers without OpenSegment.
inline constexpr SegmentHandle kLocalSegmentHandle = 0;

enum class OpCode : uint8_t { kRead = 0, kWrite = 1 };

struct TransferRequest {
  OpCode opcode = OpCode::kWrite;
  void* source = nullptr;        // local buffer: the data source of a WRITE, destination of a READ
  SegmentHandle target_id = -1;  // from OpenSegment, or kLocalSegmentHandle
  uint64_t target_offset = 0;    // virtual address in the target process
  uint64_t length = 0;
};

enum class TransferState : uint8_t { kWaiting, kPending, kCompleted, kFailed, kTimeout };
const char* TransferStateName(TransferState state);

struct TransferStatus {
  TransferState state = TransferState::kWaiting;
  uint64_t transferred_bytes = 0;
  std::string reason;  // empty unless FAILED/TIMEOUT
};

// Bytes moved by each path since the engine started (initiator side), for metrics and tests.
struct TransferEngineStats {
  uint64_t local_bytes = 0;
  uint64_t shm_bytes = 0;
  uint64_t tcp_bytes = 0;   // bytes of requests routed to TCP (completed or not)
  uint64_t rdma_bytes = 0;  // bytes of requests routed to RDMA (completed or not)
  // Requests that WaitAndFreeBatch reported TIMEOUT because they were still in flight
  // kFinalWaitMargin after their deadline (a transport fault; each one is also logged).
  uint64_t overdue_requests = 0;
};

// --- Whole objects by key (READ_OBJECT, docs/transfer_engine.md) ---

// Serves objects by key to peers' ReadObject: returns the whole object's bytes. Errors the engine
// tells the reader apart: kNotFound (no such key), kDataLoss (the stored copy failed its
// verification and is not served); any other error reaches the reader as an internal error.
// Called on the TCP server's connection threads, concurrently: must be thread-safe.
using ObjectSource = std::function<absl::StatusOr<std::string>(absl::string_view key)>;

// One piece of a ReadObject destination; the pieces are filled in order.
struct ObjectBuffer {
  void* data = nullptr;
  uint64_t size = 0;
};

// Largest object ReadObject moves (one reply frame).
inline constexpr uint64_t kMaxReadObjectBytes = 1ull << 30;

// How long past a request's deadline the blocking waits below wait for it to become final.
inline constexpr std::chrono::milliseconds kFinalWaitMargin{2000};

struct TransferEngineOptions {
  // "P2PHANDSHAKE", "http://host:port/metadata" or "etcd://host:port[,host:port...]".
  std::string metadata_conn = "P2PHANDSHAKE";
  // "host" or "host:port". Without a port one is picked; the segment name is then "host:<port>".
  std::string local_server_name = "127.0.0.1";
  // Address the TCP listener binds; defaults to the host part of local_server_name.
  std::string bind_address;
  // Transports this engine may use: "tcp" (default), "shm" is implied on the same host unless
  // enable_shm is false. "rdma" uses RDMA toward peers that publish RDMA NICs when this build has
  // the RDMA transport and ibv_get_device_list returns a usable device; otherwise the engine logs
  // one warning and uses TCP. RDMA tuning comes from MC_* environment variables
  // (docs/transfer_engine.md); a malformed one makes Create fail with kInvalidArgument.
  // MC_FORCE_TCP set in the environment (any value, as upstream) makes Create treat "rdma" as
  // "tcp" (shared memory is unaffected).
  std::string protocol = "tcp";
  // RDMA devices to use, comma-separated ("mlx5_0,mlx5_1"); empty: MC_RDMA_DEVICES, else all.
  std::string rdma_devices;
  bool enable_shm = true;
  // Deadline of each request, counted from its submission.
  std::chrono::milliseconds request_timeout{30000};
  // Deadline of connecting to a peer and of one metadata operation.
  std::chrono::milliseconds connect_timeout{3000};
  // TCP tuning.
  uint32_t tcp_connections_per_peer = 2;
  uint64_t tcp_slice_bytes = 1ull << 20;
  uint64_t tcp_max_inflight_bytes_per_peer = 64ull << 20;
  uint32_t tcp_max_server_connections = 1024;
  // Maximum requests queued per peer and per batch (bounded resources).
  uint32_t max_batch_size = 65536;
  // Touch every page of registered memory so first transfers do not pay page faults.
  bool prefault_on_register = true;
  // Cluster secret (see docs/security.md). Non-empty: every TCP connection, in both directions,
  // must pass a mutual HMAC-SHA256 challenge-response before any READ/WRITE/DESCRIBE is served,
  // and peers without it (or with another one) are refused. Empty: no authentication, and peers
  // that use one are refused. Not read from the environment here: callers load it once at start
  // (yuebing::LoadClusterSecret), as the store client does.
  std::string cluster_secret;
  // A new inbound connection must send its first frame / finish authentication within this time.
  std::chrono::milliseconds auth_handshake_timeout{5000};
};

class TransferEngine {
 public:
  virtual ~TransferEngine() = default;

  // Starts the engine: TCP listener, metadata publication. Errors: kInvalidArgument for a bad
  // metadata string or name, kUnavailable when the metadata server cannot be reached,
  // kAlreadyExists when the port is taken.
  static absl::StatusOr<std::unique_ptr<TransferEngine>> Create(
      const TransferEngineOptions& options);

  // This engine's segment name ("host:port") and TCP port.
  virtual const std::string& LocalSegmentName() const = 0;
  virtual uint16_t RpcPort() const = 0;

  // Registers [addr, addr+length) for local and remote access. Errors: kInvalidArgument for null
  // or zero length, kAlreadyExists when it overlaps a registered buffer.
  virtual absl::Status RegisterLocalMemory(void* addr, size_t length,
                                           const std::string& location = "cpu:0") = 0;
  // Unregisters the buffer starting exactly at addr; waits for in-progress remote accesses to it.
  // Errors: kNotFound.
  virtual absl::Status UnregisterLocalMemory(void* addr) = 0;

  // Allocates `length` bytes backed by shared memory (memfd) and registers them, so that peers on
  // this host reach them with one memcpy. The engine owns the memory; free with
  // FreeSharedMemory. Errors: kResourceExhausted, kInvalidArgument.
  virtual absl::StatusOr<void*> AllocateSharedMemory(size_t length) = 0;
  virtual absl::Status FreeSharedMemory(void* addr) = 0;

  // Resolves a peer segment by name (fetching its descriptor). Opening the same name twice
  // returns the same handle. The local name maps to kLocalSegmentHandle. A handle is bound to the
  // peer incarnation it was opened on: if the peer restarts, submissions to the handle fail with
  // kFailedPrecondition (nothing reaches the new process through old addresses) until the caller
  // closes and reopens the segment.
  // Errors: kNotFound (no such segment), kUnavailable (metadata or peer unreachable).
  virtual absl::StatusOr<SegmentHandle> OpenSegment(const std::string& segment_name) = 0;
  virtual absl::Status CloseSegment(SegmentHandle handle) = 0;

  // A registered buffer as a segment publishes it.
  struct SegmentBuffer {
    uint64_t addr = 0;
    uint64_t length = 0;
  };
  // The buffers `segment_name` publishes now, in address order, read from a fresh descriptor
  // (this engine's own registry for the local name). Opens nothing and caches nothing.
  // Errors: as OpenSegment.
  virtual absl::StatusOr<std::vector<SegmentBuffer>> ListSegmentBuffers(
      const std::string& segment_name) = 0;

  // Batches hold up to `capacity` requests in total over all their submissions.
  virtual absl::StatusOr<BatchId> AllocateBatch(size_t capacity) = 0;
  // Errors: kFailedPrecondition while requests of the batch are still in flight.
  virtual absl::Status FreeBatch(BatchId batch) = 0;

  // Submits requests; they run asynchronously (local and shm copies complete before this
  // returns). Errors (nothing submitted): kInvalidArgument (bad handle, null, zero length),
  // kResourceExhausted (batch capacity).
  virtual absl::Status SubmitTransfer(BatchId batch,
                                      absl::Span<const TransferRequest> requests) = 0;

  // Status of the `task_id`-th request submitted to `batch` (0-based, over all submissions).
  virtual absl::StatusOr<TransferStatus> GetTransferStatus(BatchId batch, size_t task_id) = 0;

  // Blocks until the `task_id`-th request of `batch` is final or `timeout` passes, and returns its
  // status then (still WAITING or PENDING when the timeout passed first). Lets a caller work on
  // the requests that ended while later ones are still moving. Errors: as GetTransferStatus.
  virtual absl::StatusOr<TransferStatus> WaitTransfer(BatchId batch, size_t task_id,
                                                      std::chrono::milliseconds timeout) = 0;

  // Blocks until every request of the batch is final or `timeout` passes; returns the statuses.
  virtual absl::StatusOr<std::vector<TransferStatus>> WaitBatch(
      BatchId batch, std::chrono::milliseconds timeout) = 0;

  // Blocks until every request of the batch is final, frees the batch and returns the statuses.
  // Bounded: every request is final by its deadline (request_timeout after its submission), so
  // this waits at most until the batch's latest deadline plus kFinalWaitMargin. Past that, a
  // transport has broken its promise; the requests still in flight are then reported TIMEOUT
  // with a reason saying so (and counted in Stats().overdue_requests, and logged), and the batch
  // is retired instead of freed: the engine keeps it until its last request ends, so no transport
  // ever finishes a request into a freed batch. Whether such an abandoned request still touches
  // its memory is then unknown (that is the fault being reported); every request that is
  // reported final by its transport no longer does. Either way the batch id is gone.
  // Errors: kInvalidArgument (no such batch, or it was freed concurrently).
  virtual absl::StatusOr<std::vector<TransferStatus>> WaitAndFreeBatch(BatchId batch) = 0;

  virtual TransferEngineStats Stats() const = 0;

  // Makes `source` answer peers' ReadObject calls for this engine's segment (null: none; peers
  // then get kUnimplemented). Replacing or clearing it returns only once no call of the previous
  // source is running, so the owner of the previous source may go away afterwards.
  virtual void SetObjectSource(ObjectSource source) = 0;

  // Reads the whole object `key` from the object source of the engine named `segment_name`
  // ("host:port"), straight from the socket into `dest` (no intermediate copy), over a connection
  // authenticated like transfers (cluster secret) and greeted with HELLO. Needs no OpenSegment.
  // Returns the object's size; the first that many bytes of `dest` hold it. Bounded: returns by
  // `deadline` or request_timeout from now, whichever is earlier (connecting also by
  // connect_timeout). Nothing is verified beyond what the source does: callers check checksums.
  // Errors: kInvalidArgument (empty or over-long key, bad name, null piece), kNotFound (no such
  // key there), kOutOfRange (the object is larger than `dest` or kMaxReadObjectBytes; nothing was
  // written), kUnimplemented (the peer registered no object source), kDataLoss (the peer's copy
  // failed its verification), kPermissionDenied (cluster secret missing or different),
  // kFailedPrecondition (the engine at that address has another name), kDeadlineExceeded,
  // kUnavailable (unreachable, connection lost), kInternal (protocol violation, or an error of
  // the source).
  virtual absl::StatusOr<uint64_t> ReadObject(const std::string& segment_name,
                                              absl::string_view key,
                                              absl::Span<const ObjectBuffer> dest,
                                              std::chrono::steady_clock::time_point deadline) = 0;
  // ReadObject into one buffer.
  absl::StatusOr<uint64_t> ReadObject(const std::string& segment_name, absl::string_view key,
                                      void* dest, uint64_t capacity,
                                      std::chrono::steady_clock::time_point deadline) {
    ObjectBuffer piece{dest, capacity};
    return ReadObject(segment_name, key, absl::MakeConstSpan(&piece, 1), deadline);
  }

  // Checks that the engine serving `segment_name` ("host:port") answers now: a new connection,
  // the cluster-secret handshake and HELLO, by `deadline` (never a cached handle's word). The
  // connection is kept for later ReadObject calls. Errors: kInvalidArgument (bad name),
  // kUnavailable (refused, reset, a target of another name, bad secret), kDeadlineExceeded.
  virtual absl::Status Probe(const std::string& segment_name,
                             std::chrono::steady_clock::time_point deadline) = 0;

  // Convenience: allocate a batch, submit, WaitAndFreeBatch (so bounded as it is); returns the
  // final statuses. Errors: only those of AllocateBatch/SubmitTransfer.
  absl::StatusOr<std::vector<TransferStatus>> TransferSyncStatuses(
      absl::Span<const TransferRequest> requests);
  // Like TransferSyncStatuses; OK only if every request COMPLETED, otherwise the first failure
  // (kDeadlineExceeded for TIMEOUT, kUnavailable for FAILED) with its reason.
  absl::Status TransferSync(absl::Span<const TransferRequest> requests);
};

}  // namespace yuebing::transport
