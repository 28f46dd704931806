#include "yuebing/common/clock.h"

namespace yuebing {
namespace {

class RealClock final : public Clock {
 public:
  SteadyTime Now() const override { return std::chrono::steady_clock::now(); }
  int64_t WallMillis() const override {
    return std::chrono::duration_cast<std::chrono::milliseconds>(
               std::chrono::system_clock::now().time_since_epoch())
        .count();
  }
};

}  // namespace

Clock& Clock::Real() {
  static RealClock* clock = new RealClock();
  return *clock;
}

}  // namespace yuebing
