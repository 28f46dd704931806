#include "master/leader_election.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "yuebing/common/error_code.h"
#include "yuebing/common/logging.h"

namespace yuebing::master {

using std::chrono::milliseconds;
using std::chrono::nanoseconds;

std::string LeaderElection::LeaderKey(const std::string& cluster_id) {
  return absl::StrCat("yuebing/", cluster_id, "/master/leader");
}

int64_t LeaderElection::NowNs() {
  return std::chrono::duration_cast<nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

absl::StatusOr<std::unique_ptr<LeaderElection>> LeaderElection::Start(
    Options options, std::function<void()> on_lost) {
  if (options.cluster_id.empty()) return absl::InvalidArgumentError("empty cluster id");
  if (options.advertise_address.empty()) {
    return absl::InvalidArgumentError("empty advertised address");
  }
  if (options.lease_ttl < std::chrono::seconds(2)) {
    return absl::InvalidArgumentError("the HA lease TTL must be at least 2 s");
  }
  if (options.poll_interval.count() <= 0 || options.etcd_timeout.count() <= 0) {
    return absl::InvalidArgumentError("poll interval and etcd timeout must be positive");
  }
  auto etcd = EtcdClient::Create(options.etcd_endpoints, options.etcd_timeout);
  if (!etcd.ok()) return etcd.status();
  std::unique_ptr<LeaderElection> election(
      new LeaderElection(std::move(options), std::move(etcd).value(), std::move(on_lost)));
  election->thread_ = std::thread(&LeaderElection::Run, election.get());
  return election;
}

LeaderElection::LeaderElection(Options options, std::unique_ptr<EtcdClient> etcd,
                               std::function<void()> on_lost)
    : options_(std::move(options)),
      key_(LeaderKey(options_.cluster_id)),
      // Serve no longer than TTL minus a quarter of it (at least 500 ms): room for the step-down
      // and for the rate difference between this clock and etcd's.
      margin_(std::max<nanoseconds>(nanoseconds(options_.lease_ttl) / 4, milliseconds(500))),
      etcd_(std::move(etcd)),
      on_lost_(std::move(on_lost)) {}

LeaderElection::~LeaderElection() { Resign(); }

std::string LeaderElection::KnownLeader() const {
  yuebing::MutexLock lock(&mu_);
  return known_leader_;
}

absl::Status LeaderElection::Admit() const {
  if (leader_.load() && NowNs() < serve_until_ns_.load()) return absl::OkStatus();
  yuebing::MutexLock lock(&mu_);
  return MakeError(ErrorCode::kUnavailableInCurrentStatus,
                   known_leader_.empty()
                       ? std::string("not the leader master; no leader is known")
                       : absl::StrCat("not the leader master; the leader is ", known_leader_));
}

bool LeaderElection::Sleep(nanoseconds d) {
  yuebing::MutexLock lock(&mu_);
  mu_.AwaitWithTimeout(yuebing::Condition(&stopping_), absl::FromChrono(d));
  return !stopping_;
}

void LeaderElection::Run() {
  while (true) {
    {
      yuebing::MutexLock lock(&mu_);
      if (stopping_) return;
    }
    if (!leader_.load()) {
      if (Campaign()) continue;
      if (!Sleep(options_.poll_interval)) return;
      continue;
    }
    if (!Renew()) return;  // lost: this process never campaigns again
  }
}

bool LeaderElection::Campaign() {
  auto current = etcd_->Get(key_);
  if (!current.ok()) {
    YB_LOG_WARN("leader election: reading {}: {}", key_, current.status().ToString());
    return false;
  }
  if (current->has_value()) {
    yuebing::MutexLock lock(&mu_);
    known_leader_ = (*current)->value;
    return false;
  }
  const int64_t granted_at = NowNs();
  auto lease = etcd_->GrantLease(options_.lease_ttl.count());
  if (!lease.ok()) {
    YB_LOG_WARN("leader election: granting a lease: {}", lease.status().ToString());
    return false;
  }
  auto result = etcd_->CreateIfAbsent(key_, options_.advertise_address, *lease);
  if (!result.ok() || !result->created) {
    (void)etcd_->RevokeLease(*lease, options_.etcd_timeout);
    if (!result.ok()) {
      YB_LOG_WARN("leader election: campaign: {}", result.status().ToString());
    } else {
      yuebing::MutexLock lock(&mu_);
      known_leader_ = result->current.value;
    }
    return false;
  }
  lease_ = *lease;
  next_renew_ns_ = NowNs() + (nanoseconds(options_.lease_ttl) / 3).count();
  term_.store(static_cast<uint64_t>(result->current.create_revision));
  // The lease's TTL started when etcd granted it, after `granted_at`.
  serve_until_ns_.store(granted_at + nanoseconds(options_.lease_ttl).count() - margin_.count());
  {
    yuebing::MutexLock lock(&mu_);
    known_leader_ = options_.advertise_address;
  }
  leader_.store(true);
  YB_LOG_INFO("leader election: {} is the leader of cluster {} at term {} (lease {:x})",
              options_.advertise_address, options_.cluster_id, term_.load(), lease_);
  return true;
}

bool LeaderElection::Renew() {
  const nanoseconds period = nanoseconds(options_.lease_ttl) / 3;
  if (!Sleep(nanoseconds(std::max<int64_t>(0, next_renew_ns_ - NowNs())))) return false;
  const int64_t sent_at = NowNs();
  if (sent_at >= serve_until_ns_.load()) {
    StepDown("the lease could not be renewed in time");
    return false;
  }
  const milliseconds budget = std::min<milliseconds>(
      options_.etcd_timeout,
      std::chrono::duration_cast<milliseconds>(nanoseconds(serve_until_ns_.load() - sent_at)));
  auto ttl = etcd_->KeepAlive(lease_, std::max(budget, milliseconds(1)));
  if (!ttl.ok()) {
    if (ttl.status().code() == absl::StatusCode::kNotFound) {
      StepDown(std::string(ttl.status().message()));
      return false;
    }
    YB_LOG_WARN("leader election: renewing the lease: {}", ttl.status().ToString());
    next_renew_ns_ = NowNs() + std::min<nanoseconds>(options_.poll_interval, period).count();
    if (NowNs() >= serve_until_ns_.load()) {
      StepDown("the lease could not be renewed in time");
      return false;
    }
    return true;
  }
  // The key must still be ours (an operator may have deleted it).
  auto current = etcd_->Get(key_, options_.etcd_timeout);
  if (current.ok() && (!current->has_value() ||
                       static_cast<uint64_t>((*current)->create_revision) != term_.load())) {
    StepDown("the leader key was deleted or replaced");
    return false;
  }
  serve_until_ns_.store(sent_at + nanoseconds(std::chrono::seconds(*ttl)).count() -
                        margin_.count());
  next_renew_ns_ = sent_at + period.count();
  return true;
}

void LeaderElection::StepDown(const std::string& why) {
  leader_.store(false);
  {
    yuebing::MutexLock lock(&mu_);
    known_leader_.clear();
  }
  YB_LOG_WARN("leader election: {} steps down from term {}: {}", options_.advertise_address,
              term_.load(), why);
  if (on_lost_) on_lost_();
}

void LeaderElection::Resign() {
  leader_.store(false);
  {
    yuebing::MutexLock lock(&mu_);
    if (stopping_) return;
    stopping_ = true;
  }
  if (thread_.joinable()) thread_.join();
  if (lease_ != 0) {
    absl::Status revoked = etcd_->RevokeLease(lease_, options_.etcd_timeout);
    if (!revoked.ok()) YB_LOG_WARN("leader election: revoking the lease: {}", revoked.ToString());
    lease_ = 0;
  }
}

}  // namespace yuebing::master
