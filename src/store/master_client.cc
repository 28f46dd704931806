#include "store/master_client.h"

#include <grpcpp/grpcpp.h>

#include <algorithm>
#include <cstdlib>
#include <optional>
#include <string_view>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "absl/time/time.h"
#include "common/etcd_client.h"
#include "master.grpc.pb.h"
#include "store/channel_keeper.h"
#include "store/fast_master_channel.h"
#include "yuebing/common/error_code.h"
#include "yuebing/common/host_port.h"
#include "yuebing/common/limits.h"
#include "yuebing/common/logging.h"
#include "yuebing/common/mutex.h"
#include "yuebing/common/status.h"

namespace yuebing::store {

namespace rpc = ::yuebing::rpc;

namespace {

using Clock = std::chrono::system_clock;

constexpr absl::string_view kEtcdScheme = "etcd://";
constexpr char kDefaultClusterId[] = "mooncake_cluster";
// Under a storm of failing calls the leader is re-read from etcd at most this often.
constexpr auto kMinResolveGap = std::chrono::milliseconds(50);

// A master's channel, its stub, the keeper that reconnects the channel after a failure, and the
// fast path of its hot calls (null when off).
struct MasterConnection {
  std::shared_ptr<rpc::MasterService::Stub> stub;
  std::shared_ptr<ChannelKeeper> keeper;
  std::shared_ptr<FastMasterChannel> fast;
};

// The fast path to `address` through `stub`'s Describe, unless it is turned off: by the
// environment, or by security (its frames carry no credential and no TLS).
std::shared_ptr<FastMasterChannel> FastPath(const std::string& address,
                                            const MasterRpcSecurity& security,
                                            std::shared_ptr<rpc::MasterService::Stub> stub) {
  const char* env = std::getenv(kMasterFastRpcEnv);
  if (env != nullptr && std::string_view(env) == "0") return nullptr;
  if (!security.cluster_secret.empty() || !security.tls_ca_pem.empty()) return nullptr;
  absl::StatusOr<HostPort> host_port = ParseHostPort(address);
  if (!host_port.ok()) return nullptr;
  auto lookup = [stub](FastMasterChannel::Deadline deadline) -> absl::StatusOr<uint16_t> {
    grpc::ClientContext context;
    context.set_deadline(Clock::now() + (deadline - std::chrono::steady_clock::now()));
    rpc::DescribeReply reply;
    grpc::Status status = stub->Describe(&context, rpc::DescribeRequest(), &reply);
    if (!status.ok()) return absl::UnavailableError(status.error_message());
    if (reply.status().code() != 0) return absl::UnavailableError(reply.status().message());
    if (reply.fast_rpc_port() > 0xffff) return absl::InternalError("fast rpc port out of range");
    return static_cast<uint16_t>(reply.fast_rpc_port());
  };
  return std::make_shared<FastMasterChannel>(host_port->host, std::move(lookup),
                                             MasterReplySpinFromEnvironment());
}

MasterConnection Connect(const std::string& address, const MasterRpcSecurity& security) {
  grpc::ChannelArguments args;
  args.SetMaxReceiveMessageSize(64 << 20);
  args.SetMaxSendMessageSize(64 << 20);
  // Reconnect quickly after a master restart.
  args.SetInt(GRPC_ARG_MAX_RECONNECT_BACKOFF_MS, 1000);
  args.SetInt(GRPC_ARG_INITIAL_RECONNECT_BACKOFF_MS, 100);
  auto channel = grpc::CreateCustomChannel(address, MasterChannelCredentials(security), args);
  std::shared_ptr<rpc::MasterService::Stub> stub(rpc::MasterService::NewStub(channel));
  std::shared_ptr<FastMasterChannel> fast = FastPath(address, security, stub);
  return MasterConnection{std::move(stub), std::make_shared<ChannelKeeper>(channel),
                          std::move(fast)};
}

}  // namespace

// The master to call: a fixed address, or the leader read from etcd (cached until a call
// reports it stale).
class MasterClient::Impl {
 public:
  struct Target {
    MasterConnection connection;
    std::string address;
  };

  Impl(std::string address, std::chrono::milliseconds timeout, MasterRpcSecurity security)
      : timeout(timeout),
        secret(security.cluster_secret),
        security_(std::move(security)),
        address_(std::move(address)),
        connection_(Connect(address_, security_)) {}
  Impl(std::unique_ptr<EtcdClient> etcd, std::string key, std::chrono::milliseconds timeout,
       MasterRpcSecurity security)
      : timeout(timeout),
        secret(security.cluster_secret),
        security_(std::move(security)),
        etcd_(std::move(etcd)),
        key_(std::move(key)) {}

  bool uses_etcd() const { return etcd_ != nullptr; }

  // The master to call now; reads the leader from etcd when none is known or the known one was
  // reported stale. Errors: kRpcFail (etcd unreachable in time, no leader registered).
  absl::StatusOr<Target> Get(Clock::time_point deadline) {
    yuebing::MutexLock lock(&mu_);
    if (etcd_ == nullptr) return Target{connection_, address_};
    const yuebing::Condition not_resolving(
        +[](Impl* self) ABSL_NO_THREAD_SAFETY_ANALYSIS { return !self->resolving_; }, this);
    if (!mu_.AwaitWithDeadline(not_resolving, absl::FromChrono(deadline))) {
      return MakeError(ErrorCode::kRpcFail, "timed out waiting for the master leader lookup");
    }
    const auto now = std::chrono::steady_clock::now();
    if (connection_.stub != nullptr && (!stale_ || now - resolved_at_ < kMinResolveGap)) {
      return Target{connection_, address_};
    }
    resolving_ = true;
    mu_.Unlock();
    const auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
    absl::StatusOr<std::optional<EtcdClient::KeyValue>> leader =
        left.count() > 0 ? etcd_->Get(key_, left)
                         : absl::DeadlineExceededError("no time left for the etcd lookup");
    mu_.Lock();
    resolving_ = false;
    resolved_at_ = std::chrono::steady_clock::now();
    if (!leader.ok()) {
      return MakeError(ErrorCode::kRpcFail,
                       absl::StrCat("looking up the master leader in ", etcd_->Describe(), ": ",
                                    leader.status().message()));
    }
    if (!leader->has_value() || (*leader)->value.empty()) {
      return MakeError(ErrorCode::kRpcFail, absl::StrCat("no leader master registered at ", key_,
                                                         " in ", etcd_->Describe()));
    }
    const std::string& address = (*leader)->value;
    if (connection_.stub == nullptr || address != address_) {
      auto& cached = connections_[address];
      if (cached.stub == nullptr) cached = Connect(address, security_);
      connection_ = cached;
      address_ = address;
    }
    stale_ = false;
    return Target{connection_, address_};
  }

  // A call to `address` failed in transport or was refused as not-leader: read etcd next time.
  void MarkStale(const std::string& address) {
    yuebing::MutexLock lock(&mu_);
    if (address == address_) stale_ = true;
  }

  const std::chrono::milliseconds timeout;
  const std::string secret;  // cluster secret for per-call credentials ("" = none)

 private:
  const MasterRpcSecurity security_;
  std::unique_ptr<EtcdClient> etcd_;  // null for a fixed address
  const std::string key_;
  yuebing::Mutex mu_;
  std::string address_ ABSL_GUARDED_BY(mu_);
  MasterConnection connection_ ABSL_GUARDED_BY(mu_);
  bool stale_ ABSL_GUARDED_BY(mu_) = false;
  bool resolving_ ABSL_GUARDED_BY(mu_) = false;
  std::chrono::steady_clock::time_point resolved_at_ ABSL_GUARDED_BY(mu_);
  absl::flat_hash_map<std::string, MasterConnection> connections_ ABSL_GUARDED_BY(mu_);
};

namespace {

absl::Status FromRpc(const rpc::Status& status) {
  return FromErrorCode(status.code(), status.message());
}

master::Replica FromRpc(const rpc::ReplicaMsg& msg) {
  return master::Replica{msg.segment_name(), msg.epoch(), msg.address(), msg.size(),
                         msg.disk_endpoint()};
}

template <typename T>
std::vector<T> Repeat(size_t n, const absl::Status& status) {
  return std::vector<T>(n, T(status));
}

}  // namespace

MasterClient::MasterClient(std::string address, std::unique_ptr<Impl> impl)
    : address_(std::move(address)), impl_(std::move(impl)) {
  flusher_ = std::thread(&MasterClient::FlushLoop, this);
}

MasterClient::~MasterClient() {
  {
    yuebing::MutexLock lock(&release_mu_);
    stopping_ = true;  // queued releases are dropped: they end at their lease deadline
  }
  flusher_.join();
}

absl::StatusOr<std::unique_ptr<MasterClient>> MasterClient::Create(
    const std::string& address, std::chrono::milliseconds timeout,
    const MasterRpcSecurity& security) {
  if (address.empty()) return MakeError(ErrorCode::kInvalidParams, "empty master address");
  absl::string_view rest = address;
  if (!absl::ConsumePrefix(&rest, kEtcdScheme)) {
    return std::unique_ptr<MasterClient>(
        new MasterClient(address, std::make_unique<Impl>(address, timeout, security)));
  }
  std::string cluster_id = kDefaultClusterId;
  if (const size_t query = rest.find('?'); query != absl::string_view::npos) {
    absl::string_view param = rest.substr(query + 1);
    rest = rest.substr(0, query);
    if (!absl::ConsumePrefix(&param, "cluster_id=") || param.empty() ||
        param.find_first_of("/?&= ") != absl::string_view::npos) {
      return MakeError(
          ErrorCode::kInvalidParams,
          absl::StrCat("master address '", address, "': the only parameter is ?cluster_id=<name>"));
    }
    cluster_id = std::string(param);
  }
  auto etcd = EtcdClient::Create(rest, timeout);
  if (!etcd.ok()) {
    return MakeError(ErrorCode::kInvalidParams,
                     absl::StrCat("master address '", address, "': ", etcd.status().message()));
  }
  std::string key = absl::StrCat("yuebing/", cluster_id, "/master/leader");
  return std::unique_ptr<MasterClient>(new MasterClient(
      address, std::make_unique<Impl>(std::move(etcd).value(), std::move(key), timeout, security)));
}

namespace {

// Sends one call over the fast path when `fast` names its method and the target has one.
// Returns true when `reply` came that way, false when the call should go by gRPC.
template <typename Request, typename Reply>
absl::StatusOr<bool> CallFast(std::optional<rpc::FastMethod> fast,
                              const MasterClient::Impl::Target& target, const Request& request,
                              Reply& reply, Clock::time_point deadline) {
  if (!fast.has_value() || target.connection.fast == nullptr) return false;
  reply.Clear();
  return target.connection.fast->Call(*fast, request, &reply,
                                      std::chrono::steady_clock::now() + (deadline - Clock::now()));
}

// Runs one unary RPC within the client's deadline against the current master (over its fast
// path when `fast` names the method and the master has one, else gRPC); checks the transport
// status and the reply's term (raising the highest term seen, refusing replies from older ones).
// With etcd discovery a not-leader answer is retried once against the re-read leader.
template <typename Request, typename Reply>
absl::Status Call(const char* name,
                  grpc::Status (rpc::MasterService::Stub::*method)(grpc::ClientContext*,
                                                                   const Request&, Reply*),
                  MasterClient::Impl& impl, std::atomic<uint64_t>& max_term,
                  const std::function<void(uint64_t)>& on_new_term, const Request& request,
                  Reply& reply, std::chrono::milliseconds held = std::chrono::milliseconds(0),
                  std::optional<rpc::FastMethod> fast = std::nullopt) {
  // `held`: how long the master may hold the call on purpose (a long poll), beyond the timeout.
  const Clock::time_point deadline = Clock::now() + impl.timeout + held;
  for (int attempt = 0;; ++attempt) {
    YB_ASSIGN_OR_RETURN(MasterClient::Impl::Target target, impl.Get(deadline));
    absl::StatusOr<bool> fast_done = CallFast(fast, target, request, reply, deadline);
    if (!fast_done.ok()) {
      impl.MarkStale(target.address);
      return MakeError(ErrorCode::kRpcFail, absl::StrCat(name, " to ", target.address, ": ",
                                                         fast_done.status().message()));
    }
    grpc::Status rpc_status = grpc::Status::OK;
    if (!*fast_done) {
      grpc::ClientContext context;
      context.set_deadline(deadline);
      if (absl::Status auth = AttachMasterCallCredential(&context, impl.secret); !auth.ok()) {
        return MakeError(ErrorCode::kRpcFail, absl::StrCat(name, ": ", auth.message()));
      }
      reply.Clear();
      rpc_status = (target.connection.stub.get()->*method)(&context, request, &reply);
    }
    if (!rpc_status.ok()) {
      target.connection.keeper->Nudge();  // fast-failing calls alone would not reconnect it
      impl.MarkStale(target.address);
      return MakeError(ErrorCode::kRpcFail, absl::StrCat(name, " to ", target.address, ": ",
                                                         rpc_status.error_message()));
    }
    if (reply.status().code() == static_cast<int32_t>(ErrorCode::kUnavailableInCurrentStatus)) {
      impl.MarkStale(target.address);
      if (impl.uses_etcd() && attempt == 0 && Clock::now() < deadline) continue;
      return FromRpc(reply.status());  // the caller reports the not-leader error
    }
    uint64_t seen = max_term.load();
    while (reply.term() > seen && !max_term.compare_exchange_weak(seen, reply.term())) {
    }
    if (reply.term() > seen && seen != 0 && on_new_term) on_new_term(reply.term());
    if (reply.term() < max_term.load()) {
      impl.MarkStale(target.address);
      return MakeError(ErrorCode::kRpcFail,
                       absl::StrCat(name, ": reply from stale master term ", reply.term()));
    }
    return absl::OkStatus();
  }
}

}  // namespace

#define YB_CALL(method, request, reply) \
  Call(#method, &rpc::MasterService::Stub::method, *impl_, max_term_, on_new_term_, request, reply)
// The same for a call the fast path serves (rpc/fast_rpc_wire.h).
#define YB_FAST_CALL(method, request, reply)                                                 \
  Call(#method, &rpc::MasterService::Stub::method, *impl_, max_term_, on_new_term_, request, \
       reply, std::chrono::milliseconds(0), rpc::FastMethod::k##method)

// --- segment manifests ---

absl::StatusOr<master::MountResult> MasterClient::MountSegmentForRestore(
    const master::ClientId& client, const master::Segment& segment, bool has_disk_tier) {
  return Mount(client, segment, /*restoring=*/true, has_disk_tier);
}

absl::StatusOr<std::vector<absl::Status>> MasterClient::RestoreObjects(
    const master::ClientId& client, const std::string& segment_name,
    const std::vector<master::RestoredObject>& objects, bool last) {
  rpc::RestoreObjectsRequest request;
  request.set_client_id(client);
  request.set_segment_name(segment_name);
  request.set_last(last);
  for (const master::RestoredObject& object : objects) {
    rpc::RestoredObjectMsg* msg = request.add_objects();
    msg->set_key(object.key);
    msg->set_address(object.address);
    msg->set_size(object.size);
    msg->set_checksum(object.checksum);
    msg->set_pins(object.pins);
  }
  rpc::BatchStatusReply reply;
  YB_RETURN_IF_ERROR(YB_CALL(RestoreObjects, request, reply));
  YB_RETURN_IF_ERROR(FromRpc(reply.status()));
  if (static_cast<size_t>(reply.statuses_size()) != objects.size()) {
    return MakeError(ErrorCode::kRpcFail, "RestoreObjects: wrong number of results");
  }
  std::vector<absl::Status> results;
  results.reserve(objects.size());
  for (const rpc::Status& status : reply.statuses()) results.push_back(FromRpc(status));
  return results;
}

absl::StatusOr<master::JournalBatch> MasterClient::PullJournal(const master::ClientId& client,
                                                               uint64_t journal_id, uint64_t ack,
                                                               std::chrono::milliseconds wait) {
  rpc::PullJournalRequest request;
  request.set_client_id(client);
  request.set_journal_id(journal_id);
  request.set_ack(ack);
  request.set_wait_ms(static_cast<uint32_t>(std::clamp<int64_t>(wait.count(), 0, 60000)));
  rpc::PullJournalReply reply;
  YB_RETURN_IF_ERROR(Call("PullJournal", &rpc::MasterService::Stub::PullJournal, *impl_, max_term_,
                          on_new_term_, request, reply, wait, rpc::FastMethod::kPullJournal));
  YB_RETURN_IF_ERROR(FromRpc(reply.status()));
  master::JournalBatch batch;
  batch.journal_id = reply.journal_id();
  batch.last_seq = reply.last_seq();
  batch.reset = reply.reset();
  batch.entries.reserve(static_cast<size_t>(reply.entries_size()));
  for (rpc::JournalEntryMsg& msg : *reply.mutable_entries()) {
    master::JournalEntry entry;
    entry.op = msg.drop() ? master::JournalEntry::Op::kDrop : master::JournalEntry::Op::kAdd;
    entry.committed = msg.committed();
    entry.address = msg.address();
    entry.size = msg.size();
    entry.checksum = msg.checksum();
    entry.pins = msg.pins();
    entry.key = std::move(*msg.mutable_key());
    batch.entries.push_back(std::move(entry));
  }
  return batch;
}

// --- released read leases ---

void MasterClient::ReleaseLeases(std::vector<uint64_t> lease_ids) {
  if (lease_ids.empty()) return;
  yuebing::MutexLock lock(&release_mu_);
  const uint64_t term = max_term_.load();
  if (term != releases_term_) {
    releases_.clear();  // granted by a master that no longer leads
    releases_term_ = term;
  }
  if (releases_.empty()) releases_since_ = std::chrono::steady_clock::now();
  releases_.insert(releases_.end(), lease_ids.begin(), lease_ids.end());
  ++releases_queued_;
}

std::vector<uint64_t> MasterClient::TakeReleasesLocked() {
  std::vector<uint64_t> taken;
  if (releases_term_ != max_term_.load()) {
    releases_.clear();
    return taken;
  }
  if (releases_.size() <= limits::kMaxBatchKeys) {
    taken.swap(releases_);
  } else {
    taken.assign(releases_.end() - limits::kMaxBatchKeys, releases_.end());
    releases_.resize(releases_.size() - limits::kMaxBatchKeys);
  }
  return taken;
}

template <typename Ids>
void MasterClient::AttachReleases(Ids* ids) {
  const yuebing::Condition not_flushing(
      +[](MasterClient* self) ABSL_NO_THREAD_SAFETY_ANALYSIS { return !self->flushing_; }, this);
  yuebing::MutexLock lock(&release_mu_);
  // Releases a flush is sending now were queued before this call: let them arrive first (bounded
  // by the flush's own deadline; past it, best effort).
  release_mu_.AwaitWithTimeout(not_flushing, absl::FromChrono(impl_->timeout));
  for (uint64_t id : TakeReleasesLocked()) ids->Add(id);
}

// While calls keep going out, they carry the releases and this thread sleeps on a timer: it is
// not woken by each release queued or taken (two wake-ups per read otherwise, each a futex call on
// the reader's path and a thread competing for the CPU). It sleeps untimed only after a period in
// which nothing was queued.
void MasterClient::FlushLoop() {
  const yuebing::Condition stop_or_queued(
      +[](MasterClient* self)
           ABSL_NO_THREAD_SAFETY_ANALYSIS { return self->stopping_ || !self->releases_.empty(); },
      this);
  const yuebing::Condition stop(
      +[](MasterClient* self) ABSL_NO_THREAD_SAFETY_ANALYSIS { return self->stopping_; }, this);
  yuebing::MutexLock lock(&release_mu_);
  while (true) {
    release_mu_.Await(stop_or_queued);
    uint64_t queued_before = releases_queued_;
    while (!stopping_) {
      release_mu_.AwaitWithTimeout(stop, absl::FromChrono(kReleaseDelay));
      if (stopping_) return;
      if (releases_.empty()) {
        if (releases_queued_ == queued_before) break;  // a quiet period: sleep until the next
        queued_before = releases_queued_;
        continue;
      }
      queued_before = releases_queued_;
      // Queued within the last period: a call about to go out may still carry them.
      if (std::chrono::steady_clock::now() - releases_since_ < kReleaseDelay) continue;
      std::vector<uint64_t> ids = TakeReleasesLocked();
      if (ids.empty()) continue;
      flushing_ = true;
      release_mu_.Unlock();
      rpc::ReleaseLeasesRequest request;
      request.mutable_lease_ids()->Add(ids.begin(), ids.end());
      rpc::ReleaseLeasesReply reply;
      absl::Status status = YB_FAST_CALL(ReleaseLeases, request, reply);
      if (status.ok()) status = FromRpc(reply.status());
      if (!status.ok()) YB_LOG_DEBUG("releasing read leases: {}", status.ToString());
      release_mu_.Lock();
      flushing_ = false;
    }
    if (stopping_) return;
  }
}

absl::StatusOr<uint64_t> MasterClient::MountSegment(const master::ClientId& client,
                                                    const master::Segment& segment) {
  YB_ASSIGN_OR_RETURN(const master::MountResult mount,
                      Mount(client, segment, /*restoring=*/false, /*has_disk_tier=*/false));
  return mount.epoch;
}

absl::StatusOr<master::MountResult> MasterClient::Mount(const master::ClientId& client,
                                                        const master::Segment& segment,
                                                        bool restoring, bool has_disk_tier) {
  rpc::MountSegmentRequest request;
  request.set_client_id(client);
  request.mutable_segment()->set_name(segment.name);
  request.mutable_segment()->set_base(segment.base);
  request.mutable_segment()->set_size(segment.size);
  request.set_restoring(restoring);
  request.set_has_disk_tier(has_disk_tier);
  rpc::MountSegmentReply reply;
  YB_RETURN_IF_ERROR(YB_CALL(MountSegment, request, reply));
  YB_RETURN_IF_ERROR(FromRpc(reply.status()));
  return master::MountResult{reply.epoch(), reply.fresh()};
}

absl::Status MasterClient::UnmountSegment(const master::ClientId& client, const std::string& name) {
  rpc::UnmountSegmentRequest request;
  request.set_client_id(client);
  request.set_name(name);
  rpc::StatusReply reply;
  YB_RETURN_IF_ERROR(YB_CALL(UnmountSegment, request, reply));
  return FromRpc(reply.status());
}

absl::StatusOr<master::ClientState> MasterClient::Ping(const master::ClientId& client) {
  rpc::PingRequest request;
  request.set_client_id(client);
  rpc::PingReply reply;
  YB_RETURN_IF_ERROR(YB_CALL(Ping, request, reply));
  YB_RETURN_IF_ERROR(FromRpc(reply.status()));
  return reply.need_remount() ? master::ClientState::kNeedRemount : master::ClientState::kOk;
}

std::vector<absl::StatusOr<std::vector<master::Replica>>> MasterClient::BatchPutStart(
    const master::ClientId& client, const std::vector<std::string>& keys,
    const std::vector<uint64_t>& sizes, const master::ReplicateConfig& config, bool upsert,
    const std::vector<uint64_t>& checksums) {
  using Result = absl::StatusOr<std::vector<master::Replica>>;
  rpc::BatchPutStartRequest request;
  request.set_client_id(client);
  for (const std::string& key : keys) request.add_keys(key);
  for (uint64_t size : sizes) request.add_sizes(size);
  for (uint64_t checksum : checksums) request.add_checksums(checksum);
  request.mutable_config()->set_replica_num(config.replica_num);
  request.mutable_config()->set_with_soft_pin(config.with_soft_pin);
  if (config.soft_pin_ttl_ms)
    request.mutable_config()->set_soft_pin_ttl_ms(*config.soft_pin_ttl_ms);
  request.mutable_config()->set_with_hard_pin(config.with_hard_pin);
  request.mutable_config()->set_preferred_segment(config.preferred_segment);
  for (const std::string& name : config.preferred_segments) {
    request.mutable_config()->add_preferred_segments(name);
  }
  request.mutable_config()->set_promotion(config.promotion);
  request.set_upsert(upsert);
  AttachReleases(request.mutable_released_leases());
  rpc::BatchPutStartReply reply;
  absl::Status status = YB_FAST_CALL(BatchPutStart, request, reply);
  if (status.ok()) status = FromRpc(reply.status());
  if (status.ok() && static_cast<size_t>(reply.results_size()) != keys.size()) {
    status = MakeError(ErrorCode::kRpcFail, "BatchPutStart reply has the wrong number of results");
  }
  if (!status.ok()) return Repeat<Result>(keys.size(), status);
  std::vector<Result> out;
  out.reserve(keys.size());
  for (const rpc::PutStartResult& result : reply.results()) {
    absl::Status s = FromRpc(result.status());
    if (!s.ok()) {
      out.emplace_back(s);
      continue;
    }
    std::vector<master::Replica> replicas;
    for (const rpc::ReplicaMsg& r : result.replicas()) replicas.push_back(FromRpc(r));
    out.emplace_back(std::move(replicas));
  }
  return out;
}

namespace {

std::vector<absl::Status> StatusesFromReply(const absl::Status& call,
                                            const rpc::BatchStatusReply& reply, size_t n) {
  absl::Status status = call;
  if (status.ok()) status = FromRpc(reply.status());
  if (status.ok() && static_cast<size_t>(reply.statuses_size()) != n) {
    status = MakeError(ErrorCode::kRpcFail, "reply has the wrong number of results");
  }
  if (!status.ok()) return std::vector<absl::Status>(n, status);
  std::vector<absl::Status> out;
  out.reserve(n);
  for (const rpc::Status& s : reply.statuses()) out.push_back(FromRpc(s));
  return out;
}

}  // namespace

std::vector<absl::Status> MasterClient::BatchPutEnd(const master::ClientId& client,
                                                    const std::vector<std::string>& keys,
                                                    const std::vector<uint64_t>& checksums) {
  rpc::BatchPutEndRequest request;
  request.set_client_id(client);
  for (const std::string& key : keys) request.add_keys(key);
  for (uint64_t checksum : checksums) request.add_checksums(checksum);
  rpc::BatchStatusReply reply;
  absl::Status call = YB_FAST_CALL(BatchPutEnd, request, reply);
  return StatusesFromReply(call, reply, keys.size());
}

std::vector<absl::Status> MasterClient::BatchPutRevoke(const master::ClientId& client,
                                                       const std::vector<std::string>& keys) {
  rpc::BatchKeysRequest request;
  request.set_client_id(client);
  for (const std::string& key : keys) request.add_keys(key);
  AttachReleases(request.mutable_released_leases());
  rpc::BatchStatusReply reply;
  absl::Status call = YB_FAST_CALL(BatchPutRevoke, request, reply);
  return StatusesFromReply(call, reply, keys.size());
}

std::vector<absl::StatusOr<master::ObjectLocation>> MasterClient::BatchGetReplicaList(
    const std::vector<std::string>& keys) {
  return LookUp(keys, /*query_only=*/false);
}

std::vector<absl::StatusOr<master::ObjectLocation>> MasterClient::BatchQueryReplicas(
    const std::vector<std::string>& keys) {
  return LookUp(keys, /*query_only=*/true);
}

std::vector<absl::StatusOr<master::ObjectLocation>> MasterClient::LookUp(
    const std::vector<std::string>& keys, bool query_only) {
  using Result = absl::StatusOr<master::ObjectLocation>;
  rpc::BatchKeysRequest request;
  for (const std::string& key : keys) request.add_keys(key);
  request.set_query_only(query_only);
  AttachReleases(request.mutable_released_leases());
  rpc::BatchGetReplicaListReply reply;
  absl::Status status = YB_FAST_CALL(BatchGetReplicaList, request, reply);
  if (status.ok()) status = FromRpc(reply.status());
  if (status.ok() && static_cast<size_t>(reply.results_size()) != keys.size()) {
    status = MakeError(ErrorCode::kRpcFail, "reply has the wrong number of results");
  }
  if (!status.ok()) return Repeat<Result>(keys.size(), status);
  std::vector<Result> out;
  out.reserve(keys.size());
  for (const rpc::ObjectLocationMsg& msg : reply.results()) {
    absl::Status s = FromRpc(msg.status());
    if (!s.ok()) {
      out.emplace_back(s);
      continue;
    }
    master::ObjectLocation location;
    location.size = msg.size();
    location.checksum = msg.checksum();
    location.lease_ttl = std::chrono::milliseconds(msg.lease_ttl_ms());
    location.lease_id = msg.lease_id();
    for (const rpc::ReplicaMsg& r : msg.replicas()) location.replicas.push_back(FromRpc(r));
    out.emplace_back(std::move(location));
  }
  return out;
}

absl::StatusOr<std::vector<bool>> MasterClient::BatchExist(const std::vector<std::string>& keys) {
  rpc::BatchKeysRequest request;
  for (const std::string& key : keys) request.add_keys(key);
  AttachReleases(request.mutable_released_leases());
  rpc::BatchExistReply reply;
  YB_RETURN_IF_ERROR(YB_FAST_CALL(BatchExist, request, reply));
  YB_RETURN_IF_ERROR(FromRpc(reply.status()));
  if (static_cast<size_t>(reply.exists_size()) != keys.size()) {
    return MakeError(ErrorCode::kRpcFail, "reply has the wrong number of results");
  }
  return std::vector<bool>(reply.exists().begin(), reply.exists().end());
}

std::vector<absl::Status> MasterClient::BatchRemove(const std::vector<std::string>& keys,
                                                    bool force) {
  rpc::BatchKeysRequest request;
  for (const std::string& key : keys) request.add_keys(key);
  request.set_force(force);
  AttachReleases(request.mutable_released_leases());
  rpc::BatchStatusReply reply;
  absl::Status call = YB_FAST_CALL(BatchRemove, request, reply);
  return StatusesFromReply(call, reply, keys.size());
}

std::vector<absl::Status> MasterClient::BatchReplicaClear(const std::vector<std::string>& keys,
                                                          const std::string& segment_name) {
  rpc::BatchKeysRequest request;
  for (const std::string& key : keys) request.add_keys(key);
  request.set_segment_name(segment_name);
  AttachReleases(request.mutable_released_leases());
  rpc::BatchStatusReply reply;
  absl::Status call = YB_CALL(BatchReplicaClear, request, reply);
  return StatusesFromReply(call, reply, keys.size());
}

absl::StatusOr<master::CopyPlan> MasterClient::ReplicaCopyStart(
    const master::ClientId& client, const std::string& key, const std::string& source,
    const std::vector<std::string>& targets, bool move) {
  rpc::ReplicaCopyStartRequest request;
  request.set_client_id(client);
  request.set_key(key);
  request.set_source(source);
  for (const std::string& target : targets) request.add_targets(target);
  request.set_move(move);
  rpc::ReplicaCopyStartReply reply;
  YB_RETURN_IF_ERROR(YB_CALL(ReplicaCopyStart, request, reply));
  YB_RETURN_IF_ERROR(FromRpc(reply.status()));
  master::CopyPlan plan;
  plan.size = reply.size();
  plan.checksum = reply.checksum();
  for (const rpc::ReplicaMsg& r : reply.targets()) plan.targets.push_back(FromRpc(r));
  return plan;
}

absl::Status MasterClient::ReplicaCopyEnd(const master::ClientId& client, const std::string& key,
                                          bool revoke) {
  rpc::ReplicaCopyEndRequest request;
  request.set_client_id(client);
  request.set_key(key);
  request.set_revoke(revoke);
  rpc::StatusReply reply;
  YB_RETURN_IF_ERROR(YB_CALL(ReplicaCopyEnd, request, reply));
  return FromRpc(reply.status());
}

absl::StatusOr<std::vector<master::DrainUnit>> MasterClient::FetchDrainWork(
    const master::ClientId& client, uint32_t max_units) {
  rpc::FetchDrainWorkRequest request;
  request.set_client_id(client);
  request.set_max_units(max_units);
  rpc::FetchDrainWorkReply reply;
  YB_RETURN_IF_ERROR(YB_CALL(FetchDrainWork, request, reply));
  YB_RETURN_IF_ERROR(FromRpc(reply.status()));
  std::vector<master::DrainUnit> units;
  units.reserve(reply.units_size());
  for (const rpc::DrainUnitMsg& msg : reply.units()) {
    units.push_back(
        master::DrainUnit{msg.job_id(), msg.key(), msg.source(), msg.target(), msg.size()});
  }
  return units;
}

absl::Status MasterClient::ReportDrainWork(const master::ClientId& client,
                                           const std::string& job_id, const std::string& key,
                                           const absl::Status& outcome) {
  rpc::ReportDrainWorkRequest request;
  request.set_client_id(client);
  request.set_job_id(job_id);
  request.set_key(key);
  request.mutable_outcome()->set_code(static_cast<int32_t>(ToErrorCode(outcome)));
  request.mutable_outcome()->set_message(std::string(outcome.message()));
  rpc::StatusReply reply;
  YB_RETURN_IF_ERROR(YB_CALL(ReportDrainWork, request, reply));
  return FromRpc(reply.status());
}

absl::StatusOr<uint64_t> MasterClient::GetSize(const std::string& key) {
  rpc::GetSizeRequest request;
  request.set_key(key);
  rpc::GetSizeReply reply;
  YB_RETURN_IF_ERROR(YB_CALL(GetSize, request, reply));
  YB_RETURN_IF_ERROR(FromRpc(reply.status()));
  return reply.size();
}

absl::StatusOr<uint64_t> MasterClient::RemoveByRegex(const std::string& pattern, bool force,
                                                     const std::string& tenant) {
  rpc::RemoveByRegexRequest request;
  request.set_pattern(pattern);
  request.set_force(force);
  request.set_tenant_id(tenant);
  rpc::RemoveCountReply reply;
  YB_RETURN_IF_ERROR(YB_CALL(RemoveByRegex, request, reply));
  YB_RETURN_IF_ERROR(FromRpc(reply.status()));
  return reply.removed();
}

absl::StatusOr<uint64_t> MasterClient::RemoveAll(bool force, const std::string& tenant) {
  rpc::RemoveAllRequest request;
  request.set_force(force);
  request.set_tenant_id(tenant);
  rpc::RemoveCountReply reply;
  YB_RETURN_IF_ERROR(YB_CALL(RemoveAll, request, reply));
  YB_RETURN_IF_ERROR(FromRpc(reply.status()));
  return reply.removed();
}

absl::StatusOr<master::DiskSyncReply> MasterClient::SyncDiskTier(
    const master::ClientId& client, const master::DiskSyncRequest& sync) {
  rpc::SyncDiskTierRequest request;
  request.set_client_id(client);
  request.set_endpoint(sync.endpoint);
  request.set_tier_id(sync.tier_id);
  request.set_full(sync.full);
  request.set_max_tasks(sync.max_tasks);
  for (const master::DiskObject& o : sync.spilled) {
    rpc::DiskObjectMsg* msg = request.add_spilled();
    msg->set_key(o.key);
    msg->set_size(o.size);
    msg->set_checksum(o.checksum);
  }
  for (const master::DiskObject& o : sync.announced) {
    rpc::DiskObjectMsg* msg = request.add_announced();
    msg->set_key(o.key);
    msg->set_size(o.size);
    msg->set_checksum(o.checksum);
  }
  for (const std::string& key : sync.removed) request.add_removed(key);
  rpc::SyncDiskTierReply reply;
  YB_RETURN_IF_ERROR(YB_CALL(SyncDiskTier, request, reply));
  YB_RETURN_IF_ERROR(FromRpc(reply.status()));
  master::DiskSyncReply out;
  out.need_full_sync = reply.need_full_sync();
  for (const rpc::SpillTaskMsg& t : reply.spill()) {
    out.spill.push_back(master::SpillTask{t.key(), t.address(), t.size(), t.checksum()});
  }
  out.drop.assign(reply.drop().begin(), reply.drop().end());
  for (const rpc::DiskObjectMsg& o : reply.promote()) {
    out.promote.push_back(master::DiskObject{o.key(), o.size(), o.checksum()});
  }
  return out;
}

#undef YB_CALL
#undef YB_FAST_CALL

}  // namespace yuebing::store
