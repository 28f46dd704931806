#include "store/fault_point.h"

#include <signal.h>

#include <cstdlib>
#include <cstring>

namespace yuebing::store {

void FaultPoint(const char* point) {
  static const char* const configured = std::getenv("YUEBING_TEST_FAULT_POINT");
  if (configured != nullptr && std::strcmp(configured, point) == 0) raise(SIGKILL);
}

}  // namespace yuebing::store
