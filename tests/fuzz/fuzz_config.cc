// Fuzzes the configuration parsers: ParseSize/ParseDuration never crash on any text, and
// FormatSize output of the first 8 input bytes (as a byte count) parses back to within the
// rounding of its two decimals.
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>

#include "absl/strings/string_view.h"
#include "yuebing/common/config.h"

namespace {

// FormatSize goes up to EiB; ParseSize stops at TiB, so larger counts are not round-tripped.
constexpr uint64_t kLargestParsableUnit = uint64_t{1} << 40;

void CheckFormatRoundTrip(uint64_t bytes) {
  std::string text = yuebing::FormatSize(bytes);
  if (bytes >= kLargestParsableUnit * 1024) return;
  absl::StatusOr<uint64_t> parsed = yuebing::ParseSize(text);
  if (!parsed.ok()) std::abort();
  // Two decimals of the shown unit: off by at most half a hundredth of a unit (<= 0.5%), plus
  // the flooring of the bound and of the parse.
  const uint64_t diff = *parsed > bytes ? *parsed - bytes : bytes - *parsed;
  if (diff > bytes / 200 + 2) std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  absl::string_view text(reinterpret_cast<const char*>(data), size);
  absl::StatusOr<uint64_t> bytes = yuebing::ParseSize(text);
  if (bytes.ok()) (void)yuebing::FormatSize(*bytes);
  absl::StatusOr<std::chrono::nanoseconds> duration = yuebing::ParseDuration(text);
  if (duration.ok() && duration->count() < 0) std::abort();
  uint64_t raw = 0;
  std::memcpy(&raw, data, size < sizeof(raw) ? size : sizeof(raw));
  CheckFormatRoundTrip(raw);
  if (bytes.ok()) CheckFormatRoundTrip(*bytes);
  return 0;
}
