// yuebing-master: the metadata server of a yuebing cluster. Serves the control-plane gRPC protocol
// on --rpc_address:--rpc_port, Prometheus metrics, /health and a status page on --metrics_port,
// and optionally the transfer engine's HTTP metadata service. Flags follow mooncake_master's names
// and defaults. Prints "yuebing-master listening on rpc HOST:PORT metrics PORT" once every endpoint
// serves; on SIGINT/SIGTERM shuts everything down and exits 0.
// The process itself is a master::MasterServer (master/master_server.h); this file turns flags into
// its options and waits for a signal or the end of its leadership.
// With --enable_ha the master joins a leader election through etcd (master/leader_election.h):
// only the leader serves; the others answer every RPC with UNAVAILABLE_IN_CURRENT_STATUS (-1010).
// Exit codes: 0 after a signal, 1 when an endpoint cannot be served (e.g. a port in use), 2 for
// bad flags, 3 when this master lost its leadership (lease not renewed in time, or its leader key
// gone); run it under a supervisor that restarts it, and it rejoins as a standby.
#include <signal.h>
#include <time.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <utility>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/flags/usage.h"
#include "absl/flags/usage_config.h"
#include "absl/status/statusor.h"
#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/time/time.h"
#include "master/master_server.h"
#include "master/tenant_policy.h"
#include "master/upstream_master_flags.h"
#include "security_flags.h"
#include "yuebing/common/config.h"
#include "yuebing/common/host_port.h"
#include "yuebing/common/logging.h"
#include "yuebing/common/stop_signals.h"
#include "yuebing/master/master_service.h"

ABSL_FLAG(int32_t, rpc_port, 50051, "Port of the control-plane gRPC server (0 picks a free one).");
ABSL_FLAG(std::string, rpc_address, "0.0.0.0",
          "Address the gRPC server binds to; the metrics server binds to it too.");
ABSL_FLAG(int32_t, rpc_thread_num, 0,
          "Accepted for mooncake_master compatibility and not used: the gRPC server runs RPCs on "
          "its own pool, sized by the CPU count.");
ABSL_FLAG(bool, enable_fast_rpc, true,
          "Also serve the hot calls (put, get, exist, remove) as plain framed TCP on "
          "--fast_rpc_port, which clients find through the Describe RPC; never served with a "
          "cluster secret or TLS.");
ABSL_FLAG(int32_t, fast_rpc_port, 0, "Port of the fast path (0 picks a free one).");
ABSL_FLAG(int32_t, metrics_port, 9003,
          "Port of the HTTP server for /metrics, /health and the status page (0 picks one).");
ABSL_FLAG(bool, enable_http_metadata_server, false,
          "Serve the transfer engine's HTTP metadata service (/metadata) from this process.");
ABSL_FLAG(int32_t, http_metadata_server_port, 8080, "Port of the embedded HTTP metadata server.");
ABSL_FLAG(std::string, http_metadata_server_host, "0.0.0.0",
          "Address the embedded HTTP metadata server binds to.");
ABSL_FLAG(std::string, default_kv_lease_ttl, "10000",
          "Read lease granted by each GetReplicaList: milliseconds, or a duration such as 10s.");
ABSL_FLAG(std::string, default_kv_soft_pin_ttl, "1800000",
          "How long a soft pin protects an object when its put names no TTL: milliseconds, or a "
          "duration such as 30m.");
ABSL_FLAG(std::string, max_kv_soft_pin_ttl, "86400000",
          "The longest soft-pin TTL a put may ask for (ReplicateConfig.soft_pin_ttl_ms): "
          "milliseconds, or a duration such as 24h.");
ABSL_FLAG(double, eviction_high_watermark_ratio, 0.90,
          "Usage ratio above which the master evicts (0 < r <= 1).");
ABSL_FLAG(double, eviction_ratio, 0.05, "Fraction of objects each eviction pass frees (0..1).");
ABSL_FLAG(bool, allow_evict_soft_pinned_objects, true,
          "Whether eviction may take soft-pinned objects (after all unpinned ones).");
ABSL_FLAG(bool, lazy_eviction, true,
          "Objects an eviction pass chooses stay readable until a put needs their memory "
          "(false: freed by the pass, as upstream).");
ABSL_FLAG(bool, promotion_on_hit, false,
          "Bring a disk-only object (a store's --ssd_path tier) back to memory once it was read "
          "--promotion_admission_threshold times; its store copies it.");
ABSL_FLAG(int32_t, promotion_admission_threshold, 2,
          "With --promotion_on_hit: reads of a disk-only object before it is promoted (>= 1; "
          "1 promotes on the first read).");
ABSL_FLAG(int32_t, promotion_queue_limit, 50000,
          "With --promotion_on_hit: promotions waiting for their stores at most (>= 1).");
ABSL_FLAG(int32_t, promotion_max_per_heartbeat, 1,
          "With --promotion_on_hit: promotions handed to one store per disk-tier sync (>= 1; a "
          "store syncs again at once while it gets work).");
ABSL_FLAG(bool, enable_multi_tenants, false,
          "Tenant quotas: a tenant writes to memory only with a quota policy and within it "
          "(tenants' keys are apart either way).");
ABSL_FLAG(std::string, tenant_quota_connector_type, "file",
          "Where tenant quota policies live: 'file' (a YAML document).");
ABSL_FLAG(std::string, tenant_quota_connector_uri, "",
          "With --enable_multi_tenants: the policy file (read at start, rewritten by the admin "
          "API's PUT/DELETE /api/v1/tenant_quotas).");
ABSL_FLAG(std::string, client_ttl, "10",
          "A client silent this long is dropped with its segments: seconds, or a duration.");
ABSL_FLAG(std::string, put_start_discard_timeout_sec, "30",
          "An unfinished put this old may be taken over by another writer: seconds or duration.");
ABSL_FLAG(std::string, put_start_release_timeout_sec, "600",
          "An unfinished put this old is revoked and its space freed: seconds or duration.");
ABSL_FLAG(bool, enable_ha, false,
          "High availability: elect one leader among the masters of --cluster_id through etcd "
          "(--etcd_endpoints); the others stand by and refuse RPCs until the leader is gone.");
ABSL_FLAG(std::string, etcd_endpoints, "",
          "etcd endpoints for HA, separated by ';' (host:port or http://host:port).");
ABSL_FLAG(std::string, cluster_id, "mooncake_cluster",
          "Cluster name used for HA keys in etcd (yuebing/<cluster_id>/master/leader).");
ABSL_FLAG(std::string, rpc_advertise_address, "",
          "With --enable_ha: the host clients should dial, published in etcd with the rpc port. "
          "Default: --rpc_address, or this machine's host name when that is 0.0.0.0 or ::.");
ABSL_FLAG(int32_t, ha_lease_ttl_sec, 5,
          "With --enable_ha: TTL of the leader's etcd lease in seconds (>= 2). A dead leader is "
          "replaced after about this long; a leader that cannot renew stops serving before it.");

namespace {

using yuebing::master::MasterOptions;
using yuebing::master::MasterServer;

constexpr const char* kName = "yuebing-master";

// absl::ParseCommandLine exits with status 1 on a bad flag; this tool promises 2. While flags are
// parsed, an exit runs this handler, which turns it into exit status 2.
std::atomic<bool> g_parsing_flags{false};
void ExitTwoOnFlagError() {
  if (g_parsing_flags.load()) std::_Exit(2);
}

// True when argv asks for help or the version: absl prints it and exits on its own terms.
bool AsksForUsage(int argc, char** argv) {
  for (int i = 1; i < argc; ++i) {
    absl::string_view arg(argv[i]);
    if (arg == "--") break;
    arg = absl::StripPrefix(absl::StripPrefix(arg, "-"), "-");
    if (absl::StartsWith(arg, "help") || absl::StartsWith(arg, "version") ||
        absl::StartsWith(arg, "only_check_args")) {
      return true;
    }
  }
  return false;
}

absl::Status FlagError(absl::string_view flag, absl::string_view message) {
  return absl::InvalidArgumentError(absl::StrCat("--", flag, ": ", message));
}

absl::StatusOr<uint16_t> PortFlag(absl::string_view flag, int32_t value) {
  if (value < 0 || value > 65535) {
    return FlagError(flag, absl::StrCat("must be 0..65535, got ", value));
  }
  return static_cast<uint16_t>(value);
}

// A duration flag; a bare number is in `bare_unit` ("ms" or "s").
absl::StatusOr<std::chrono::milliseconds> DurationFlag(absl::string_view flag,
                                                       const std::string& text,
                                                       absl::string_view bare_unit) {
  std::string spelled(absl::StripAsciiWhitespace(text));
  if (!spelled.empty() &&
      (absl::ascii_isdigit(static_cast<unsigned char>(spelled.back())) || spelled.back() == '.')) {
    absl::StrAppend(&spelled, bare_unit);
  }
  absl::StatusOr<std::chrono::nanoseconds> duration = yuebing::ParseDuration(spelled);
  if (!duration.ok()) return FlagError(flag, duration.status().message());
  const auto ms = std::chrono::ceil<std::chrono::milliseconds>(*duration);
  return ms;
}

absl::Status CheckPositive(absl::string_view flag, std::chrono::milliseconds value) {
  if (value.count() <= 0) return FlagError(flag, "must be greater than zero");
  return absl::OkStatus();
}

absl::Status CheckHost(absl::string_view flag, const std::string& host) {
  if (host.empty()) return FlagError(flag, "must not be empty");
  for (char c : host) {
    if (absl::ascii_isspace(static_cast<unsigned char>(c)) || c == '/') {
      return FlagError(flag, absl::StrCat("'", host, "' is not a host name or address"));
    }
  }
  return absl::OkStatus();
}

absl::Status ReadDurations(MasterOptions* options) {
  auto lease =
      DurationFlag("default_kv_lease_ttl", absl::GetFlag(FLAGS_default_kv_lease_ttl), "ms");
  if (!lease.ok()) return lease.status();
  auto soft_pin =
      DurationFlag("default_kv_soft_pin_ttl", absl::GetFlag(FLAGS_default_kv_soft_pin_ttl), "ms");
  if (!soft_pin.ok()) return soft_pin.status();
  auto max_soft_pin =
      DurationFlag("max_kv_soft_pin_ttl", absl::GetFlag(FLAGS_max_kv_soft_pin_ttl), "ms");
  if (!max_soft_pin.ok()) return max_soft_pin.status();
  if (*soft_pin > *max_soft_pin) {
    return FlagError("default_kv_soft_pin_ttl", "must not be longer than --max_kv_soft_pin_ttl");
  }
  auto client_ttl = DurationFlag("client_ttl", absl::GetFlag(FLAGS_client_ttl), "s");
  if (!client_ttl.ok()) return client_ttl.status();
  if (auto s = CheckPositive("client_ttl", *client_ttl); !s.ok()) return s;
  auto discard = DurationFlag("put_start_discard_timeout_sec",
                              absl::GetFlag(FLAGS_put_start_discard_timeout_sec), "s");
  if (!discard.ok()) return discard.status();
  if (auto s = CheckPositive("put_start_discard_timeout_sec", *discard); !s.ok()) return s;
  auto release = DurationFlag("put_start_release_timeout_sec",
                              absl::GetFlag(FLAGS_put_start_release_timeout_sec), "s");
  if (!release.ok()) return release.status();
  if (*release < *discard) {
    return FlagError("put_start_release_timeout_sec",
                     "must not be shorter than --put_start_discard_timeout_sec");
  }
  options->default_kv_lease_ttl = *lease;
  options->default_kv_soft_pin_ttl = *soft_pin;
  options->max_kv_soft_pin_ttl = *max_soft_pin;
  options->client_ttl = *client_ttl;
  options->put_start_discard_timeout = *discard;
  options->put_start_release_timeout = *release;
  return absl::OkStatus();
}

absl::Status ReadEviction(MasterOptions* options) {
  const double high = absl::GetFlag(FLAGS_eviction_high_watermark_ratio);
  if (!(high > 0.0 && high <= 1.0)) {
    return FlagError("eviction_high_watermark_ratio",
                     absl::StrCat("must be in (0, 1], got ", high));
  }
  const double ratio = absl::GetFlag(FLAGS_eviction_ratio);
  if (!(ratio >= 0.0 && ratio <= 1.0)) {
    return FlagError("eviction_ratio", absl::StrCat("must be in [0, 1], got ", ratio));
  }
  options->eviction_high_watermark_ratio = high;
  options->eviction_ratio = ratio;
  options->allow_evict_soft_pinned_objects = absl::GetFlag(FLAGS_allow_evict_soft_pinned_objects);
  options->lazy_eviction = absl::GetFlag(FLAGS_lazy_eviction);
  return absl::OkStatus();
}

absl::Status ReadPromotion(MasterOptions* options) {
  const int32_t threshold = absl::GetFlag(FLAGS_promotion_admission_threshold);
  const int32_t limit = absl::GetFlag(FLAGS_promotion_queue_limit);
  const int32_t per_sync = absl::GetFlag(FLAGS_promotion_max_per_heartbeat);
  if (threshold < 1) {
    return FlagError("promotion_admission_threshold",
                     absl::StrCat("must be >= 1, got ", threshold));
  }
  if (limit < 1)
    return FlagError("promotion_queue_limit", absl::StrCat("must be >= 1, got ", limit));
  if (per_sync < 1) {
    return FlagError("promotion_max_per_heartbeat", absl::StrCat("must be >= 1, got ", per_sync));
  }
  options->promotion_on_hit = absl::GetFlag(FLAGS_promotion_on_hit);
  options->promotion_admission_threshold = static_cast<uint32_t>(threshold);
  options->promotion_queue_limit = static_cast<uint32_t>(limit);
  options->promotion_max_per_sync = static_cast<uint32_t>(per_sync);
  return absl::OkStatus();
}

// --enable_multi_tenants and the policy file it reads.
absl::Status ReadTenants(MasterOptions* options) {
  options->multi_tenant = absl::GetFlag(FLAGS_enable_multi_tenants);
  if (!options->multi_tenant) return absl::OkStatus();
  const std::string type = absl::GetFlag(FLAGS_tenant_quota_connector_type);
  if (type != "file") {
    return FlagError("tenant_quota_connector_type",
                     absl::StrCat("unsupported tenant quota connector type '", type,
                                  "' (yuebing keeps policies in a file: 'file')"));
  }
  const std::string path = absl::GetFlag(FLAGS_tenant_quota_connector_uri);
  if (path.empty()) {
    return FlagError("tenant_quota_connector_uri",
                     "tenant quota file connector requires a non-empty uri");
  }
  absl::StatusOr<yuebing::master::TenantPolicy> policy = yuebing::master::LoadTenantPolicy(path);
  if (!policy.ok()) {
    return FlagError(
        "tenant_quota_connector_uri",
        absl::StrCat("failed to load tenant quota policy: ", policy.status().message()));
  }
  options->tenant_quotas.insert(policy->begin(), policy->end());
  options->tenant_policy_path = path;
  return absl::OkStatus();
}

// Checks --etcd_endpoints ("host:port" or "http(s)://host:port", separated by ';' or ',';
// hosts and ports as ParseHostPort reads them) and --cluster_id.
absl::Status CheckHaFlags() {
  const std::string cluster_id = absl::GetFlag(FLAGS_cluster_id);
  if (cluster_id.empty()) return FlagError("cluster_id", "must not be empty");
  for (char c : cluster_id) {
    if (!absl::ascii_isalnum(static_cast<unsigned char>(c)) && c != '_' && c != '-' && c != '.') {
      return FlagError("cluster_id", "may hold only letters, digits, '_', '-' and '.'");
    }
  }
  const std::string endpoints = absl::GetFlag(FLAGS_etcd_endpoints);
  if (absl::GetFlag(FLAGS_enable_ha) && endpoints.empty()) {
    return FlagError("etcd_endpoints", "must be set when --enable_ha is true");
  }
  if (endpoints.empty()) return absl::OkStatus();
  for (absl::string_view endpoint : absl::StrSplit(endpoints, absl::ByAnyChar(";,"))) {
    endpoint = absl::StripAsciiWhitespace(endpoint);
    absl::string_view hostport = endpoint;
    if (!absl::ConsumePrefix(&hostport, "http://")) absl::ConsumePrefix(&hostport, "https://");
    const absl::StatusOr<yuebing::HostPort> parsed = yuebing::ParseHostPort(hostport);
    if (!parsed.ok() || parsed->port == 0) {
      return FlagError("etcd_endpoints",
                       absl::StrCat("'", endpoint, "' is not host:port or http://host:port"));
    }
  }
  return absl::OkStatus();
}

// The server's options from the flags. Errors: kInvalidArgument naming the flag.
absl::StatusOr<MasterServer::Options> OptionsFromFlags() {
  MasterServer::Options options;
  if (auto s = ReadDurations(&options.master); !s.ok()) return s;
  if (auto s = ReadEviction(&options.master); !s.ok()) return s;
  if (auto s = ReadPromotion(&options.master); !s.ok()) return s;
  if (auto s = ReadTenants(&options.master); !s.ok()) return s;
  if (auto s = CheckHaFlags(); !s.ok()) return s;

  options.rpc_host = absl::GetFlag(FLAGS_rpc_address);
  if (auto s = CheckHost("rpc_address", options.rpc_host); !s.ok()) return s;
  auto rpc_port = PortFlag("rpc_port", absl::GetFlag(FLAGS_rpc_port));
  if (!rpc_port.ok()) return rpc_port.status();
  options.rpc_port = *rpc_port;
  auto metrics_port = PortFlag("metrics_port", absl::GetFlag(FLAGS_metrics_port));
  if (!metrics_port.ok()) return metrics_port.status();
  options.metrics_port = *metrics_port;
  options.fast_rpc = absl::GetFlag(FLAGS_enable_fast_rpc);
  auto fast_rpc_port = PortFlag("fast_rpc_port", absl::GetFlag(FLAGS_fast_rpc_port));
  if (!fast_rpc_port.ok()) return fast_rpc_port.status();
  options.fast_rpc_port = *fast_rpc_port;

  const int32_t threads = absl::GetFlag(FLAGS_rpc_thread_num);
  if (threads < 0) return FlagError("rpc_thread_num", absl::StrCat("must be >= 0, got ", threads));

  options.http_metadata_server = absl::GetFlag(FLAGS_enable_http_metadata_server);
  options.metadata_host = absl::GetFlag(FLAGS_http_metadata_server_host);
  if (auto s = CheckHost("http_metadata_server_host", options.metadata_host); !s.ok()) return s;
  auto metadata_port =
      PortFlag("http_metadata_server_port", absl::GetFlag(FLAGS_http_metadata_server_port));
  if (!metadata_port.ok()) return metadata_port.status();
  options.metadata_port = *metadata_port;

  options.ha = absl::GetFlag(FLAGS_enable_ha);
  options.etcd_endpoints = absl::GetFlag(FLAGS_etcd_endpoints);
  options.cluster_id = absl::GetFlag(FLAGS_cluster_id);
  const int32_t ttl = absl::GetFlag(FLAGS_ha_lease_ttl_sec);
  if (ttl < 2 || ttl > 3600) {
    return FlagError("ha_lease_ttl_sec", absl::StrCat("must be 2..3600, got ", ttl));
  }
  options.lease_ttl = std::chrono::seconds(ttl);
  options.advertise_host = absl::GetFlag(FLAGS_rpc_advertise_address);
  if (!options.advertise_host.empty()) {
    if (auto s = CheckHost("rpc_advertise_address", options.advertise_host); !s.ok()) return s;
  }
  auto security = yuebing::master::MasterSecurityFromFlags();
  if (!security.ok()) return security.status();
  options.security = *std::move(security);
  return options;
}

int Fail(int code, const std::string& message) {
  std::fprintf(stderr, "%s: %s\n", kName, message.c_str());
  return code;
}

// Waits up to 100 ms for SIGINT/SIGTERM (blocked by BlockStopSignals); returns it, or 0.
int PollStopSignal(const sigset_t& signals) {
  const timespec timeout = {0, 100 * 1000 * 1000};
  const int signal_number = sigtimedwait(&signals, nullptr, &timeout);
  return signal_number > 0 ? signal_number : 0;
}

// Runs the server until a stop signal (exit 0) or the loss of the leadership (exit 3).
int Serve(MasterServer::Options options) {
  const sigset_t stop_signals = yuebing::BlockStopSignals();
  auto server = MasterServer::Start(std::move(options));
  if (!server.ok()) {
    // kInvalidArgument: the HA settings cannot work; otherwise an endpoint cannot be served.
    if (server.status().code() == absl::StatusCode::kInvalidArgument) {
      return Fail(2, absl::StrCat("--enable_ha: ", server.status().message()));
    }
    return Fail(1, std::string(server.status().message()));
  }
  std::printf("%s listening on %s\n", kName, (*server)->Endpoints().c_str());
  std::fflush(stdout);

  int signal_number = 0;
  while (signal_number == 0 &&
         (*server)->Wait(absl::ZeroDuration()) != MasterServer::End::kLeadershipLost) {
    signal_number = PollStopSignal(stop_signals);
  }
  const bool lost = (*server)->Wait(absl::ZeroDuration()) == MasterServer::End::kLeadershipLost;
  if (lost) {
    YB_LOG_WARN("{}: lost the leadership, exiting", kName);
  } else {
    YB_LOG_INFO("{}: signal {}, shutting down", kName, signal_number);
  }
  (*server)->Stop();
  const auto stats = (*server)->Stats();
  YB_LOG_INFO("{}: stopped with {} objects in {} segments", kName, stats.objects,
              stats.segments.size());
  return lost ? 3 : 0;
}

}  // namespace

int main(int argc, char** argv) {
  absl::SetProgramUsageMessage(
      "The yuebing master: segment registry, object index, leases and eviction for a yuebing\n"
      "(Mooncake-compatible) KV cache cluster.\n"
      "Usage: yuebing-master [--rpc_port=50051] [--metrics_port=9003] "
      "[--enable_http_metadata_server]");
  // --help lists this file's flags (by default absl matches files named like the binary).
  absl::FlagsUsageConfig usage_config;
  usage_config.contains_help_flags = [](absl::string_view path) {
    return absl::EndsWith(path, "master/main.cc");
  };
  usage_config.contains_helpshort_flags = usage_config.contains_help_flags;
  absl::SetFlagsUsageConfig(usage_config);
  // mooncake_master's flags: renamed, dropped with a warning, or refused (upstream_master_flags.h).
  absl::StatusOr<yuebing::master::TranslatedFlags> translated =
      yuebing::master::TranslateUpstreamMasterFlags(std::vector<std::string>(argv, argv + argc));
  if (!translated.ok()) return Fail(2, std::string(translated.status().message()));
  std::vector<char*> args;
  for (std::string& arg : translated->argv) args.push_back(arg.data());
  if (!AsksForUsage(static_cast<int>(args.size()), args.data())) {
    std::atexit(ExitTwoOnFlagError);
    g_parsing_flags.store(true);
  }
  const std::vector<char*> positional =
      absl::ParseCommandLine(static_cast<int>(args.size()), args.data());
  g_parsing_flags.store(false);
  if (positional.size() > 1) {
    return Fail(2, absl::StrCat("unexpected argument '", positional[1], "'"));
  }
  yuebing::InitLogging();
  for (const std::string& warning : translated->warnings) YB_LOG_WARN("{}: {}", kName, warning);

  absl::StatusOr<MasterServer::Options> options = OptionsFromFlags();
  if (!options.ok()) return Fail(2, std::string(options.status().message()));
  if (absl::GetFlag(FLAGS_rpc_thread_num) != 0) {
    YB_LOG_WARN("{}: --rpc_thread_num is accepted for compatibility and not used", kName);
  }
  if (!absl::GetFlag(FLAGS_etcd_endpoints).empty() && !absl::GetFlag(FLAGS_enable_ha)) {
    YB_LOG_WARN("{}: --etcd_endpoints is set but only used with --enable_ha", kName);
  }
  return Serve(*std::move(options));
}
