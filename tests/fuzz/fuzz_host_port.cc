// Fuzzes ParseHostPort ("host", "host:port", "[v6]:port"): never crashes; a parsed result has a
// host, and "host:port" text rebuilt from it parses back to the same result.
#include <cstdint>
#include <cstdlib>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "transport/socket_util.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  absl::string_view text(reinterpret_cast<const char*>(data), size);
  absl::StatusOr<yuebing::transport::HostPort> parsed = yuebing::transport::ParseHostPort(text);
  if (!parsed.ok()) return 0;
  if (parsed->host.empty()) std::abort();
  if (!parsed->port.has_value() || parsed->host.find_first_of("[]") != std::string::npos) {
    return 0;
  }
  std::string rebuilt = parsed->host.find(':') == std::string::npos
                            ? absl::StrCat(parsed->host, ":", *parsed->port)
                            : absl::StrCat("[", parsed->host, "]:", *parsed->port);
  absl::StatusOr<yuebing::transport::HostPort> again = yuebing::transport::ParseHostPort(rebuilt);
  if (!again.ok() || again->host != parsed->host || again->port != parsed->port) std::abort();
  return 0;
}
