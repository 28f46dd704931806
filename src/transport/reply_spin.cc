#include "transport/reply_spin.h"

#include <sched.h>
#include <sys/socket.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstdlib>

#include "absl/strings/numbers.h"
#include "yuebing/common/logging.h"

namespace yuebing::transport {

bool SpinUntilReadable(int fd, std::chrono::microseconds spin) {
  if (spin.count() <= 0) return false;
  const auto until = std::chrono::steady_clock::now() + spin;
  while (true) {
    char byte;
    const ssize_t got = recv(fd, &byte, 1, MSG_PEEK | MSG_DONTWAIT);
    if (got >= 0) return true;  // a byte, or EOF
    // An error the reader will report.
    if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) return true;
    if (std::chrono::steady_clock::now() >= until) return false;
    sched_yield();
  }
}

std::chrono::microseconds ReplySpinFromEnvironment(const char* name,
                                                   std::chrono::microseconds fallback) {
  constexpr int64_t kMaxUs = 1000000;
  const char* env = std::getenv(name);
  if (env == nullptr) return fallback;
  int64_t us = 0;
  if (!absl::SimpleAtoi(env, &us) || us < 0) {
    YB_LOG_WARN("{}='{}' is not a number of microseconds (0 or more); polling for {} us", name, env,
                fallback.count());
    return fallback;
  }
  if (us > kMaxUs) {
    YB_LOG_WARN("{}={} is above the most allowed ({} us); polling for {} us", name, us, kMaxUs,
                kMaxUs);
  }
  return std::chrono::microseconds(std::min<int64_t>(us, kMaxUs));
}

std::chrono::microseconds AdaptiveSpin::Next() {
  if (budget_.count() <= 0) return std::chrono::microseconds(0);
  if (score_.load(std::memory_order_relaxed) >= kScoreToPoll) return budget_;
  if (skipped_.fetch_add(1, std::memory_order_relaxed) % kProbeEvery == kProbeEvery - 1) {
    return budget_;
  }
  return std::chrono::microseconds(0);
}

void AdaptiveSpin::Record(bool answered) {
  // Moves the score 1/8 of the way to kScoreOne (answered) or to 0. Concurrent callers may lose
  // an update; the score only steers polling, so an approximate one is enough.
  const uint32_t old = score_.load(std::memory_order_relaxed);
  score_.store(answered ? old + (kScoreOne - old) / 8 : old - old / 8, std::memory_order_relaxed);
}

bool AdaptiveSpin::Wait(int fd) {
  const std::chrono::microseconds spin = Next();
  if (spin.count() <= 0) return false;
  const bool answered = SpinUntilReadable(fd, spin);
  Record(answered);
  return answered;
}

}  // namespace yuebing::transport
