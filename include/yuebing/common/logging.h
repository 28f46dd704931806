// Logging: thin macros over spdlog so call sites stay independent of the backend.
// Level from the YUEBING_LOG_LEVEL environment variable (trace, debug, info, warn, error, off);
// default "info". Thread-safe.
#pragma once

#include <spdlog/spdlog.h>

namespace yuebing {
// Applies YUEBING_LOG_LEVEL once; called by the macros' first use implicitly via InitLogging().
void InitLogging();
}  // namespace yuebing

#define YB_LOG_DEBUG(...) SPDLOG_DEBUG(__VA_ARGS__)
#define YB_LOG_INFO(...) SPDLOG_INFO(__VA_ARGS__)
#define YB_LOG_WARN(...) SPDLOG_WARN(__VA_ARGS__)
#define YB_LOG_ERROR(...) SPDLOG_ERROR(__VA_ARGS__)
