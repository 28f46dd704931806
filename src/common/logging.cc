#include "yuebing/common/logging.h"

#include <cstdlib>
#include <mutex>
#include <string>

#include "spdlog/sinks/stdout_color_sinks.h"

namespace yuebing {

void InitLogging() {
  static std::once_flag once;
  std::call_once(once, [] {
    // Logs go to stderr: stdout belongs to the program (reports, READY lines).
    spdlog::set_default_logger(spdlog::stderr_color_mt("yuebing"));
    const char* level = std::getenv("YUEBING_LOG_LEVEL");
    spdlog::set_level(level != nullptr ? spdlog::level::from_str(level) : spdlog::level::info);
    spdlog::set_pattern("[%Y-%m-%d %H:%M:%S.%e] [%^%l%$] [%t] %v");
  });
}

}  // namespace yuebing
