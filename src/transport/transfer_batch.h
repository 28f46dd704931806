// Progress tracking of submitted requests. A request (TransferTask) is split into slices that may
// run on different connections; it becomes final when its last slice ends, and only then, so a
// final status means the engine no longer touches the request's memory.
//
// Thread safety: FinishSlice and the readers may run concurrently from any threads.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "yuebing/common/check.h"
#include "yuebing/common/clock.h"
#include "yuebing/common/mutex.h"
#include "yuebing/transport/transfer_engine.h"

namespace yuebing::transport {

class TransferBatch;

class TransferTask {
 public:
  // Marks the task in flight with `slices` slices to wait for (> 0).
  void Start(TransferBatch* batch, uint32_t slices);
  // Records the end of one slice of `bytes`. A non-OK status fails the task: kDeadlineExceeded
  // gives TIMEOUT, anything else FAILED; the first failure's message is the reason.
  void FinishSlice(uint64_t bytes, const absl::Status& status);
  TransferStatus Status() const;
  // True once the task is final (COMPLETED, FAILED or TIMEOUT).
  bool Final() const;

 private:
  TransferBatch* batch_ = nullptr;
  std::atomic<TransferState> state_{TransferState::kWaiting};
  std::atomic<uint64_t> transferred_{0};
  std::atomic<uint32_t> slices_left_{0};
  mutable yuebing::Mutex mu_;
  absl::Status failure_ ABSL_GUARDED_BY(mu_);
};

// Must be owned by a std::shared_ptr: a finishing task keeps its batch alive while it signals, so
// the owner may free the batch as soon as it sees it idle.
class TransferBatch : public std::enable_shared_from_this<TransferBatch> {
 public:
  explicit TransferBatch(size_t capacity);

  // Reserves `count` task slots and counts them as unfinished; returns the first slot's index.
  // Errors: kResourceExhausted when the batch capacity would be exceeded.
  absl::StatusOr<size_t> Reserve(size_t count);
  TransferTask& task(size_t index) {
    YB_CHECK(index < capacity_, "a task index lies inside its batch");
    return tasks_[index];
  }
  size_t size() const { return size_.load(std::memory_order_acquire); }
  size_t capacity() const { return capacity_; }
  bool Idle() const { return unfinished_.load(std::memory_order_acquire) == 0; }

  // Called by a task when it becomes final.
  void OnTaskFinal();

  // Records the deadline of submitted requests; the latest one bounds how long a waiter waits.
  void NoteDeadline(SteadyTime deadline);
  // The latest deadline noted; the epoch of the steady clock when none was.
  SteadyTime latest_deadline() const {
    return SteadyTime(SteadyTime::duration(latest_deadline_.load(std::memory_order_acquire)));
  }

  // Waits until no task is unfinished or the timeout passes. Returns true when idle.
  bool WaitIdle(std::chrono::nanoseconds timeout);
  // Waits until task `index` is final or the timeout passes. Returns true when it is final.
  bool WaitTaskFinal(size_t index, std::chrono::nanoseconds timeout);

 private:
  const size_t capacity_;
  std::unique_ptr<TransferTask[]> tasks_;
  std::atomic<size_t> size_{0};
  std::atomic<size_t> unfinished_{0};
  std::atomic<SteadyTime::rep> latest_deadline_{0};
  // Threads in WaitTaskFinal: while there are any, every task that becomes final signals.
  std::atomic<uint32_t> task_waiters_{0};
  yuebing::Mutex mu_;
  yuebing::CondVar idle_cv_;  // signalled when the batch becomes idle, or a task final for waiters
};

}  // namespace yuebing::transport
