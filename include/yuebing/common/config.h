// Parsing of human-written configuration values: sizes ("16MB", "1 GB", "4KiB", "1048576") and
// durations ("500ms", "10s", "2m", "1.5s", "250us"). Thread-safe (pure functions).
#pragma once

#include <chrono>
#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace yuebing {

// Parses a byte size. Units are case-insensitive and may be separated by spaces: B, K/KB/KiB,
// M/MB/MiB, G/GB/GiB, T/TB/TiB, P/PB/PiB, E/EB/EiB. Like Mooncake, "KB"/"MB"/"GB" mean powers of
// 1024. A bare number is bytes. Fractions are allowed with a unit ("1.5GB"). Errors:
// kInvalidArgument for empty, negative, malformed or overflowing input.
absl::StatusOr<uint64_t> ParseSize(absl::string_view text);

// Formats a byte count for humans, e.g. 1536 -> "1.50 KiB".
std::string FormatSize(uint64_t bytes);

// Parses a duration: a number followed by ns, us, ms, s, m or h (a bare number means
// milliseconds, as Mooncake's *_ttl flags). Errors: kInvalidArgument.
absl::StatusOr<std::chrono::nanoseconds> ParseDuration(absl::string_view text);

// Parses a boolean as Mooncake's configuration does: case-insensitive, surrounding whitespace
// ignored; "1", "true", "yes", "on", "enable" are true; "0", "false", "no", "off", "disable" and
// "" are false.
// Errors: kInvalidArgument for anything else.
absl::StatusOr<bool> ParseBool(absl::string_view text);

// Parses an environment variable with ParseSize; returns `fallback` when the variable is unset
// and kInvalidArgument (naming the variable) when it is set but malformed.
absl::StatusOr<uint64_t> SizeFromEnv(const char* name, uint64_t fallback);

}  // namespace yuebing
