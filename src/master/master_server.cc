#include "master/master_server.h"

#include <unistd.h>

#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "master/admin_http_server.h"
#include "master/fast_rpc_server.h"
#include "master/grpc_master_server.h"
#include "master/leader_election.h"
#include "master/master_metrics.h"
#include "yuebing/common/error_code.h"
#include "yuebing/common/host_port.h"
#include "yuebing/common/logging.h"

namespace yuebing::master {
namespace {

constexpr auto kTickPeriod = absl::Milliseconds(100);

// "host:port" for gRPC; IPv6 literals get brackets (`host` may come with them or without).
std::string GrpcAddress(absl::string_view host, uint16_t port) {
  if (absl::ConsumePrefix(&host, "[")) absl::ConsumeSuffix(&host, "]");
  return HostPort{std::string(host), port}.ToString();
}

// The host published in etcd: the option, else rpc_host unless it is a wildcard, else this
// machine's host name (127.0.0.1 when it has none).
std::string AdvertiseHost(const MasterServer::Options& options) {
  if (!options.advertise_host.empty()) return options.advertise_host;
  const std::string& host = options.rpc_host;
  if (host != "0.0.0.0" && host != "::" && host != "[::]") return host;
  char name[256] = {};
  if (gethostname(name, sizeof(name) - 1) != 0 || name[0] == '\0') return "127.0.0.1";
  return name;
}

}  // namespace

absl::StatusOr<std::unique_ptr<MasterServer>> MasterServer::Start(Options options) {
  std::unique_ptr<MasterServer> server(new MasterServer(std::move(options)));
  absl::Status served = server->Serve();
  if (!served.ok()) {
    server->Stop();
    return served;
  }
  return server;
}

MasterServer::MasterServer(Options options) : options_(std::move(options)) {}

MasterServer::~MasterServer() { Stop(); }

absl::Status MasterServer::Serve() {
  service_ = std::make_unique<MasterService>(options_.master);
  metrics_ = std::make_unique<MasterMetrics>();
  GrpcMasterServer::Options rpc_options;
  rpc_options.metrics = metrics_.get();
  rpc_options.security = options_.security;
  if (options_.ha) {
    rpc_options.admit = [this]() -> absl::Status {
      LeaderElection* election = elected_.load();
      if (election == nullptr) {
        return MakeError(ErrorCode::kUnavailableInCurrentStatus,
                         "not the leader master; the election has not started");
      }
      return election->Admit();
    };
    rpc_options.term_provider = [this]() -> uint64_t { return term(); };
  }
  AdminHttpServer::Options admin_options;
  admin_options.term_provider = rpc_options.term_provider;
  admin_options.allow_remove_all = options_.security.cluster_secret.empty();
  if (options_.ha) {
    admin_options.is_leader = [this] { return IsLeader(); };
    admin_options.leader_address = [this]() -> std::string {
      LeaderElection* election = elected_.load();
      return election == nullptr ? std::string() : election->KnownLeader();
    };
  }

  auto rpc = GrpcMasterServer::Start(GrpcAddress(options_.rpc_host, options_.rpc_port),
                                     service_.get(), rpc_options);
  if (!rpc.ok())
    return absl::UnavailableError(absl::StrCat("rpc server: ", rpc.status().message()));
  rpc_ = std::move(rpc).value();
  rpc_port_ = rpc_->port();
  const bool secured =
      !options_.security.cluster_secret.empty() || !options_.security.tls_cert_pem.empty();
  if (options_.fast_rpc && !secured) {
    FastRpcServer::Options fast_options;
    fast_options.metrics = metrics_.get();
    auto fast = FastRpcServer::Start(options_.rpc_host, options_.fast_rpc_port,
                                     rpc_->FastDispatcher(), fast_options);
    if (!fast.ok()) {
      return absl::UnavailableError(absl::StrCat("fast rpc server: ", fast.status().message()));
    }
    fast_rpc_ = std::move(fast).value();
    fast_rpc_port_ = fast_rpc_->port();
    rpc_->AdvertiseFastRpcPort(fast_rpc_port_);
  }
  auto admin = AdminHttpServer::Start(options_.rpc_host, options_.metrics_port, service_.get(),
                                      metrics_.get(), admin_options);
  if (!admin.ok()) {
    return absl::UnavailableError(absl::StrCat("metrics server: ", admin.status().message()));
  }
  admin_ = std::move(admin).value();
  metrics_port_ = admin_->port();
  if (options_.http_metadata_server) {
    auto metadata = HttpMetadataServer::Start(options_.metadata_host, options_.metadata_port);
    if (!metadata.ok()) {
      return absl::UnavailableError(
          absl::StrCat("http metadata server: ", metadata.status().message()));
    }
    metadata_ = std::move(metadata).value();
    metadata_port_ = metadata_->port();
  }
  ticker_ = std::thread(&MasterServer::TickLoop, this);

  advertise_address_ = GrpcAddress(AdvertiseHost(options_), rpc_port_);
  if (!options_.ha) return absl::OkStatus();
  LeaderElection::Options ha;
  ha.etcd_endpoints = options_.etcd_endpoints;
  ha.cluster_id = options_.cluster_id;
  ha.advertise_address = advertise_address_;
  ha.lease_ttl = options_.lease_ttl;
  ha.poll_interval = options_.ha_poll_interval;
  auto election = LeaderElection::Start(ha, [this] { OnLeadershipLost(); });
  if (!election.ok()) return absl::InvalidArgumentError(election.status().message());
  election_ = std::move(election).value();
  elected_.store(election_.get());
  return absl::OkStatus();
}

void MasterServer::TickLoop() {
  while (!stop_ticking_.WaitForNotificationWithTimeout(kTickPeriod)) service_->Tick();
}

void MasterServer::OnLeadershipLost() {
  YB_LOG_WARN("yuebing-master: {} lost the leadership", advertise_address_);
  yuebing::MutexLock lock(&end_mu_);
  if (ended_) return;
  ended_ = true;
  end_ = End::kLeadershipLost;
}

void MasterServer::Stop() {
  yuebing::MutexLock stop_lock(&stop_mu_);
  if (stopped_) return;
  stopped_ = true;
  // Stop admitting and hand over (revoke the lease) before anything else. The election object
  // stays until destruction: RPCs in flight may still ask it.
  if (election_ != nullptr) election_->Resign();
  stop_ticking_.Notify();
  if (ticker_.joinable()) ticker_.join();
  // gRPC first: its shutdown answers parked calls (journal polls, PutEnds) at once, including
  // those of fast-path connections, whose threads the fast server then joins without waiting.
  if (rpc_ != nullptr) rpc_->Shutdown();
  if (fast_rpc_ != nullptr) fast_rpc_->Shutdown();
  admin_.reset();
  metadata_.reset();
  yuebing::MutexLock lock(&end_mu_);
  if (!ended_) {
    ended_ = true;
    end_ = End::kStopped;
  }
}

MasterServer::End MasterServer::Wait(absl::Duration timeout) const {
  yuebing::MutexLock lock(&end_mu_);
  end_mu_.AwaitWithTimeout(yuebing::Condition(&ended_), timeout);
  return end_;
}

bool MasterServer::IsLeader() const {
  if (!options_.ha) return true;
  LeaderElection* election = elected_.load();
  return election != nullptr && election->IsLeader();
}

uint64_t MasterServer::term() const {
  LeaderElection* election = elected_.load();
  return election == nullptr ? 0 : election->term();
}

std::string MasterServer::Endpoints() const {
  std::string line =
      absl::StrCat("rpc ", options_.rpc_host, ":", rpc_port_, " metrics ", metrics_port_);
  if (metadata_port_ != 0) {
    absl::StrAppend(&line, " metadata http://", options_.metadata_host, ":", metadata_port_,
                    "/metadata");
  }
  if (options_.ha) {
    absl::StrAppend(&line, " ha ", LeaderElection::LeaderKey(options_.cluster_id), " as ",
                    advertise_address_);
  }
  if (fast_rpc_port_ != 0) absl::StrAppend(&line, " fast ", fast_rpc_port_);
  return line;
}

}  // namespace yuebing::master
