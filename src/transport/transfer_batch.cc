#include "transport/transfer_batch.h"

#include "absl/strings/str_cat.h"
#include "absl/time/time.h"

namespace yuebing::transport {

void TransferTask::Start(TransferBatch* batch, uint32_t slices) {
  YB_CHECK(batch != nullptr && slices > 0, "a task starts with its batch and at least one slice");
  YB_CHECK(state_.load(std::memory_order_acquire) == TransferState::kWaiting,
           "a task is started once, by the one transport that accepted it");
  batch_ = batch;
  transferred_.store(0, std::memory_order_relaxed);
  slices_left_.store(slices, std::memory_order_relaxed);
  state_.store(TransferState::kPending, std::memory_order_release);
}

void TransferTask::FinishSlice(uint64_t bytes, const absl::Status& status) {
  if (status.ok()) {
    transferred_.fetch_add(bytes, std::memory_order_relaxed);
  } else {
    yuebing::MutexLock lock(&mu_);
    if (failure_.ok()) failure_ = status;
  }
  const uint32_t slices_before = slices_left_.fetch_sub(1, std::memory_order_acq_rel);
  YB_CHECK(slices_before > 0, "a task finishes no more slices than it started");
  if (slices_before != 1) return;
  TransferState final_state = TransferState::kCompleted;
  {
    yuebing::MutexLock lock(&mu_);
    if (!failure_.ok()) {
      final_state = failure_.code() == absl::StatusCode::kDeadlineExceeded ? TransferState::kTimeout
                                                                           : TransferState::kFailed;
    }
  }
  state_.store(final_state, std::memory_order_release);
  batch_->OnTaskFinal();
}

TransferStatus TransferTask::Status() const {
  TransferStatus out;
  out.state = state_.load(std::memory_order_acquire);
  out.transferred_bytes = transferred_.load(std::memory_order_relaxed);
  if (out.state == TransferState::kFailed || out.state == TransferState::kTimeout) {
    yuebing::MutexLock lock(&mu_);
    out.reason = std::string(failure_.message());
  }
  return out;
}

bool TransferTask::Final() const {
  const TransferState state = state_.load(std::memory_order_acquire);
  return state != TransferState::kWaiting && state != TransferState::kPending;
}

TransferBatch::TransferBatch(size_t capacity)
    : capacity_(capacity), tasks_(std::make_unique<TransferTask[]>(capacity)) {}

absl::StatusOr<size_t> TransferBatch::Reserve(size_t count) {
  size_t first = size_.load(std::memory_order_relaxed);
  do {
    if (count > capacity_ - first) {
      return absl::ResourceExhaustedError(absl::StrCat("batch capacity ", capacity_, " exceeded (",
                                                       first, " used, ", count, " more asked)"));
    }
  } while (!size_.compare_exchange_weak(first, first + count, std::memory_order_acq_rel));
  unfinished_.fetch_add(count, std::memory_order_acq_rel);
  return first;
}

void TransferBatch::OnTaskFinal() {
  // Taken while this task is still unfinished, so the batch cannot have been freed yet; it keeps
  // the batch (and its mutex) alive until the signal below is done.
  std::shared_ptr<TransferBatch> self = shared_from_this();
  const size_t unfinished_before = unfinished_.fetch_sub(1, std::memory_order_acq_rel);
  YB_CHECK(unfinished_before > 0 && unfinished_before <= size(),
           "no more tasks become final than the batch holds");
  // The fetch_sub above and WaitTaskFinal's fetch_add(0) are ordered on unfinished_: either the
  // waiter's comes later and sees this task final (stored before this call), or it came first and
  // this load sees the waiter, who holds mu_ until it waits.
  if (unfinished_before == 1 || task_waiters_.load(std::memory_order_relaxed) > 0) {
    yuebing::MutexLock lock(&mu_);
    idle_cv_.SignalAll();
  }
}

void TransferBatch::NoteDeadline(SteadyTime deadline) {
  const SteadyTime::rep ticks = deadline.time_since_epoch().count();
  SteadyTime::rep latest = latest_deadline_.load(std::memory_order_relaxed);
  while (latest < ticks &&
         !latest_deadline_.compare_exchange_weak(latest, ticks, std::memory_order_acq_rel)) {
  }
}

bool TransferBatch::WaitIdle(std::chrono::nanoseconds timeout) {
  // Short spin first: small transfers finish within microseconds and a sleep costs more.
  auto spin_until = std::chrono::steady_clock::now() + std::chrono::microseconds(50);
  while (std::chrono::steady_clock::now() < spin_until) {
    if (Idle()) return true;
  }
  absl::Time deadline = absl::Now() + absl::FromChrono(timeout);
  yuebing::MutexLock lock(&mu_);
  while (!Idle()) {
    if (idle_cv_.WaitWithDeadline(&mu_, deadline)) return Idle();
  }
  return true;
}

bool TransferBatch::WaitTaskFinal(size_t index, std::chrono::nanoseconds timeout) {
  const TransferTask& waited = task(index);
  if (waited.Final()) return true;
  const absl::Time deadline = absl::Now() + absl::FromChrono(timeout);
  yuebing::MutexLock lock(&mu_);
  task_waiters_.fetch_add(1, std::memory_order_relaxed);
  unfinished_.fetch_add(0, std::memory_order_acq_rel);  // see OnTaskFinal
  bool final = waited.Final();
  while (!final && !idle_cv_.WaitWithDeadline(&mu_, deadline)) final = waited.Final();
  final = final || waited.Final();
  task_waiters_.fetch_sub(1, std::memory_order_relaxed);
  return final;
}

}  // namespace yuebing::transport
