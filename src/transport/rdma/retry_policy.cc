#include "transport/rdma/retry_policy.h"

#include <algorithm>

namespace yuebing::transport::rdma {

NicHealth::NicHealth(size_t nics, uint32_t failure_threshold, std::chrono::milliseconds quarantine,
                     const Clock& clock)
    : threshold_(failure_threshold < 1 ? 1 : failure_threshold),
      quarantine_(quarantine),
      clock_(clock),
      states_(nics) {}

void NicHealth::RecordSuccess(size_t nic) {
  yuebing::MutexLock lock(&mu_);
  if (nic < states_.size()) states_[nic] = State{};
}

void NicHealth::RecordFailure(size_t nic) {
  yuebing::MutexLock lock(&mu_);
  if (nic >= states_.size()) return;
  State& state = states_[nic];
  if (++state.consecutive_failures >= threshold_) {
    state.quarantined_until = clock_.Now() + quarantine_;
    state.consecutive_failures = 0;
  }
}

bool NicHealth::Usable(size_t nic) const {
  yuebing::MutexLock lock(&mu_);
  return nic < states_.size() && clock_.Now() >= states_[nic].quarantined_until;
}

std::optional<uint32_t> NextPath(const SliceAttempts& attempts, bool retryable, uint32_t path_count,
                                 uint32_t max_attempts,
                                 const std::function<bool(uint32_t path)>& usable) {
  if (!retryable || path_count == 0 || attempts.made >= max_attempts) return std::nullopt;
  const uint32_t last =
      attempts.failed_paths.empty() ? path_count - 1 : attempts.failed_paths.back();
  auto tried = [&](uint32_t path) {
    return std::find(attempts.failed_paths.begin(), attempts.failed_paths.end(), path) !=
           attempts.failed_paths.end();
  };
  // Scan order: last+1, last+2, ..., wrapping around.
  auto scan = [&](auto&& accept) -> std::optional<uint32_t> {
    for (uint32_t step = 1; step <= path_count; ++step) {
      uint32_t path = (last + step) % path_count;
      if (accept(path)) return path;
    }
    return std::nullopt;
  };
  if (auto p = scan([&](uint32_t path) { return !tried(path) && usable(path); })) return p;
  if (auto p = scan([&](uint32_t path) { return !tried(path); })) return p;
  if (auto p = scan([&](uint32_t path) { return path != last && usable(path); })) return p;
  return last < path_count ? std::optional<uint32_t>(last) : std::nullopt;
}

}  // namespace yuebing::transport::rdma
