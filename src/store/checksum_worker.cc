#include "store/checksum_worker.h"

#include <utility>

#include "yuebing/common/checksum.h"

namespace yuebing::store {

ChecksumWorker::~ChecksumWorker() {
  std::thread helper;
  {
    yuebing::MutexLock lock(&mu_);
    stopping_ = true;
    work_.SignalAll();
    helper = std::move(helper_);
  }
  if (helper.joinable()) helper.join();
}

void ChecksumWorker::Add(Group* group, absl::Span<const absl::string_view> pieces, uint64_t* out) {
  {
    yuebing::MutexLock lock(&group->state_->mu);
    ++group->state_->left;
  }
  jobs_added_.fetch_add(1, std::memory_order_relaxed);
  yuebing::MutexLock lock(&mu_);
  queue_.push_back(Job{pieces, out, group->state_});
  if (!helper_.joinable()) helper_ = std::thread([this] { HelperLoop(); });
  work_.Signal();
}

void ChecksumWorker::Wait(Group* group) {
  while (true) {
    Job mine;
    {
      yuebing::MutexLock lock(&mu_);
      auto it = queue_.begin();
      while (it != queue_.end() && it->group != group->state_) ++it;
      if (it == queue_.end()) break;
      mine = std::move(*it);
      queue_.erase(it);
    }
    Run(mine);
    yuebing::MutexLock lock(&group->state_->mu);
    --group->state_->left;
  }
  Group::State& state = *group->state_;
  yuebing::MutexLock lock(&state.mu);
  while (state.left > 0) state.done.Wait(&state.mu);
}

void ChecksumWorker::Run(const Job& job) { *job.out = ObjectChecksum(job.pieces); }

void ChecksumWorker::HelperLoop() {
  while (true) {
    Job job;
    {
      yuebing::MutexLock lock(&mu_);
      while (!stopping_ && queue_.empty()) work_.Wait(&mu_);
      if (queue_.empty()) return;  // stopping, and every group has been waited for
      job = std::move(queue_.front());
      queue_.pop_front();
    }
    Run(job);
    helper_jobs_.fetch_add(1, std::memory_order_relaxed);
    yuebing::MutexLock lock(&job.group->mu);
    if (--job.group->left == 0) job.group->done.SignalAll();
  }
}

}  // namespace yuebing::store
