#include "store/hashed_transfers.h"

#include <algorithm>
#include <chrono>
#include <string>

#include "yuebing/common/checksum.h"

namespace yuebing::store {
namespace {

using transport::TransferRequest;
using transport::TransferState;
using transport::TransferStatus;

constexpr size_t kNoTask = static_cast<size_t>(-1);
// How long the caller waits for one object before leaving the rest to after the batch (a slow or
// stuck transfer then ends by its own deadline in WaitAndFreeBatch).
constexpr std::chrono::milliseconds kProgressiveWait{1000};
constexpr std::chrono::milliseconds kNow{0};

uint64_t BytesOf(const HashedTransfers::Object& object) {
  uint64_t total = 0;
  for (absl::string_view piece : object.bytes) total += piece.size();
  return total;
}

std::vector<TransferStatus> FailedStatuses(size_t count, const std::string& reason) {
  std::vector<TransferStatus> statuses(count);
  for (TransferStatus& status : statuses) {
    status.state = TransferState::kFailed;
    status.reason = reason;
  }
  return statuses;
}

}  // namespace

void HashedTransfers::Submit(transport::BatchId batch, const std::vector<TransferRequest>& requests,
                             const std::vector<Object>& objects, size_t begin, size_t end,
                             size_t* next_task, std::vector<size_t>* task_of,
                             std::vector<std::string>* refused) {
  if (begin >= end) return;
  const size_t first = objects[begin].first_request;
  const size_t last = objects[end - 1].first_request + objects[end - 1].request_count;
  if (first >= last) return;
  absl::Status status =
      engine_->SubmitTransfer(batch, absl::MakeConstSpan(requests).subspan(first, last - first));
  for (size_t r = first; r < last; ++r) {
    if (status.ok()) {
      (*task_of)[r] = (*next_task)++;
    } else {
      (*refused)[r] = std::string(status.message());
    }
  }
}

HashedTransfers::Progress HashedTransfers::WaitObject(transport::BatchId batch,
                                                      const Object& object,
                                                      const std::vector<size_t>& task_of,
                                                      std::chrono::milliseconds timeout) {
  Progress progress = Progress::kCompleted;
  for (size_t r = object.first_request; r < object.first_request + object.request_count; ++r) {
    if (task_of[r] == kNoTask) {  // refused: final, failed
      progress = Progress::kFailed;
      continue;
    }
    absl::StatusOr<TransferStatus> status = engine_->WaitTransfer(batch, task_of[r], timeout);
    if (!status.ok() || status->state == TransferState::kWaiting ||
        status->state == TransferState::kPending) {
      return Progress::kMoving;
    }
    if (status->state != TransferState::kCompleted) progress = Progress::kFailed;
  }
  return progress;
}

HashedTransfers::Outcome HashedTransfers::Run(const std::vector<TransferRequest>& requests,
                                              const std::vector<Object>& objects) {
  Outcome outcome;
  outcome.checksums.assign(objects.size(), kNoChecksum);
  if (requests.empty()) return outcome;
  absl::StatusOr<transport::BatchId> batch = engine_->AllocateBatch(requests.size());
  if (!batch.ok()) {
    outcome.statuses = FailedStatuses(requests.size(), std::string(batch.status().message()));
    return outcome;
  }
  size_t large = 0;
  for (const Object& object : objects) {
    if (object.hash && BytesOf(object) >= ChecksumWorker::kMinBytes) ++large;
  }
  std::vector<size_t> task_of(requests.size(), kNoTask);
  std::vector<std::string> refused(requests.size());
  std::vector<uint64_t>& computed = outcome.checksums;  // kNoChecksum: not (yet) hashed
  size_t next_task = 0;
  ChecksumWorker::Group hashing;
  // The first two objects go together; if they are final on return and none of their bytes went
  // to TCP or RDMA, the path copies synchronously and the rest go one object at a time, each
  // hashed by the helper while the next one is copied. (A TCP read submitted alone to its peer
  // may also be final on return, its reply read by this thread: one at a time, such reads would
  // run one after the other instead of in parallel.)
  const size_t head = large >= 2 ? std::min<size_t>(2, objects.size()) : objects.size();
  const transport::TransferEngineStats before = engine_->Stats();
  Submit(*batch, requests, objects, 0, head, &next_task, &task_of, &refused);
  const transport::TransferEngineStats after = engine_->Stats();
  bool synchronous = after.tcp_bytes == before.tcp_bytes && after.rdma_bytes == before.rdma_bytes;
  // The head is checked whole when the rest may go one object at a time; a round run whole has
  // only its first object checked, for Outcome::synchronous (a status query per request of every
  // object would cost each small batch for a flag reads do not use).
  const size_t checked = large >= 2 ? head : std::min<size_t>(1, objects.size());
  std::vector<Progress> head_progress(head);
  for (size_t i = 0; i < checked && synchronous; ++i) {
    head_progress[i] = WaitObject(*batch, objects[i], task_of, kNow);
    synchronous = head_progress[i] != Progress::kMoving;
  }
  outcome.synchronous = synchronous;
  synchronous = synchronous && head < objects.size();
  // Hashes object i, copied (`progress`), beside the caller when it is large.
  auto hand_over = [&](size_t i, Progress progress) {
    if (!objects[i].hash || progress != Progress::kCompleted) return;
    if (BytesOf(objects[i]) < ChecksumWorker::kMinBytes) {
      computed[i] = ObjectChecksum(objects[i].bytes);
    } else {
      worker_->Add(&hashing, objects[i].bytes, &computed[i]);
    }
  };
  if (synchronous) {
    for (size_t i = 0; i < head; ++i) hand_over(i, head_progress[i]);
    for (size_t i = head; i < objects.size(); ++i) {
      Submit(*batch, requests, objects, i, i + 1, &next_task, &task_of, &refused);
      hand_over(i, WaitObject(*batch, objects[i], task_of, kNow));
    }
  } else {
    Submit(*batch, requests, objects, head, objects.size(), &next_task, &task_of, &refused);
    // Hash each object as soon as its requests are final (its bytes still in the cache), while
    // later ones move.
    for (size_t i = 0; i < objects.size() && large >= 2; ++i) {
      if (!objects[i].hash) continue;
      const Progress progress = WaitObject(*batch, objects[i], task_of, kProgressiveWait);
      // A slow transfer: the rest are hashed after the batch, which ends by its deadlines.
      if (progress == Progress::kMoving) break;
      if (progress == Progress::kCompleted) computed[i] = ObjectChecksum(objects[i].bytes);
    }
  }
  absl::StatusOr<std::vector<TransferStatus>> tasks = engine_->WaitAndFreeBatch(*batch);
  worker_->Wait(&hashing);
  outcome.statuses.resize(requests.size());
  for (size_t r = 0; r < requests.size(); ++r) {
    TransferStatus& status = outcome.statuses[r];
    if (task_of[r] == kNoTask) {
      status.state = TransferState::kFailed;
      status.reason = refused[r];
    } else if (!tasks.ok()) {
      status.state = TransferState::kFailed;
      status.reason = std::string(tasks.status().message());
    } else {
      status = (*tasks)[task_of[r]];
    }
  }
  for (size_t i = 0; i < objects.size(); ++i) {
    const Object& object = objects[i];
    bool completed = true;
    for (size_t r = object.first_request; r < object.first_request + object.request_count; ++r) {
      completed = completed && outcome.statuses[r].state == TransferState::kCompleted;
    }
    if (!completed || !object.hash) {
      computed[i] = kNoChecksum;  // a failed write's source may have been hashed
    } else if (computed[i] == kNoChecksum) {
      computed[i] = ObjectChecksum(object.bytes);
    }
  }
  return outcome;
}

}  // namespace yuebing::store
