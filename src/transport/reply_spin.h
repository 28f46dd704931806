// Polling briefly for a reply before sleeping on it. On this project's reference machine (a
// 2-vCPU virtual machine) a thread the kernel wakes from an idle CPU costs 20-30 us per wake-up;
// a master round trip that sleeps takes ~70 us where the same trip with the caller polling takes
// ~25-35 us (docs/master.md, "Fast path of the hot calls").
//
// Polling costs the caller's CPU while it waits, and on a host with more busy threads than CPUs it
// takes the CPU the answering process needs. AdaptiveSpin therefore polls only while recent polls
// were answered within their budget: when they keep missing (a loaded host), it stops, trying
// again once in a while.
//
// Thread safety: AdaptiveSpin may be used from any threads at once (its state is approximate by
// design); SpinUntilReadable touches only the descriptor it is given.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>

namespace yuebing::transport {

// Polls fd without sleeping for up to `spin`, giving the CPU to other runnable threads between
// polls, and returns true as soon as fd is readable (bytes, EOF, or an error to report). Returns
// false when `spin` passed first or is not positive. Consumes nothing.
bool SpinUntilReadable(int fd, std::chrono::microseconds spin);

// The poll budget named by environment variable `name` in microseconds (at most one second; a
// larger value is capped, with a warning), or `fallback` when it is unset, or when it is not a
// number of 0 or more (with a warning naming the variable). 0 means never poll.
std::chrono::microseconds ReplySpinFromEnvironment(const char* name,
                                                   std::chrono::microseconds fallback);

class AdaptiveSpin {
 public:
  // A zero budget never polls.
  explicit AdaptiveSpin(std::chrono::microseconds budget) : budget_(budget) {}

  // The poll for the next wait: the budget while most recent polls were answered within it, else
  // zero, except for one wait in kProbeEvery, which polls to learn whether replies are quick
  // again.
  std::chrono::microseconds Next();
  // Records whether the wait given a non-zero Next() was answered within it.
  void Record(bool answered);

  // Polls fd for Next() and records the outcome; true when fd became readable meanwhile.
  bool Wait(int fd);

  std::chrono::microseconds budget() const { return budget_; }

  // Exposed for tests: the share of recent polls answered, in 1/kScoreOne.
  static constexpr uint32_t kScoreOne = 1024;
  static constexpr uint32_t kScoreToPoll = kScoreOne * 3 / 4;
  static constexpr uint32_t kProbeEvery = 32;
  uint32_t score() const { return score_.load(std::memory_order_relaxed); }

 private:
  const std::chrono::microseconds budget_;
  // Moving average of answered polls (each outcome weighs 1/8), starting at "all answered".
  std::atomic<uint32_t> score_{kScoreOne};
  std::atomic<uint32_t> skipped_{0};
};

}  // namespace yuebing::transport
