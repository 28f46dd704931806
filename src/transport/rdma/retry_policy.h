// Where a failed RDMA slice goes next, and which local NICs are healthy. Plain C++ with an
// injectable clock, unit-tested.
//
// A request has an ordered list of paths (local NIC -> remote NIC pairs): the preferred ones, over
// which its slices are striped, then the others. A slice that fails with a retryable error is
// reposted on a path it has not failed on yet, preferring healthy NICs, until it has made
// `max_attempts` attempts. A NIC that fails `failure_threshold` times in a row is avoided for
// `quarantine` (unless nothing else is left); one success clears its record.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "yuebing/common/clock.h"
#include "yuebing/common/mutex.h"

namespace yuebing::transport::rdma {

// Thread-safe.
class NicHealth {
 public:
  NicHealth(size_t nics, uint32_t failure_threshold, std::chrono::milliseconds quarantine,
            const Clock& clock = Clock::Real());
  void RecordSuccess(size_t nic);
  void RecordFailure(size_t nic);
  // False while `nic` is quarantined. Out-of-range indices are never usable.
  bool Usable(size_t nic) const;

 private:
  struct State {
    uint32_t consecutive_failures = 0;
    SteadyTime quarantined_until{};
  };
  const uint32_t threshold_;
  const std::chrono::milliseconds quarantine_;
  const Clock& clock_;
  mutable yuebing::Mutex mu_;
  std::vector<State> states_ ABSL_GUARDED_BY(mu_);
};

// The attempts of one slice so far.
struct SliceAttempts {
  uint32_t made = 0;                   // attempts posted, including the one that just failed
  std::vector<uint32_t> failed_paths;  // paths it failed on, in order
};

// The path of the next attempt, or nullopt when the slice must fail: the error is not retryable,
// `max_attempts` were made, or there are no paths. Order of choice: an untried path whose NIC is
// usable, scanning from the path after the last failure; else an untried path; else any usable
// path but the last failed one; else the last failed path itself (a transient error may pass).
// `usable(path)` says whether the path's local NIC is healthy.
std::optional<uint32_t> NextPath(const SliceAttempts& attempts, bool retryable, uint32_t path_count,
                                 uint32_t max_attempts,
                                 const std::function<bool(uint32_t path)>& usable);

}  // namespace yuebing::transport::rdma
