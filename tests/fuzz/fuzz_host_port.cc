// Fuzzes ParseHostPort (yuebing/common/host_port.h), with and without a default port: never
// crashes; a parsed result has a host within the length bound, and its ToString() parses back to
// the same result.
#include <cstdint>
#include <cstdlib>
#include <string>

#include "absl/strings/string_view.h"
#include "yuebing/common/host_port.h"

namespace {

void CheckRoundTrip(const absl::StatusOr<yuebing::HostPort>& parsed) {
  if (!parsed.ok()) return;
  if (parsed->host.empty() || parsed->host.size() > yuebing::HostPort::kMaxHostBytes ||
      parsed->host.find_first_of("[]") != std::string::npos) {
    std::abort();
  }
  absl::StatusOr<yuebing::HostPort> again = yuebing::ParseHostPort(parsed->ToString());
  if (!again.ok() || *again != *parsed) std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  absl::string_view text(reinterpret_cast<const char*>(data), size);
  CheckRoundTrip(yuebing::ParseHostPort(text));
  CheckRoundTrip(yuebing::ParseHostPort(text, 2379));
  return 0;
}
