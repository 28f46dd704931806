// Runs the read requests of several objects as one engine batch and verifies each object's
// checksum, overlapping the verification with the transfer of the next objects where the path
// allows it. On a path whose copies complete inside SubmitTransfer (same-host shared memory, the
// own segment), each object is submitted on its own and a helper thread hashes it, still in the
// cache, while the calling thread copies the next one: a batch of 16 x 4 MiB then costs about
// the copy alone instead of the copy plus a second pass over 64 MiB from memory. Elsewhere (TCP,
// RDMA) the batch is submitted whole and the caller verifies each object as soon as its requests
// are final (WaitTransfer), while the later objects are still on the wire. A batch with fewer than
// two large objects is run whole and verified after it, by the caller.
//
// Thread safety: Run may be called from many threads at once; they share one helper thread,
// started by the first call that uses it and joined by the destructor.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/strings/string_view.h"
#include "yuebing/common/mutex.h"
#include "yuebing/transport/transfer_engine.h"

namespace yuebing::store {

class VerifiedReads {
 public:
  // One object of a Run: the requests [first_request, first_request + request_count) of the
  // call, which land in `bytes` (the object's bytes in order once they are complete).
  struct Object {
    size_t first_request = 0;
    size_t request_count = 0;
    uint64_t checksum = 0;  // recorded at put; kNoChecksum: not verified
    std::vector<absl::string_view> bytes;
  };
  struct Outcome {
    std::vector<transport::TransferStatus> statuses;  // one per request, every one final
    // Per object: false only when all its requests completed and its bytes failed the checksum.
    std::vector<bool> checksum_ok;
  };

  // `engine` must outlive this object.
  explicit VerifiedReads(transport::TransferEngine* engine) : engine_(engine) {}
  ~VerifiedReads();
  VerifiedReads(const VerifiedReads&) = delete;
  VerifiedReads& operator=(const VerifiedReads&) = delete;

  // Runs `requests` (reads; the objects' ranges are ascending, disjoint and cover them all) and
  // verifies every object whose requests all completed. A request whose submission the engine
  // refused is FAILED with the engine's reason; nothing is left in flight on return.
  Outcome Run(const std::vector<transport::TransferRequest>& requests,
              const std::vector<Object>& objects);

  // Objects verified by the helper thread so far (tests and benchmarks).
  uint64_t HelperVerifications() const;

 private:
  // The verifications one Run queued for the helper; the Run waits until `left` is 0. Shared with
  // the jobs: the helper may still be signalling when the Run sees 0 and returns.
  struct Pending {
    yuebing::Mutex mu;
    yuebing::CondVar done;
    size_t left ABSL_GUARDED_BY(mu) = 0;
  };
  struct Job {
    const Object* object = nullptr;
    uint8_t* match = nullptr;  // 1 or 0, written before the job counts as done
    std::shared_ptr<Pending> pending;
  };

  // Submits objects [begin, end) of the call; records task ids in `task_of` (or the refusal in
  // `refused`).
  void Submit(transport::BatchId batch, const std::vector<transport::TransferRequest>& requests,
              const std::vector<Object>& objects, size_t begin, size_t end, size_t* next_task,
              std::vector<size_t>* task_of, std::vector<std::string>* refused);
  // Waits up to `timeout` until every request of `object` is final; false when one is not yet.
  bool WaitFinal(transport::BatchId batch, const Object& object, const std::vector<size_t>& task_of,
                 std::chrono::milliseconds timeout);
  // True when every request of `object` was submitted and has COMPLETED.
  bool Completed(transport::BatchId batch, const Object& object,
                 const std::vector<size_t>& task_of);
  void Enqueue(const Job& job);
  // Runs the call's jobs still queued on the calling thread, then waits for those the helper took.
  void Finish(const std::shared_ptr<Pending>& pending);
  void HelperLoop();
  static void Verify(const Job& job);

  transport::TransferEngine* const engine_;
  mutable yuebing::Mutex mu_;
  yuebing::CondVar work_;
  std::deque<Job> queue_ ABSL_GUARDED_BY(mu_);
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  std::thread helper_ ABSL_GUARDED_BY(mu_);
  std::atomic<uint64_t> helper_verifications_{0};
};

}  // namespace yuebing::store
