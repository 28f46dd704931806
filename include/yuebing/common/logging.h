// Logging: thin macros over spdlog so call sites stay independent of the backend.
// Level from the YUEBING_LOG_LEVEL environment variable (trace, debug, info, warn, error, off);
// default "info". Thread-safe.
#pragma once

#include <spdlog/spdlog.h>

#include "absl/strings/string_view.h"

// Debian's Abseil has its own string_view type (not std::string_view); let fmt print it, so
// status.message() can be logged directly.
template <>
struct fmt::formatter<absl::string_view> : fmt::formatter<fmt::string_view> {
  template <typename FormatContext>
  auto format(absl::string_view text, FormatContext& ctx) const {
    return fmt::formatter<fmt::string_view>::format(fmt::string_view(text.data(), text.size()),
                                                    ctx);
  }
};

namespace yuebing {
// Applies YUEBING_LOG_LEVEL once; called by the macros' first use implicitly via InitLogging().
void InitLogging();
}  // namespace yuebing

// Filtered at run time (YUEBING_LOG_LEVEL), so debug lines exist in release builds too.
#define YB_LOG_DEBUG(...) ::spdlog::debug(__VA_ARGS__)
#define YB_LOG_INFO(...) ::spdlog::info(__VA_ARGS__)
#define YB_LOG_WARN(...) ::spdlog::warn(__VA_ARGS__)
#define YB_LOG_ERROR(...) ::spdlog::error(__VA_ARGS__)
