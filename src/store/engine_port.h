// Where a store client's transfer engine listens when ClientConfig::local_hostname names no port,
// picked as upstream Mooncake's store client picks it: a random port in
// [MC_STORE_CLIENT_MIN_PORT, MC_STORE_CLIENT_MAX_PORT] (12300..14300 when unset or invalid), and
// another one while the one picked is taken, up to MC_STORE_CLIENT_SETUP_RETRIES (20) tries.
// Where upstream then fails the setup, yuebing lets the kernel pick a port.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "absl/status/statusor.h"
#include "yuebing/transport/transfer_engine.h"

namespace yuebing::store {

struct EnginePortRange {
  uint16_t min_port = 12300;
  uint16_t max_port = 14300;
  int attempts = 20;
};

// The range and tries from the environment (`getenv` nullptr: the process's). A bound that is
// not a number is unset; bounds outside 1..65535 or min above max give the default range;
// tries below 1 give 20.
using PortEnvLookup = std::function<std::optional<std::string>(const char* name)>;
EnginePortRange EnginePortRangeFromEnvironment(const PortEnvLookup& getenv = nullptr);

// Creates the engine of `options`; when options.local_server_name names no port (or port 0), on
// a port of `range` as described above.
absl::StatusOr<std::unique_ptr<transport::TransferEngine>> CreateEngineOnClientPort(
    transport::TransferEngineOptions options, const EnginePortRange& range);

}  // namespace yuebing::store
