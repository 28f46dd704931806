// The object client: Put/Get/Exist/Remove and their batch forms against the master (metadata,
// through MasterApi) and the transfer engine (bytes). It chooses replicas (own segment, then this
// host, then others), verifies checksums, fails over between replicas, enforces read leases and
// reads disk-only objects from the owning store's disk read service. It owns neither the engine
// nor the master connection; Client (src/store/client.cc) composes it with a SegmentHost.
//
// Guarantees and errors are those of store::Client (include/yuebing/store/client.h).
// Thread safety: all methods are thread-safe. `engine` and `master` must outlive the object.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "store/checksum_worker.h"
#include "store/hashed_transfers.h"
#include "store/master_api.h"
#include "yuebing/common/mutex.h"
#include "yuebing/master/types.h"
#include "yuebing/store/client.h"
#include "yuebing/transport/transfer_engine.h"

namespace yuebing::store {

class ObjectClient {
 public:
  using Buffer = Client::Buffer;

  ObjectClient(const ClientConfig& config, master::ClientId id, transport::TransferEngine* engine,
               MasterApi* master);
  ObjectClient(const ObjectClient&) = delete;
  ObjectClient& operator=(const ObjectClient&) = delete;

  std::vector<absl::Status> BatchPut(const std::vector<std::string>& keys,
                                     const std::vector<absl::string_view>& values,
                                     const master::ReplicateConfig& config, bool upsert);
  std::vector<absl::Status> BatchPutParts(const std::vector<std::string>& keys,
                                          const std::vector<std::vector<absl::string_view>>& parts,
                                          const master::ReplicateConfig& config, bool upsert);
  std::vector<absl::StatusOr<std::string>> BatchGet(const std::vector<std::string>& keys);
  std::vector<absl::StatusOr<uint64_t>> BatchGetIntoParts(
      const std::vector<std::string>& keys, const std::vector<std::vector<Buffer>>& buffers);
  std::vector<absl::StatusOr<uint64_t>> BatchGetInto(const std::vector<std::string>& keys,
                                                     const std::vector<Buffer>& buffers);
  std::vector<absl::StatusOr<uint64_t>> BatchGetAllocated(const std::vector<std::string>& keys,
                                                          const Client::Allocate& allocate);
  std::vector<absl::StatusOr<std::vector<absl::Status>>> BatchGetRanges(
      const std::vector<std::string>& keys, const std::vector<std::vector<Client::Range>>& ranges);
  std::vector<absl::Status> StartReadSessions(const std::vector<std::string>& keys);
  std::vector<absl::StatusOr<uint64_t>> ReadSessionRanges(
      const std::vector<std::string>& keys, const std::vector<std::vector<Client::Range>>& ranges);
  void EndReadSessions(const std::vector<std::string>& keys);
  // Put sessions (put_sessions.cc).
  std::vector<absl::Status> StartPutSessions(const std::vector<std::string>& keys,
                                             const std::vector<uint64_t>& sizes,
                                             const master::ReplicateConfig& config);
  std::vector<absl::StatusOr<uint64_t>> WritePutSessionRanges(
      const std::vector<std::string>& keys, const std::vector<std::vector<Client::Range>>& ranges);
  std::vector<absl::Status> EndPutSessions(const std::vector<std::string>& keys);
  std::vector<absl::Status> RevokePutSessions(const std::vector<std::string>& keys);
  std::vector<absl::StatusOr<bool>> BatchIsExist(const std::vector<std::string>& keys);
  std::vector<absl::Status> BatchRemove(const std::vector<std::string>& keys, bool force);
  std::vector<absl::StatusOr<master::ObjectLocation>> BatchQueryReplicas(
      const std::vector<std::string>& keys);
  std::vector<absl::Status> BatchReplicaClear(const std::vector<std::string>& keys,
                                              const std::string& segment_name);
  // Replica copy and move (replica_copy.cc): StartCopy reserves the new replicas (the master's
  // checks and errors, see MasterService::ReplicaCopyStart); FinishCopy writes the object's bytes
  // to them and ends the copy, or revokes it when the bytes cannot be read (kObjectNotFound, also
  // when they changed) or written (kTransferFail).
  absl::StatusOr<master::CopyPlan> StartCopy(const std::string& key, const std::string& source,
                                             const std::vector<std::string>& targets, bool move);
  absl::Status FinishCopy(const std::string& key, const master::CopyPlan& plan);
  // Gives back the reservations of a started copy that will not be written (best effort).
  void RevokeCopy(const std::string& key);
  absl::StatusOr<uint64_t> GetSize(const std::string& key);
  absl::StatusOr<uint64_t> RemoveByRegex(const std::string& pattern, bool force,
                                         const std::string& tenant) {
    return master_->RemoveByRegex(pattern, force, tenant);
  }
  absl::StatusOr<uint64_t> RemoveAll(bool force, const std::string& tenant) {
    return master_->RemoveAll(force, tenant);
  }
  ClientStats Stats() const;

 private:
  using ObjectLocation = master::ObjectLocation;
  using Replica = master::Replica;
  using SegmentHandle = transport::SegmentHandle;
  using TransferRequest = transport::TransferRequest;
  using TransferStatus = transport::TransferStatus;

  // Replica lists of `keys` and when each was asked for (its read lease counts from then).
  struct Lookup {
    std::vector<absl::StatusOr<ObjectLocation>> locations;
    std::vector<std::chrono::steady_clock::time_point> asked_at;
    // Reads end the leases they used (not those held by read sessions).
    bool end_leases = true;
  };
  Lookup LookUp(const std::vector<std::string>& keys);
  // What to read of one object: pieces of it, each into its own memory.
  struct Piece {
    void* data = nullptr;
    uint64_t offset = 0;  // in the object
    uint64_t length = 0;
  };
  struct ReadPlan {
    std::vector<Piece> pieces;
    // The pieces cover the whole object in order, so its checksum can be verified.
    bool whole = false;
  };
  // The whole object into `buffers`, filled in order; kInvalidParams when they are too small.
  static absl::StatusOr<ReadPlan> WholeObject(const std::string& key,
                                              const std::vector<Buffer>& buffers, uint64_t size);
  // Reads of `ranges` of an object of `size` bytes; the status of each range goes to `statuses`
  // (ranges that fail CheckRange are left out of the plan).
  static ReadPlan PlanRanges(const std::string& key, const std::vector<Client::Range>& ranges,
                             uint64_t size, std::vector<absl::Status>* statuses);
  // Reads each object as its plan says (a plan that is an error is that key's result), trying
  // replicas in ReadOrder until one passes the transfer, the checksum (whole objects) and the
  // lease check. Returns the bytes read per key.
  std::vector<absl::StatusOr<uint64_t>> ReadObjects(
      const std::vector<std::string>& keys, const std::vector<absl::StatusOr<ReadPlan>>& plans,
      const Lookup& lookup);
  // A plan per key of `lookup`: make(i, location) for each object found, the lookup's error for
  // the others.
  template <typename Make>
  static std::vector<absl::StatusOr<ReadPlan>> PlanEach(const Lookup& lookup, Make make);
  // Plans for reading every found object of `lookup` whole into `buffers`.
  static std::vector<absl::StatusOr<ReadPlan>> WholeObjects(
      const std::vector<std::string>& keys, const std::vector<std::vector<Buffer>>& buffers,
      const Lookup& lookup);
  absl::Status WriteCopy(const std::string& key, const master::CopyPlan& plan);
  // Runs the requests as one engine batch and waits until every one is final.
  std::vector<TransferStatus> RunTransfers(const std::vector<TransferRequest>& requests);
  // Replicas ordered for reading: this client's segment, then this host, then others (shuffled
  // within each class to spread load).
  std::vector<Replica> ReadOrder(std::vector<Replica> replicas);
  // The engine handle for a replica's segment. Handles are bound to one incarnation of the peer;
  // a replica with a newer mount epoch than seen before means the peer re-mounted (maybe after a
  // restart), so the segment is reopened. Replicas older than the newest epoch seen are refused.
  absl::StatusOr<SegmentHandle> HandleFor(const Replica& replica);
  // Reads object i of a ReadObjects call from the disk replica `replica` as `plan` says: the
  // whole object is read and verified (size and checksum), through a scratch copy when the plan
  // takes only parts of it. kObjectNotFound when the store no longer has it or the bytes
  // fail the checksum, kTransferFail when the store cannot be reached in transfer_timeout.
  absl::Status ReadFromDisk(const std::string& key, const Replica& replica,
                            const ObjectLocation& location, const ReadPlan& plan);

  const ClientConfig config_;
  const master::ClientId id_;
  transport::TransferEngine* const engine_;
  MasterApi* const master_;
  const std::string host_;  // host part of this client's segment name

  struct OpenedSegment {
    uint64_t epoch = 0;
    SegmentHandle handle = -1;
  };
  // Read sessions (Client::StartReadSessions), by key: the lookup and when it was made.
  struct ReadSession {
    ObjectLocation location;
    std::chrono::steady_clock::time_point asked_at;
  };
  // Forgets sessions whose lease has ended once there are many (amortized: the threshold doubles).
  void PruneSessions() ABSL_EXCLUSIVE_LOCKS_REQUIRED(sessions_mu_);
  yuebing::Mutex sessions_mu_;
  absl::flat_hash_map<std::string, ReadSession> sessions_ ABSL_GUARDED_BY(sessions_mu_);
  size_t prune_sessions_at_ ABSL_GUARDED_BY(sessions_mu_) = 4096;

  // Put sessions (Client::StartPutSessions), by key.
  struct PutSession {
    std::vector<Replica> replicas;
    uint64_t size = 0;
    std::vector<std::pair<uint64_t, uint64_t>> written;  // [begin, end) ranges, merged, sorted
    uint32_t writing = 0;                                // WritePutSessionRanges calls under way
    bool sealed = false;  // an end or a revoke is under way: no new writes
    std::chrono::steady_clock::time_point started;
  };
  // Writes to a session older than this are refused (kLeaseExpired): the master may reclaim
  // the space of an unfinished put after its put_start_release_timeout (10 min by default),
  // and bytes written there afterwards could land in another object.
  static constexpr std::chrono::minutes kPutSessionWriteWindow{5};
  // Seals the sessions of `keys` (`statuses` gets kInvalidParams where there is none) and waits
  // until no write to them is under way. Returns the keys sealed.
  std::vector<size_t> SealPutSessions(const std::vector<std::string>& keys,
                                      std::vector<absl::Status>* statuses)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(put_sessions_mu_);
  yuebing::Mutex put_sessions_mu_;
  absl::flat_hash_map<std::string, PutSession> put_sessions_ ABSL_GUARDED_BY(put_sessions_mu_);

  yuebing::Mutex segments_mu_;
  absl::flat_hash_map<std::string, OpenedSegment> segments_ ABSL_GUARDED_BY(segments_mu_);

  // Hashes large objects while a batch of reads or writes copies the next ones (hashed_transfers_).
  ChecksumWorker checksum_worker_;
  HashedTransfers hashed_transfers_;
  // Whether the last put's first values were copied synchronously (HashedTransfers::Outcome).
  std::atomic<bool> puts_copy_synchronously_{false};
  std::atomic<uint64_t> puts_{0}, gets_{0}, hits_{0}, misses_{0}, checksum_failures_{0},
      lease_expired_{0}, failovers_{0}, disk_reads_{0};
};

}  // namespace yuebing::store
