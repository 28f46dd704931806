#include "master/long_polls.h"

#include <algorithm>
#include <utility>

#include "absl/time/clock.h"
#include "absl/time/time.h"

namespace yuebing::master {

LongPolls::LongPolls(std::chrono::milliseconds tick)
    : tick_(tick), thread_(&LongPolls::Loop, this) {}

LongPolls::~LongPolls() { Stop(); }

uint64_t LongPolls::Changes() {
  yuebing::MutexLock lock(&mu_);
  return changes_;
}

uint64_t LongPolls::Wakeups() {
  yuebing::MutexLock lock(&mu_);
  return wakeups_;
}

void LongPolls::WakeIfNeeded(uint64_t changes_seen, Clock::time_point deadline) {
  if (changes_ != changes_seen) {
    notified_ = true;
    cv_.Signal();
  } else if (deadline < sleeping_until_) {
    cv_.Signal();  // the thread sleeps past this deadline: it recomputes its wake-up
  }
}

void LongPolls::Park(Attempt attempt, Clock::time_point deadline, uint64_t changes_seen) {
  {
    yuebing::MutexLock lock(&mu_);
    if (!stopping_) {
      parked_.push_back(Parked{std::move(attempt), deadline});
      WakeIfNeeded(changes_seen, deadline);
      return;
    }
  }
  attempt(true);
}

void LongPolls::Notify() {
  yuebing::MutexLock lock(&mu_);
  ++changes_;
  // Nothing parked, or a wake-up already pending: waking the thread again would only cost a
  // context switch per change. (Calls the thread is trying right now are retried when it sees
  // that changes_ moved.)
  if (parked_.empty() || notified_) return;
  notified_ = true;
  cv_.Signal();
}

void LongPolls::RunNow() {
  std::vector<Parked> batch;
  uint64_t changes_seen = 0;
  {
    yuebing::MutexLock lock(&mu_);
    ++changes_;
    if (parked_.empty()) return;
    batch.swap(parked_);
    changes_seen = changes_;
  }
  std::vector<Parked> keep;
  Clock::time_point earliest = Clock::time_point::max();
  for (Parked& p : batch) {
    if (p.attempt(false)) continue;
    earliest = std::min(earliest, p.deadline);
    keep.push_back(std::move(p));
  }
  if (keep.empty()) return;
  yuebing::MutexLock lock(&mu_);
  for (Parked& p : keep) parked_.push_back(std::move(p));
  WakeIfNeeded(changes_seen, earliest);
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
      Clock::time_point wake = Clock::now() + tick_;
      for (const Parked& p : parked_) wake = std::min(wake, p.deadline);
      const auto wait = std::max(wake - Clock::now(), Clock::duration::zero());
      sleeping_until_ = wake;
      cv_.WaitWithDeadline(&mu_, absl::Now() + absl::FromChrono(wait));
      sleeping_until_ = Clock::time_point::min();
      ++wakeups_;
    }
    const bool stopping = stopping_;
    notified_ = false;
    const uint64_t changes_seen = changes_;
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
    // A change announced while the calls were out of parked_ found nothing to wake: retry.
    if (changes_ != changes_seen && !parked_.empty()) notified_ = true;
    if (stopping && parked_.empty()) return;
  }
}

}  // namespace yuebing::master
