#include "yuebing/common/check.h"

#include <cstdio>
#include <cstdlib>

namespace yuebing::internal {

void CheckFailed(const char* file, int line, const char* condition, const char* message) noexcept {
  // stderr directly, unbuffered: the logger may be the broken part.
  std::fprintf(stderr, "yuebing: check failed at %s:%d: %s (%s)\n", file, line, condition, message);
  std::fflush(stderr);
  std::abort();
}

}  // namespace yuebing::internal
