// yuebing-master: the metadata server of a yuebing cluster. Serves the control-plane gRPC protocol
// on --rpc_address:--rpc_port, Prometheus metrics, /health and a status page on --metrics_port,
// and optionally the transfer engine's HTTP metadata service. Flags follow mooncake_master's names
// and defaults. Prints "yuebing-master listening on rpc HOST:PORT metrics PORT" once every endpoint
// serves; on SIGINT/SIGTERM shuts everything down and exits 0.
// With --enable_ha the master joins a leader election through etcd (master/leader_election.h):
// only the leader serves; the others answer every RPC with UNAVAILABLE_IN_CURRENT_STATUS (-1010).
// Exit codes: 0 after a signal, 1 when an endpoint cannot be served (e.g. a port in use), 2 for
// bad flags, 3 when this master lost its leadership (lease not renewed in time, or its leader key
// gone); run it under a supervisor that restarts it, and it rejoins as a standby.
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <thread>
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
#include "absl/synchronization/notification.h"
#include "absl/time/time.h"
#include "master/admin_http_server.h"
#include "master/grpc_master_server.h"
#include "master/leader_election.h"
#include "master/master_metrics.h"
#include "security_flags.h"
#include "yuebing/common/config.h"
#include "yuebing/common/error_code.h"
#include "yuebing/common/http_metadata_server.h"
#include "yuebing/common/logging.h"
#include "yuebing/common/stop_signals.h"
#include "yuebing/master/master_service.h"

ABSL_FLAG(int32_t, rpc_port, 50051, "Port of the control-plane gRPC server (0 picks a free one).");
ABSL_FLAG(std::string, rpc_address, "0.0.0.0",
          "Address the gRPC server binds to; the metrics server binds to it too.");
ABSL_FLAG(int32_t, rpc_thread_num, 0,
          "Accepted for mooncake_master compatibility and not used: the gRPC server runs RPCs on "
          "its own pool, sized by the CPU count.");
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
          "How long a soft pin protects an object: milliseconds, or a duration such as 30m.");
ABSL_FLAG(double, eviction_high_watermark_ratio, 0.90,
          "Usage ratio above which the master evicts (0 < r <= 1).");
ABSL_FLAG(double, eviction_ratio, 0.05, "Fraction of objects each eviction pass frees (0..1).");
ABSL_FLAG(bool, allow_evict_soft_pinned_objects, true,
          "Whether eviction may take soft-pinned objects (after all unpinned ones).");
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

using yuebing::master::LeaderElection;
using yuebing::master::MasterOptions;
using yuebing::master::MasterService;

constexpr const char* kName = "yuebing-master";
constexpr auto kTickPeriod = absl::Milliseconds(100);

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

struct Config {
  MasterOptions master;
  std::string rpc_host;
  uint16_t rpc_port = 0;
  uint16_t metrics_port = 0;
  bool metadata_server = false;
  std::string metadata_host;
  uint16_t metadata_port = 0;
  bool ha = false;
  std::string etcd_endpoints;
  std::string cluster_id;
  std::string advertise_host;
  std::chrono::seconds lease_ttl{5};
  yuebing::MasterRpcSecurity security;  // security_flags.h
};

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
  return absl::OkStatus();
}

// Checks --etcd_endpoints ("host:port" or "http(s)://host:port", separated by ';') and
// --cluster_id.
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
  for (absl::string_view endpoint : absl::StrSplit(endpoints, ';')) {
    endpoint = absl::StripAsciiWhitespace(endpoint);
    absl::string_view hostport = endpoint;
    if (!absl::ConsumePrefix(&hostport, "http://")) absl::ConsumePrefix(&hostport, "https://");
    const size_t colon = hostport.rfind(':');
    uint32_t port = 0;
    if (colon == absl::string_view::npos || colon == 0 ||
        !absl::SimpleAtoi(hostport.substr(colon + 1), &port) || port == 0 || port > 65535) {
      return FlagError("etcd_endpoints",
                       absl::StrCat("'", endpoint, "' is not host:port or http://host:port"));
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<Config> ConfigFromFlags() {
  Config config;
  if (auto s = ReadDurations(&config.master); !s.ok()) return s;
  if (auto s = ReadEviction(&config.master); !s.ok()) return s;
  if (auto s = CheckHaFlags(); !s.ok()) return s;

  config.rpc_host = absl::GetFlag(FLAGS_rpc_address);
  if (auto s = CheckHost("rpc_address", config.rpc_host); !s.ok()) return s;
  auto rpc_port = PortFlag("rpc_port", absl::GetFlag(FLAGS_rpc_port));
  if (!rpc_port.ok()) return rpc_port.status();
  config.rpc_port = *rpc_port;
  auto metrics_port = PortFlag("metrics_port", absl::GetFlag(FLAGS_metrics_port));
  if (!metrics_port.ok()) return metrics_port.status();
  config.metrics_port = *metrics_port;

  const int32_t threads = absl::GetFlag(FLAGS_rpc_thread_num);
  if (threads < 0) return FlagError("rpc_thread_num", absl::StrCat("must be >= 0, got ", threads));

  config.metadata_server = absl::GetFlag(FLAGS_enable_http_metadata_server);
  config.metadata_host = absl::GetFlag(FLAGS_http_metadata_server_host);
  if (auto s = CheckHost("http_metadata_server_host", config.metadata_host); !s.ok()) return s;
  auto metadata_port =
      PortFlag("http_metadata_server_port", absl::GetFlag(FLAGS_http_metadata_server_port));
  if (!metadata_port.ok()) return metadata_port.status();
  config.metadata_port = *metadata_port;

  config.ha = absl::GetFlag(FLAGS_enable_ha);
  config.etcd_endpoints = absl::GetFlag(FLAGS_etcd_endpoints);
  config.cluster_id = absl::GetFlag(FLAGS_cluster_id);
  const int32_t ttl = absl::GetFlag(FLAGS_ha_lease_ttl_sec);
  if (ttl < 2 || ttl > 3600) {
    return FlagError("ha_lease_ttl_sec", absl::StrCat("must be 2..3600, got ", ttl));
  }
  config.lease_ttl = std::chrono::seconds(ttl);
  config.advertise_host = absl::GetFlag(FLAGS_rpc_advertise_address);
  if (!config.advertise_host.empty()) {
    if (auto s = CheckHost("rpc_advertise_address", config.advertise_host); !s.ok()) return s;
  } else if (config.rpc_host != "0.0.0.0" && config.rpc_host != "::" && config.rpc_host != "[::]") {
    config.advertise_host = config.rpc_host;
  } else {
    char name[256] = {};
    if (gethostname(name, sizeof(name) - 1) != 0 || name[0] == '\0') {
      config.advertise_host = "127.0.0.1";
    } else {
      config.advertise_host = name;
    }
  }
  auto security = yuebing::master::MasterSecurityFromFlags();
  if (!security.ok()) return security.status();
  config.security = *std::move(security);
  return config;
}

// "host:port" for gRPC; IPv6 literals get brackets.
std::string GrpcAddress(const std::string& host, uint16_t port) {
  if (host.find(':') != std::string::npos && host.front() != '[') {
    return absl::StrCat("[", host, "]:", port);
  }
  return absl::StrCat(host, ":", port);
}

// Runs MasterService::Tick() every kTickPeriod until destroyed.
class Ticker {
 public:
  explicit Ticker(MasterService* service)
      : thread_([this, service] {
          while (!stop_.WaitForNotificationWithTimeout(kTickPeriod)) service->Tick();
        }) {}
  ~Ticker() {
    stop_.Notify();
    thread_.join();
  }

 private:
  absl::Notification stop_;
  std::thread thread_;
};

int Fail(int code, const std::string& message) {
  std::fprintf(stderr, "%s: %s\n", kName, message.c_str());
  return code;
}

int Serve(const Config& config) {
  const sigset_t stop_signals = yuebing::BlockStopSignals();
  MasterService service(config.master);
  yuebing::master::MasterMetrics metrics;

  // With HA, RPCs are admitted only while the election says this master leads. A standby's
  // MasterService stays empty, so a new leader starts with no metadata.
  std::unique_ptr<LeaderElection> election;
  std::atomic<LeaderElection*> elected{nullptr};
  std::atomic<bool> lost_leadership{false};
  yuebing::master::GrpcMasterServer::Options rpc_options;
  rpc_options.metrics = &metrics;
  if (config.ha) {
    rpc_options.admit = [&elected]() -> absl::Status {
      LeaderElection* e = elected.load();
      if (e == nullptr) {
        return yuebing::MakeError(yuebing::ErrorCode::kUnavailableInCurrentStatus,
                                  "not the leader master; the election has not started");
      }
      return e->Admit();
    };
    rpc_options.term_provider = [&elected]() -> uint64_t {
      LeaderElection* e = elected.load();
      return e == nullptr ? 0 : e->term();
    };
  }
  yuebing::master::AdminHttpServer::Options admin_options;
  admin_options.term_provider = rpc_options.term_provider;
  rpc_options.security = config.security;
  auto rpc = yuebing::master::GrpcMasterServer::Start(GrpcAddress(config.rpc_host, config.rpc_port),
                                                      &service, rpc_options);
  if (!rpc.ok()) return Fail(1, absl::StrCat("rpc server: ", rpc.status().message()));
  auto admin = yuebing::master::AdminHttpServer::Start(config.rpc_host, config.metrics_port,
                                                       &service, &metrics, admin_options);
  if (!admin.ok()) return Fail(1, absl::StrCat("metrics server: ", admin.status().message()));
  std::unique_ptr<yuebing::HttpMetadataServer> metadata;
  if (config.metadata_server) {
    auto started = yuebing::HttpMetadataServer::Start(config.metadata_host, config.metadata_port);
    if (!started.ok()) {
      return Fail(1, absl::StrCat("http metadata server: ", started.status().message()));
    }
    metadata = std::move(started).value();
  }
  auto ticker = std::make_unique<Ticker>(&service);

  if (config.ha) {
    LeaderElection::Options ha;
    ha.etcd_endpoints = config.etcd_endpoints;
    ha.cluster_id = config.cluster_id;
    ha.advertise_address = GrpcAddress(config.advertise_host, (*rpc)->port());
    ha.lease_ttl = config.lease_ttl;
    auto started = LeaderElection::Start(ha, [&lost_leadership] {
      lost_leadership.store(true);
      kill(getpid(), SIGTERM);  // wakes WaitForStopSignal below
    });
    if (!started.ok()) return Fail(2, absl::StrCat("--enable_ha: ", started.status().message()));
    election = std::move(started).value();
    elected.store(election.get());
  }

  std::string line = absl::StrCat(kName, " listening on rpc ", config.rpc_host, ":", (*rpc)->port(),
                                  " metrics ", (*admin)->port());
  if (metadata != nullptr) {
    absl::StrAppend(&line, " metadata http://", config.metadata_host, ":", metadata->port(),
                    "/metadata");
  }
  if (election != nullptr) {
    absl::StrAppend(&line, " ha ", LeaderElection::LeaderKey(config.cluster_id), " as ",
                    GrpcAddress(config.advertise_host, (*rpc)->port()));
  }
  std::printf("%s\n", line.c_str());
  std::fflush(stdout);

  const int signal_number = yuebing::WaitForStopSignal(stop_signals);
  if (lost_leadership.load()) {
    YB_LOG_WARN("{}: lost the leadership, exiting", kName);
  } else {
    YB_LOG_INFO("{}: signal {}, shutting down", kName, signal_number);
  }
  // Stop serving and hand over (revoke the lease) before anything else.
  if (election != nullptr) election->Resign();
  ticker.reset();
  (*rpc)->Shutdown();
  admin->reset();
  metadata.reset();
  const auto stats = service.Stats();
  YB_LOG_INFO("{}: stopped with {} objects in {} segments", kName, stats.objects,
              stats.segments.size());
  return lost_leadership.load() ? 3 : 0;
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
  if (!AsksForUsage(argc, argv)) {
    std::atexit(ExitTwoOnFlagError);
    g_parsing_flags.store(true);
  }
  const std::vector<char*> positional = absl::ParseCommandLine(argc, argv);
  g_parsing_flags.store(false);
  if (positional.size() > 1) {
    return Fail(2, absl::StrCat("unexpected argument '", positional[1], "'"));
  }
  yuebing::InitLogging();

  absl::StatusOr<Config> config = ConfigFromFlags();
  if (!config.ok()) return Fail(2, std::string(config.status().message()));
  if (absl::GetFlag(FLAGS_rpc_thread_num) != 0) {
    YB_LOG_WARN("{}: --rpc_thread_num is accepted for compatibility and not used", kName);
  }
  if (!absl::GetFlag(FLAGS_etcd_endpoints).empty() && !absl::GetFlag(FLAGS_enable_ha)) {
    YB_LOG_WARN("{}: --etcd_endpoints is set but only used with --enable_ha", kName);
  }
  return Serve(*config);
}
