#include "master/long_polls.h"

#include <algorithm>
#include <utility>

#include "absl/time/clock.h"
#include "absl/time/time.h"

namespace yuebing::master {

LongPolls::LongPolls() : thread_(&LongPolls::Loop, this) {}

LongPolls::~LongPolls() { Stop(); }

void LongPolls::Park(Attempt attempt, Clock::time_point deadline) {
  {
    yuebing::MutexLock lock(&mu_);
    if (!stopping_) {
      parked_.push_back(Parked{std::move(attempt), deadline});
      cv_.Signal();
      return;
    }
  }
  attempt(true);
}

void LongPolls::Notify() {
  yuebing::MutexLock lock(&mu_);
  // Nothing parked, or a wake-up already pending: waking the thread again would only cost a
  // context switch per change.
  if (parked_.empty() || notified_) return;
  notified_ = true;
  cv_.Signal();
}

void LongPolls::RunNow() {
  std::vector<Parked> batch;
  {
    yuebing::MutexLock lock(&mu_);
    if (parked_.empty()) return;
    batch.swap(parked_);
  }
  std::vector<Parked> keep;
  for (Parked& p : batch) {
    if (!p.attempt(false)) keep.push_back(std::move(p));
  }
  if (keep.empty()) return;
  yuebing::MutexLock lock(&mu_);
  for (Parked& p : keep) parked_.push_back(std::move(p));
  cv_.Signal();  // the loop recomputes its next deadline
}

void LongPolls::Stop() {
  {
    yuebing::MutexLock lock(&mu_);
    if (stopping_ && !thread_.joinable()) return;
    stopping_ = true;
    cv_.Signal();
  }
  if (thread_.joinable()) thread_.join();
}

void LongPolls::Loop() {
  yuebing::MutexLock lock(&mu_);
  while (true) {
    if (!stopping_ && !notified_) {
      Clock::time_point wake = Clock::now() + std::chrono::seconds(1);
      for (const Parked& p : parked_) wake = std::min(wake, p.deadline);
      const auto wait = std::max(wake - Clock::now(), Clock::duration::zero());
      cv_.WaitWithDeadline(&mu_, absl::Now() + absl::FromChrono(wait));
    }
    const bool stopping = stopping_;
    notified_ = false;
    std::vector<Parked> batch;
    batch.swap(parked_);
    mu_.Unlock();
    const Clock::time_point now = Clock::now();
    std::vector<Parked> keep;
    for (Parked& p : batch) {
      if (!p.attempt(stopping || p.deadline <= now)) keep.push_back(std::move(p));
    }
    mu_.Lock();
    for (Parked& p : keep) parked_.push_back(std::move(p));
    if (stopping && parked_.empty()) return;
  }
}

}  // namespace yuebing::master
