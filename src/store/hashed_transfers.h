// Runs the transfers of several objects as one engine batch and hashes each object's bytes on
// this side (the destination of a read, to verify it against its recorded checksum; the source of
// a write, to record it at PutEnd), overlapping the hashing with the transfer of the next objects
// where the path allows it. On a path whose copies complete inside SubmitTransfer (same-host
// shared memory, the own segment), each object is submitted on its own and the checksum worker's
// helper thread hashes it, still in the cache, while the calling thread copies the next one: a
// batch of 16 x 4 MiB then costs about the copy alone instead of the copy plus a second pass over
// 64 MiB from memory. Elsewhere (TCP, RDMA) the batch is submitted whole and the caller hashes each
// object as soon as its requests are final (WaitTransfer), while the later objects are still on
// the wire. A batch with fewer than two large objects to hash is run whole and hashed after it,
// by the caller.
//
// Thread safety: Run may be called from many threads at once.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "absl/strings/string_view.h"
#include "store/checksum_worker.h"
#include "yuebing/transport/transfer_engine.h"

namespace yuebing::store {

class HashedTransfers {
 public:
  // One object of a Run: the requests [first_request, first_request + request_count) of the
  // call, whose bytes on this side are `bytes` (in the object's order; a read's are complete once
  // its requests are).
  struct Object {
    size_t first_request = 0;
    size_t request_count = 0;
    bool hash = false;  // whether to compute the object's checksum
    std::vector<absl::string_view> bytes;
  };
  struct Outcome {
    std::vector<transport::TransferStatus> statuses;  // one per request, every one final
    // Per object: ObjectChecksum(bytes) when it was to be hashed and all its requests completed;
    // kNoChecksum otherwise.
    std::vector<uint64_t> checksums;
    // Whether the round's first object (its first two, when it had two or more large objects to
    // hash) was copied inside SubmitTransfer: same-host shared memory or the own segment, no
    // byte to TCP or RDMA meanwhile (a TCP transfer of another thread of the engine also says
    // false).
    bool synchronous = false;
  };

  // `engine` and `worker` must outlive this object.
  HashedTransfers(transport::TransferEngine* engine, ChecksumWorker* worker)
      : engine_(engine), worker_(worker) {}

  // Runs `requests` (reads or writes; the objects' ranges are ascending, disjoint and cover them
  // all) and hashes every object to be hashed whose requests all completed. A request whose
  // submission the engine refused is FAILED with the engine's reason; nothing is left in flight
  // on return.
  Outcome Run(const std::vector<transport::TransferRequest>& requests,
              const std::vector<Object>& objects);

 private:
  // Submits objects [begin, end) of the call; records task ids in `task_of` (or the refusal in
  // `refused`).
  void Submit(transport::BatchId batch, const std::vector<transport::TransferRequest>& requests,
              const std::vector<Object>& objects, size_t begin, size_t end, size_t* next_task,
              std::vector<size_t>* task_of, std::vector<std::string>* refused);
  enum class Progress {
    kMoving,     // a request of the object is not final yet
    kCompleted,  // every request was submitted and COMPLETED: its bytes are in
    kFailed,     // every request is final, and one was refused or did not complete
  };
  // Waits up to `timeout` until every request of `object` is final, and says how it stands then.
  Progress WaitObject(transport::BatchId batch, const Object& object,
                      const std::vector<size_t>& task_of, std::chrono::milliseconds timeout);

  transport::TransferEngine* const engine_;
  ChecksumWorker* const worker_;
};

}  // namespace yuebing::store
