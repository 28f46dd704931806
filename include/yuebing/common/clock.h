// Injectable time source. Production code takes a `Clock&` (default: Clock::Real()) so that
// timing logic (leases, TTLs, deadlines) can be tested with FakeClock deterministically.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>

namespace yuebing {

using SteadyTime = std::chrono::steady_clock::time_point;

class Clock {
 public:
  virtual ~Clock() = default;
  // Monotonic now. Thread-safe.
  virtual SteadyTime Now() const = 0;
  // Wall-clock milliseconds since the Unix epoch, for display and logs only. Thread-safe.
  virtual int64_t WallMillis() const = 0;
  // The process-wide real clock; never destroyed.
  static Clock& Real();
};

// A clock that moves only when told. Thread-safe.
class FakeClock final : public Clock {
 public:
  explicit FakeClock(SteadyTime start = SteadyTime(std::chrono::hours(1)))
      : now_ns_(start.time_since_epoch().count()) {}
  SteadyTime Now() const override {
    return SteadyTime(std::chrono::steady_clock::duration(now_ns_.load()));
  }
  int64_t WallMillis() const override {
    return std::chrono::duration_cast<std::chrono::milliseconds>(Now().time_since_epoch()).count();
  }
  void Advance(std::chrono::nanoseconds delta) {
    now_ns_.fetch_add(
        std::chrono::duration_cast<std::chrono::steady_clock::duration>(delta).count());
  }

 private:
  std::atomic<std::chrono::steady_clock::duration::rep> now_ns_;
};

}  // namespace yuebing
