#include "store/engine_port.h"

#include <cstdlib>
#include <random>

#include "absl/strings/numbers.h"
#include "yuebing/common/host_port.h"
#include "yuebing/common/logging.h"

namespace yuebing::store {
namespace {

std::optional<std::string> RealGetenv(const char* name) {
  const char* value = std::getenv(name);
  return value == nullptr ? std::nullopt : std::optional<std::string>(value);
}

std::optional<int> IntOf(const PortEnvLookup& getenv, const char* name) {
  const std::optional<std::string> text = getenv(name);
  int value = 0;
  if (!text.has_value() || !absl::SimpleAtoi(*text, &value)) return std::nullopt;
  return value;
}

}  // namespace

EnginePortRange EnginePortRangeFromEnvironment(const PortEnvLookup& getenv) {
  const PortEnvLookup& env = getenv != nullptr ? getenv : PortEnvLookup(RealGetenv);
  EnginePortRange range;
  const int min_port = IntOf(env, "MC_STORE_CLIENT_MIN_PORT").value_or(range.min_port);
  const int max_port = IntOf(env, "MC_STORE_CLIENT_MAX_PORT").value_or(range.max_port);
  if (min_port >= 1 && max_port <= 65535 && min_port <= max_port) {
    range.min_port = static_cast<uint16_t>(min_port);
    range.max_port = static_cast<uint16_t>(max_port);
  } else {
    YB_LOG_WARN("MC_STORE_CLIENT_MIN_PORT/MAX_PORT {}..{} is not a port range: using {}..{}",
                min_port, max_port, range.min_port, range.max_port);
  }
  const int attempts = IntOf(env, "MC_STORE_CLIENT_SETUP_RETRIES").value_or(range.attempts);
  if (attempts >= 1) range.attempts = attempts;
  return range;
}

absl::StatusOr<std::unique_ptr<transport::TransferEngine>> CreateEngineOnClientPort(
    transport::TransferEngineOptions options, const EnginePortRange& range) {
  const absl::StatusOr<HostPort> local = ParseHostPort(options.local_server_name, 0);
  if (!local.ok() || local->port != 0) return transport::TransferEngine::Create(options);
  const std::string as_given = options.local_server_name;
  std::mt19937 rng(std::random_device{}());
  std::uniform_int_distribution<int> pick(range.min_port, range.max_port);
  for (int attempt = 0; attempt < range.attempts; ++attempt) {
    options.local_server_name = HostPort{local->host, static_cast<uint16_t>(pick(rng))}.ToString();
    auto engine = transport::TransferEngine::Create(options);
    // kAlreadyExists: the port is taken (or its name is registered by another engine).
    if (engine.ok() || engine.status().code() != absl::StatusCode::kAlreadyExists) return engine;
  }
  YB_LOG_WARN("no free port in {}..{} after {} tries: the kernel picks one", range.min_port,
              range.max_port, range.attempts);
  options.local_server_name = as_given;
  return transport::TransferEngine::Create(options);
}

}  // namespace yuebing::store
