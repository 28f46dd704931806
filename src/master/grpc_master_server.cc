#include "master/grpc_master_server.h"

#include <grpcpp/grpcpp.h>

#include <algorithm>
#include <atomic>
#include <exception>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "master.grpc.pb.h"
#include "master/long_polls.h"
#include "master/request_rules.h"
#include "rpc/fast_rpc_wire.h"
#include "yuebing/common/error_code.h"
#include "yuebing/common/host_port.h"
#include "yuebing/common/logging.h"

namespace yuebing::master {
namespace {

namespace rpc = ::yuebing::rpc;
using Clock = std::chrono::steady_clock;

// What a handler tells the accounting wrapper: the whole-request status and, for batches, how
// many keys it carried and how many per-key results were not OK.
struct Outcome {
  absl::Status status;
  uint64_t keys = 0;
  uint64_t key_errors = 0;
};

void ToRpc(const absl::Status& status, rpc::Status* out) {
  out->set_code(static_cast<int32_t>(ToErrorCode(status)));
  if (!status.ok()) out->set_message(std::string(status.message()));
}

void ToRpc(const Replica& replica, rpc::ReplicaMsg* out) {
  out->set_segment_name(replica.segment_name);
  out->set_epoch(replica.epoch);
  out->set_address(replica.address);
  out->set_size(replica.size);
  if (!replica.disk_endpoint.empty()) out->set_disk_endpoint(replica.disk_endpoint);
}

absl::Status CheckBatch(int keys) { return CheckBatchSize(static_cast<size_t>(keys)); }

absl::Status CheckClient(const std::string& client_id) { return CheckClientId(client_id); }

std::vector<std::string> Keys(const google::protobuf::RepeatedPtrField<std::string>& keys) {
  return std::vector<std::string>(keys.begin(), keys.end());
}

ReplicateConfig FromRpc(const rpc::ReplicateConfigMsg& msg) {
  ReplicateConfig config;
  config.replica_num = msg.replica_num();
  config.with_soft_pin = msg.with_soft_pin();
  if (msg.has_soft_pin_ttl_ms()) config.soft_pin_ttl_ms = msg.soft_pin_ttl_ms();
  config.with_hard_pin = msg.with_hard_pin();
  config.preferred_segment = msg.preferred_segment();
  config.preferred_segments.assign(msg.preferred_segments().begin(),
                                   msg.preferred_segments().end());
  config.promotion = msg.promotion();
  return config;
}

uint64_t CountErrors(const std::vector<absl::Status>& statuses) {
  uint64_t errors = 0;
  for (const absl::Status& status : statuses) errors += status.ok() ? 0 : 1;
  return errors;
}

// Fills a BatchStatusReply from per-key statuses.
Outcome StatusesReply(const std::vector<absl::Status>& statuses, rpc::BatchStatusReply* reply) {
  for (const absl::Status& status : statuses) ToRpc(status, reply->add_statuses());
  return Outcome{absl::OkStatus(), statuses.size(), CountErrors(statuses)};
}

// Drain moves handed out by one FetchDrainWork at most.
constexpr size_t kMaxDrainUnitsPerFetch = 64;

// The longest a PullJournal is held, and the most entries one answer carries.
constexpr std::chrono::milliseconds kMaxJournalWait{1000};
constexpr size_t kJournalBatchEntries = 16384;

// The longest a PutEnd's reply waits for the stores keeping manifests of its objects to
// acknowledge them (a store that lags longer costs its puts this much each, and those puts may be
// lost if the master dies before the store catches up).
constexpr std::chrono::milliseconds kMaxManifestWait{500};

// RPCs whose journal entries should leave before their reply. (BatchPutStart's announcements go
// out from the long-poll thread while the client writes the bytes: a whole transfer and PutEnd
// round trip before the put returns.)
bool ChangesManifests(RpcOp op) {
  switch (op) {
    case RpcOp::kBatchPutEnd:  // commits without an announced checksum, drops of replaced ones
    case RpcOp::kBatchRemove:
    case RpcOp::kBatchReplicaClear:
    case RpcOp::kReplicaCopyEnd:
    case RpcOp::kRemoveByRegex:
    case RpcOp::kRemoveAll:
    case RpcOp::kSyncDiskTier:  // spilled objects leave memory
      return true;
    default:
      return false;
  }
}

// Checks a listen address "host:port" or "[v6]:port" (port 0: any port).
absl::Status CheckAddress(const std::string& address) { return ParseHostPort(address).status(); }

}  // namespace

class GrpcMasterServer::Handler final : public rpc::MasterService::CallbackService {
 public:
  Handler(MasterService* service, std::function<uint64_t()> term,
          std::function<absl::Status()> admit, MasterMetrics* metrics, std::string cluster_secret)
      : service_(service),
        term_(std::move(term)),
        admit_(std::move(admit)),
        metrics_(metrics),
        cluster_secret_(std::move(cluster_secret)) {}

  grpc::ServerUnaryReactor* MountSegment(grpc::CallbackServerContext* context,
                                         const rpc::MountSegmentRequest* request,
                                         rpc::MountSegmentReply* reply) override {
    return Serve(context, RpcOp::kMountSegment, reply, [&]() -> Outcome {
      if (auto status = CheckClient(request->client_id()); !status.ok()) return {status};
      const rpc::SegmentMsg& msg = request->segment();
      const Segment segment{msg.name(), msg.base(), msg.size()};
      if (auto status = CheckSegmentRange(segment); !status.ok()) return {status};
      if (request->restoring()) {
        auto mount = service_->MountSegmentForRestore(request->client_id(), segment,
                                                      request->has_disk_tier());
        if (!mount.ok()) return {mount.status()};
        reply->set_epoch(mount->epoch);
        reply->set_fresh(mount->fresh);
        return {};
      }
      auto epoch = service_->MountSegment(request->client_id(), segment);
      if (!epoch.ok()) return {epoch.status()};
      reply->set_epoch(*epoch);
      return {};
    });
  }

  grpc::ServerUnaryReactor* UnmountSegment(grpc::CallbackServerContext* context,
                                           const rpc::UnmountSegmentRequest* request,
                                           rpc::StatusReply* reply) override {
    return Serve(context, RpcOp::kUnmountSegment, reply, [&]() -> Outcome {
      if (auto status = CheckClient(request->client_id()); !status.ok()) return {status};
      return {service_->UnmountSegment(request->client_id(), request->name())};
    });
  }

  grpc::ServerUnaryReactor* Ping(grpc::CallbackServerContext* context,
                                 const rpc::PingRequest* request, rpc::PingReply* reply) override {
    return Serve(context, RpcOp::kPing, reply, [&]() -> Outcome {
      if (auto status = CheckClient(request->client_id()); !status.ok()) return {status};
      reply->set_need_remount(service_->Ping(request->client_id()) == ClientState::kNeedRemount);
      return {};
    });
  }

  // Not counted in the metrics (a client asks once per master); admitted like any call.
  grpc::ServerUnaryReactor* Describe(grpc::CallbackServerContext* context,
                                     const rpc::DescribeRequest* /*request*/,
                                     rpc::DescribeReply* reply) override {
    grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
    if (grpc::Status auth = CheckMasterCallCredential(*context, cluster_secret_); !auth.ok()) {
      reactor->Finish(auth);
      return reactor;
    }
    const Outcome outcome = Run(reply, [&]() -> Outcome {
      reply->set_fast_rpc_port(fast_rpc_port_.load());
      return {};
    });
    ToRpc(outcome.status, reply->mutable_status());
    reply->set_term(term_ ? term_() : 0);
    reactor->Finish(grpc::Status::OK);
    return reactor;
  }

  void SetFastRpcPort(uint16_t port) { fast_rpc_port_.store(port); }

  // Serves one fast-path frame (rpc/fast_rpc_wire.h) with the same bodies as the gRPC methods.
  void ServeFast(uint8_t method, std::string request, FastRpcServer::Done done) {
    switch (static_cast<rpc::FastMethod>(method)) {
      case rpc::FastMethod::kBatchPutStart:
        return ServeFastCall<rpc::BatchPutStartRequest, rpc::BatchPutStartReply>(
            RpcOp::kBatchPutStart, request, std::move(done),
            [this](const auto& in, auto* out, auto*) { return PutStartCall(in, out); });
      case rpc::FastMethod::kBatchPutEnd:
        return ServeFastCall<rpc::BatchPutEndRequest, rpc::BatchStatusReply>(
            RpcOp::kBatchPutEnd, request, std::move(done),
            [this](const auto& in, auto* out, auto* marks) { return PutEndCall(in, out, marks); });
      case rpc::FastMethod::kBatchPutRevoke:
        return ServeFastCall<rpc::BatchKeysRequest, rpc::BatchStatusReply>(
            RpcOp::kBatchPutRevoke, request, std::move(done),
            [this](const auto& in, auto* out, auto*) { return PutRevokeCall(in, out); });
      case rpc::FastMethod::kBatchGetReplicaList:
        return ServeFastCall<rpc::BatchKeysRequest, rpc::BatchGetReplicaListReply>(
            RpcOp::kBatchGetReplicaList, request, std::move(done),
            [this](const auto& in, auto* out, auto*) { return GetReplicaListCall(in, out); });
      case rpc::FastMethod::kBatchExist:
        return ServeFastCall<rpc::BatchKeysRequest, rpc::BatchExistReply>(
            RpcOp::kBatchExist, request, std::move(done),
            [this](const auto& in, auto* out, auto*) { return ExistCall(in, out); });
      case rpc::FastMethod::kBatchRemove:
        return ServeFastCall<rpc::BatchKeysRequest, rpc::BatchStatusReply>(
            RpcOp::kBatchRemove, request, std::move(done),
            [this](const auto& in, auto* out, auto*) { return RemoveCall(in, out); });
      case rpc::FastMethod::kPullJournal: {
        auto call = std::make_shared<std::pair<rpc::PullJournalRequest, rpc::PullJournalReply>>();
        if (!call->first.ParseFromString(request)) break;
        PullJournalCall(call->first, &call->second, [call, done = std::move(done)] {
          done(rpc::FastStatus::kOk, call->second.SerializeAsString());
        });
        return;
      }
      case rpc::FastMethod::kReleaseLeases:
        return ServeFastCall<rpc::ReleaseLeasesRequest, rpc::ReleaseLeasesReply>(
            RpcOp::kReleaseLeases, request, std::move(done),
            [this](const auto& in, auto* out, auto*) { return ReleaseLeasesCall(in, out); });
      default:
        return done(rpc::FastStatus::kUnknownMethod, {});
    }
    done(rpc::FastStatus::kBadRequest, {});
  }

  grpc::ServerUnaryReactor* BatchPutStart(grpc::CallbackServerContext* context,
                                          const rpc::BatchPutStartRequest* request,
                                          rpc::BatchPutStartReply* reply) override {
    return Serve(context, RpcOp::kBatchPutStart, reply,
                 [&] { return PutStartCall(*request, reply); });
  }

  grpc::ServerUnaryReactor* BatchPutEnd(grpc::CallbackServerContext* context,
                                        const rpc::BatchPutEndRequest* request,
                                        rpc::BatchStatusReply* reply) override {
    // The reply waits until the stores that keep manifests of the objects know them.
    std::vector<ManifestMark> marks;
    return Serve(
        context, RpcOp::kBatchPutEnd, reply, [&] { return PutEndCall(*request, reply, &marks); },
        &marks);
  }

  grpc::ServerUnaryReactor* BatchPutRevoke(grpc::CallbackServerContext* context,
                                           const rpc::BatchKeysRequest* request,
                                           rpc::BatchStatusReply* reply) override {
    return Serve(context, RpcOp::kBatchPutRevoke, reply,
                 [&] { return PutRevokeCall(*request, reply); });
  }

  grpc::ServerUnaryReactor* BatchGetReplicaList(grpc::CallbackServerContext* context,
                                                const rpc::BatchKeysRequest* request,
                                                rpc::BatchGetReplicaListReply* reply) override {
    return Serve(context, RpcOp::kBatchGetReplicaList, reply,
                 [&] { return GetReplicaListCall(*request, reply); });
  }

  grpc::ServerUnaryReactor* BatchExist(grpc::CallbackServerContext* context,
                                       const rpc::BatchKeysRequest* request,
                                       rpc::BatchExistReply* reply) override {
    return Serve(context, RpcOp::kBatchExist, reply, [&] { return ExistCall(*request, reply); });
  }

  grpc::ServerUnaryReactor* BatchRemove(grpc::CallbackServerContext* context,
                                        const rpc::BatchKeysRequest* request,
                                        rpc::BatchStatusReply* reply) override {
    return Serve(context, RpcOp::kBatchRemove, reply, [&] { return RemoveCall(*request, reply); });
  }

  grpc::ServerUnaryReactor* BatchReplicaClear(grpc::CallbackServerContext* context,
                                              const rpc::BatchKeysRequest* request,
                                              rpc::BatchStatusReply* reply) override {
    return Serve(context, RpcOp::kBatchReplicaClear, reply, [&]() -> Outcome {
      if (auto status = CheckBatch(request->keys_size()); !status.ok()) return {status};
      ApplyReleases(request->released_leases());
      return StatusesReply(
          service_->BatchReplicaClear(Keys(request->keys()), request->segment_name()), reply);
    });
  }

  grpc::ServerUnaryReactor* ReplicaCopyStart(grpc::CallbackServerContext* context,
                                             const rpc::ReplicaCopyStartRequest* request,
                                             rpc::ReplicaCopyStartReply* reply) override {
    return Serve(context, RpcOp::kReplicaCopyStart, reply, [&]() -> Outcome {
      if (auto status = CheckClient(request->client_id()); !status.ok()) return {status};
      if (auto status = CheckBatch(request->targets_size()); !status.ok()) return {status};
      absl::StatusOr<CopyPlan> plan = service_->ReplicaCopyStart(
          request->client_id(), request->key(), request->source(),
          std::vector<std::string>(request->targets().begin(), request->targets().end()),
          request->move());
      if (!plan.ok()) return {plan.status()};
      reply->set_size(plan->size);
      reply->set_checksum(plan->checksum);
      for (const Replica& replica : plan->targets) ToRpc(replica, reply->add_targets());
      return {};
    });
  }

  grpc::ServerUnaryReactor* ReplicaCopyEnd(grpc::CallbackServerContext* context,
                                           const rpc::ReplicaCopyEndRequest* request,
                                           rpc::StatusReply* reply) override {
    return Serve(context, RpcOp::kReplicaCopyEnd, reply, [&]() -> Outcome {
      if (auto status = CheckClient(request->client_id()); !status.ok()) return {status};
      return {service_->ReplicaCopyEnd(request->client_id(), request->key(), request->revoke())};
    });
  }

  grpc::ServerUnaryReactor* FetchDrainWork(grpc::CallbackServerContext* context,
                                           const rpc::FetchDrainWorkRequest* request,
                                           rpc::FetchDrainWorkReply* reply) override {
    return Serve(context, RpcOp::kFetchDrainWork, reply, [&]() -> Outcome {
      if (auto status = CheckClient(request->client_id()); !status.ok()) return {status};
      const uint32_t max_units =
          std::min<uint32_t>(request->max_units(), static_cast<uint32_t>(kMaxDrainUnitsPerFetch));
      absl::StatusOr<std::vector<DrainUnit>> units =
          service_->FetchDrainWork(request->client_id(), max_units);
      if (!units.ok()) return {units.status()};
      for (const DrainUnit& unit : *units) {
        rpc::DrainUnitMsg* msg = reply->add_units();
        msg->set_job_id(unit.job_id);
        msg->set_key(unit.key);
        msg->set_source(unit.source);
        msg->set_target(unit.target);
        msg->set_size(unit.size);
      }
      return {};
    });
  }

  grpc::ServerUnaryReactor* ReportDrainWork(grpc::CallbackServerContext* context,
                                            const rpc::ReportDrainWorkRequest* request,
                                            rpc::StatusReply* reply) override {
    return Serve(context, RpcOp::kReportDrainWork, reply, [&]() -> Outcome {
      if (auto status = CheckClient(request->client_id()); !status.ok()) return {status};
      service_->ReportDrainWork(
          request->client_id(), request->job_id(), request->key(),
          FromErrorCode(request->outcome().code(), request->outcome().message()));
      return {};
    });
  }

  grpc::ServerUnaryReactor* ReleaseLeases(grpc::CallbackServerContext* context,
                                          const rpc::ReleaseLeasesRequest* request,
                                          rpc::ReleaseLeasesReply* reply) override {
    return Serve(context, RpcOp::kReleaseLeases, reply,
                 [&] { return ReleaseLeasesCall(*request, reply); });
  }

  grpc::ServerUnaryReactor* RestoreObjects(grpc::CallbackServerContext* context,
                                           const rpc::RestoreObjectsRequest* request,
                                           rpc::BatchStatusReply* reply) override {
    return Serve(context, RpcOp::kRestoreObjects, reply, [&]() -> Outcome {
      if (auto status = CheckClient(request->client_id()); !status.ok()) return {status};
      if (auto status = CheckBatch(request->objects_size()); !status.ok()) return {status};
      std::vector<RestoredObject> objects;
      objects.reserve(static_cast<size_t>(request->objects_size()));
      for (const rpc::RestoredObjectMsg& o : request->objects()) {
        objects.push_back(RestoredObject{o.key(), o.address(), o.size(), o.checksum(), o.pins()});
      }
      auto results = service_->RestoreObjects(request->client_id(), request->segment_name(),
                                              objects, request->last());
      if (!results.ok()) return {results.status()};
      return StatusesReply(*results, reply);
    });
  }

  grpc::ServerUnaryReactor* PullJournal(grpc::CallbackServerContext* context,
                                        const rpc::PullJournalRequest* request,
                                        rpc::PullJournalReply* reply) override {
    grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
    if (grpc::Status auth = CheckMasterCallCredential(*context, cluster_secret_); !auth.ok()) {
      reactor->Finish(auth);
      return reactor;
    }
    PullJournalCall(*request, reply, [reactor] { reactor->Finish(grpc::Status::OK); });
    return reactor;
  }

  // Answers at once when there are entries (or an error, or wait_ms is 0); otherwise parks the
  // call with the long polls until an entry comes or wait_ms (at most kMaxJournalWait) passes.
  // `request` and `reply` must live until `finish` has run.
  void PullJournalCall(const rpc::PullJournalRequest& request, rpc::PullJournalReply* reply,
                       std::function<void()> finish) {
    const auto wait = std::min<std::chrono::milliseconds>(
        std::chrono::milliseconds(request.wait_ms()), kMaxJournalWait);
    auto attempt = [this, finish = std::move(finish), &request, reply](bool must_finish) {
      const Clock::time_point start = Clock::now();
      const Outcome outcome = Run(reply, [&] { return FillJournal(request, reply); });
      if (!must_finish && outcome.status.ok() && outcome.keys == 0 && !reply->reset()) {
        return false;  // nothing new yet
      }
      Answer(finish, RpcOp::kPullJournal, outcome, start, reply);
      return true;
    };
    const bool acknowledges = request.ack() != 0;  // read now: a parked call may end at once
    const uint64_t changes_seen = polls_.Changes();
    if (wait.count() == 0 || attempt(false)) {
      if (wait.count() == 0) attempt(true);
    } else {
      reply->Clear();
      polls_.Park(std::move(attempt), Clock::now() + wait, changes_seen);
    }
    // An acknowledgement may let parked PutEnds answer: at once, on this thread, rather than
    // after waking the poll thread.
    if (acknowledges) polls_.RunNow();
  }

  // Finishes parked long polls; new ones are answered at once.
  void StopPolls() { polls_.Stop(); }
  void NotifyPolls() { polls_.Notify(); }

  grpc::ServerUnaryReactor* GetSize(grpc::CallbackServerContext* context,
                                    const rpc::GetSizeRequest* request,
                                    rpc::GetSizeReply* reply) override {
    return Serve(context, RpcOp::kGetSize, reply, [&]() -> Outcome {
      auto size = service_->GetSize(request->key());
      if (!size.ok()) return {size.status()};
      reply->set_size(*size);
      return {};
    });
  }

  grpc::ServerUnaryReactor* RemoveByRegex(grpc::CallbackServerContext* context,
                                          const rpc::RemoveByRegexRequest* request,
                                          rpc::RemoveCountReply* reply) override {
    return Serve(context, RpcOp::kRemoveByRegex, reply, [&]() -> Outcome {
      if (auto status = CheckRegexSize(request->pattern()); !status.ok()) return {status};
      auto removed = service_->RemoveByRegex(request->pattern(), request->force(),
                                             TenantOrDefault(request->tenant_id()));
      if (!removed.ok()) return {removed.status()};
      reply->set_removed(*removed);
      return {};
    });
  }

  grpc::ServerUnaryReactor* RemoveAll(grpc::CallbackServerContext* context,
                                      const rpc::RemoveAllRequest* request,
                                      rpc::RemoveCountReply* reply) override {
    return Serve(context, RpcOp::kRemoveAll, reply, [&]() -> Outcome {
      reply->set_removed(service_->RemoveAll(request->force(), request->tenant_id()));
      return {};
    });
  }

  grpc::ServerUnaryReactor* SyncDiskTier(grpc::CallbackServerContext* context,
                                         const rpc::SyncDiskTierRequest* request,
                                         rpc::SyncDiskTierReply* reply) override {
    return Serve(context, RpcOp::kSyncDiskTier, reply, [&]() -> Outcome {
      if (auto status = CheckClient(request->client_id()); !status.ok()) return {status};
      DiskSyncRequest sync;
      sync.endpoint = request->endpoint();
      sync.tier_id = request->tier_id();
      sync.full = request->full();
      sync.max_tasks = request->max_tasks();
      for (const rpc::DiskObjectMsg& o : request->spilled()) {
        sync.spilled.push_back(DiskObject{o.key(), o.size(), o.checksum()});
      }
      for (const rpc::DiskObjectMsg& o : request->announced()) {
        sync.announced.push_back(DiskObject{o.key(), o.size(), o.checksum()});
      }
      sync.removed = Keys(request->removed());
      auto result = service_->SyncDiskTier(request->client_id(), sync);
      if (!result.ok()) return {result.status()};
      reply->set_need_full_sync(result->need_full_sync);
      for (const SpillTask& task : result->spill) {
        rpc::SpillTaskMsg* msg = reply->add_spill();
        msg->set_key(task.key);
        msg->set_address(task.address);
        msg->set_size(task.size);
        msg->set_checksum(task.checksum);
      }
      for (const std::string& key : result->drop) reply->add_drop(key);
      for (const DiskObject& object : result->promote) {
        rpc::DiskObjectMsg* msg = reply->add_promote();
        msg->set_key(object.key);
        msg->set_size(object.size);
        msg->set_checksum(object.checksum);
      }
      return {absl::OkStatus(), static_cast<uint64_t>(sync.spilled.size() + sync.announced.size() +
                                                      sync.removed.size())};
    });
  }

 private:
  // Runs `body`, then stamps the reply with its status and the term, records the RPC and finishes
  // it. The transport status is always OK: errors travel in the reply. Handlers never block on
  // I/O, so they run inline on gRPC's own (bounded) threads. `await` (filled by `body`): manifest
  // marks the owners must acknowledge before the reply leaves; the call is parked with the long
  // polls meanwhile, at most kMaxManifestWait.
  template <typename Reply, typename Body>
  grpc::ServerUnaryReactor* Serve(grpc::CallbackServerContext* context, RpcOp op, Reply* reply,
                                  Body&& body, const std::vector<ManifestMark>* await = nullptr) {
    grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
    if (grpc::Status auth = CheckMasterCallCredential(*context, cluster_secret_); !auth.ok()) {
      reactor->Finish(auth);  // refused before the request reaches the MasterService
      return reactor;
    }
    Dispatch(op, reply, std::forward<Body>(body), await,
             [reactor] { reactor->Finish(grpc::Status::OK); });
    return reactor;
  }

  // A fast-path frame: parses the request, runs `body(request, reply, &marks)` like Serve, and
  // hands the serialized reply to `done`. The request and reply live until `done` has run.
  template <typename Request, typename Reply, typename Body>
  void ServeFastCall(RpcOp op, const std::string& payload, FastRpcServer::Done done, Body body) {
    auto call = std::make_shared<std::pair<Request, Reply>>();
    if (!call->first.ParseFromString(payload)) {
      done(rpc::FastStatus::kBadRequest, {});
      return;
    }
    std::vector<ManifestMark> marks;
    Dispatch(
        op, &call->second, [&] { return body(call->first, &call->second, &marks); }, &marks,
        [call, done = std::move(done)] {
          std::string out;
          call->second.SerializeToString(&out);
          done(rpc::FastStatus::kOk, std::move(out));
        });
  }

  // The transport-free part of a call: runs `body` if admitted, makes its manifest changes leave
  // first, waits for `await` as described at Serve, then stamps the reply and calls `finish`
  // (on this thread, or on the long-poll thread when the call was parked).
  template <typename Reply, typename Body>
  void Dispatch(RpcOp op, Reply* reply, Body&& body, const std::vector<ManifestMark>* await,
                std::function<void()> finish) {
    const Clock::time_point start = Clock::now();
    const Outcome outcome = Run(reply, std::forward<Body>(body));
    // Manifest changes this call made go out to their owners before its own reply does, so a
    // master killed right after answering has already sent them (docs/master.md).
    if (ChangesManifests(op)) polls_.RunNow();
    const uint64_t changes_seen = polls_.Changes();
    if (await == nullptr || await->empty() || service_->ManifestsHave(*await)) {
      Answer(finish, op, outcome, start, reply);
      return;
    }
    auto attempt = [this, finish = std::move(finish), op, outcome, start, reply,
                    marks = *await](bool must_finish) {
      const bool known = service_->ManifestsHave(marks);
      if (!known && !must_finish) return false;
      if (!known && metrics_ != nullptr) metrics_->RecordManifestLag();
      Answer(finish, op, outcome, start, reply);
      return true;
    };
    polls_.Park(std::move(attempt), Clock::now() + kMaxManifestWait, changes_seen);
  }

  // Runs `body` if the call is admitted; an exception fails this call only.
  template <typename Reply, typename Body>
  Outcome Run(Reply* reply, Body&& body) {
    try {
      absl::Status admitted = admit_ ? admit_() : absl::OkStatus();
      return admitted.ok() ? body() : Outcome{std::move(admitted)};
    } catch (const std::exception& e) {  // e.g. std::bad_alloc: fail this call, keep serving
      reply->Clear();
      return Outcome{MakeError(ErrorCode::kInternalError, e.what())};
    }
  }

  // Stamps the reply with the outcome's status and the term, records the RPC and finishes it.
  template <typename Reply>
  void Answer(const std::function<void()>& finish, RpcOp op, const Outcome& outcome,
              Clock::time_point start, Reply* reply) {
    ToRpc(outcome.status, reply->mutable_status());
    reply->set_term(term_ ? term_() : 0);
    if (metrics_ != nullptr) {
      metrics_->RecordRpc(op, outcome.status.ok(), outcome.keys, outcome.key_errors,
                          Clock::now() - start);
    }
    finish();
  }

  // The bodies of the calls served by gRPC and by the fast path alike.
  Outcome PutStartCall(const rpc::BatchPutStartRequest& request, rpc::BatchPutStartReply* reply) {
    if (auto status = CheckClient(request.client_id()); !status.ok()) return {status};
    if (auto status = CheckBatch(request.keys_size()); !status.ok()) return {status};
    if (auto status = CheckPutSizes(static_cast<size_t>(request.keys_size()),
                                    static_cast<size_t>(request.sizes_size()));
        !status.ok()) {
      return {status};
    }
    if (auto status = CheckPutChecksums(static_cast<size_t>(request.keys_size()),
                                        static_cast<size_t>(request.checksums_size()));
        !status.ok()) {
      return {status};
    }
    ApplyReleases(request.released_leases());
    return PutStart(request, reply);
  }

  // Fills `marks` with the manifest marks the reply must wait for.
  Outcome PutEndCall(const rpc::BatchPutEndRequest& request, rpc::BatchStatusReply* reply,
                     std::vector<ManifestMark>* marks) {
    if (auto status = CheckClient(request.client_id()); !status.ok()) return {status};
    if (auto status = CheckBatch(request.keys_size()); !status.ok()) return {status};
    // No checksums at all means none recorded (0); otherwise one per key.
    if (auto status = CheckPutChecksums(static_cast<size_t>(request.keys_size()),
                                        static_cast<size_t>(request.checksums_size()));
        !status.ok()) {
      return {status};
    }
    std::vector<uint64_t> checksums(request.checksums().begin(), request.checksums().end());
    checksums.resize(static_cast<size_t>(request.keys_size()), 0);
    std::vector<std::string> keys = Keys(request.keys());
    const std::vector<absl::Status> statuses =
        service_->BatchPutEnd(request.client_id(), keys, checksums);
    std::vector<std::string> ended;
    for (size_t i = 0; i < keys.size(); ++i) {
      if (statuses[i].ok()) ended.push_back(std::move(keys[i]));
    }
    *marks = service_->ManifestMarks(ended);
    return StatusesReply(statuses, reply);
  }

  Outcome PutRevokeCall(const rpc::BatchKeysRequest& request, rpc::BatchStatusReply* reply) {
    if (auto status = CheckClient(request.client_id()); !status.ok()) return {status};
    if (auto status = CheckBatch(request.keys_size()); !status.ok()) return {status};
    ApplyReleases(request.released_leases());
    return StatusesReply(service_->BatchPutRevoke(request.client_id(), Keys(request.keys())),
                         reply);
  }

  Outcome GetReplicaListCall(const rpc::BatchKeysRequest& request,
                             rpc::BatchGetReplicaListReply* reply) {
    if (auto status = CheckBatch(request.keys_size()); !status.ok()) return {status};
    ApplyReleases(request.released_leases());
    return GetReplicaList(request, reply);
  }

  Outcome ExistCall(const rpc::BatchKeysRequest& request, rpc::BatchExistReply* reply) {
    if (auto status = CheckBatch(request.keys_size()); !status.ok()) return {status};
    ApplyReleases(request.released_leases());
    const std::vector<bool> exists = service_->BatchExist(Keys(request.keys()));
    for (bool exist : exists) reply->add_exists(exist);
    return {absl::OkStatus(), exists.size(), 0};
  }

  Outcome RemoveCall(const rpc::BatchKeysRequest& request, rpc::BatchStatusReply* reply) {
    if (auto status = CheckBatch(request.keys_size()); !status.ok()) return {status};
    ApplyReleases(request.released_leases());
    return StatusesReply(service_->BatchRemove(Keys(request.keys()), request.force()), reply);
  }

  Outcome ReleaseLeasesCall(const rpc::ReleaseLeasesRequest& request,
                            rpc::ReleaseLeasesReply* reply) {
    absl::StatusOr<uint64_t> released = service_->ReleaseLeases(
        std::vector<uint64_t>(request.lease_ids().begin(), request.lease_ids().end()));
    if (!released.ok()) return {released.status()};
    reply->set_released(*released);
    return {absl::OkStatus(), static_cast<uint64_t>(request.lease_ids_size()), 0};
  }

  Outcome PutStart(const rpc::BatchPutStartRequest& request, rpc::BatchPutStartReply* reply) {
    const ReplicateConfig config = FromRpc(request.config());
    const std::vector<std::string> keys = Keys(request.keys());
    const std::vector<uint64_t> sizes(request.sizes().begin(), request.sizes().end());
    const std::vector<absl::StatusOr<std::vector<Replica>>> results =
        StartPuts(*service_, request.client_id(), keys, sizes, config, request.upsert(),
                  std::vector<uint64_t>(request.checksums().begin(), request.checksums().end()));
    uint64_t errors = 0;
    for (const auto& result : results) {
      rpc::PutStartResult* out = reply->add_results();
      ToRpc(result.status(), out->mutable_status());
      if (!result.ok()) {
        ++errors;
        continue;
      }
      for (const Replica& replica : *result) ToRpc(replica, out->add_replicas());
    }
    return Outcome{absl::OkStatus(), keys.size(), errors};
  }

  // Ends the read leases a call carries along (best effort: ids the master does not know, or too
  // many for one call, are dropped; those leases end at their deadline).
  void ApplyReleases(const google::protobuf::RepeatedField<uint64_t>& ids) {
    if (ids.empty()) return;
    absl::StatusOr<uint64_t> released =
        service_->ReleaseLeases(std::vector<uint64_t>(ids.begin(), ids.end()));
    if (!released.ok())
      YB_LOG_DEBUG("releases carried by a call: {}", released.status().ToString());
  }

  // One PullJournal answer into `reply` (keys: entries returned).
  Outcome FillJournal(const rpc::PullJournalRequest& request, rpc::PullJournalReply* reply) {
    reply->Clear();
    if (auto status = CheckClient(request.client_id()); !status.ok()) return {status};
    absl::StatusOr<JournalBatch> batch = service_->PullJournal(
        request.client_id(), request.journal_id(), request.ack(), kJournalBatchEntries);
    if (!batch.ok()) return {batch.status()};
    reply->set_journal_id(batch->journal_id);
    reply->set_last_seq(batch->last_seq);
    reply->set_reset(batch->reset);
    for (JournalEntry& entry : batch->entries) {
      rpc::JournalEntryMsg* msg = reply->add_entries();
      msg->set_drop(entry.op == JournalEntry::Op::kDrop);
      msg->set_address(entry.address);
      if (entry.op == JournalEntry::Op::kAdd) {
        msg->set_committed(entry.committed);
        msg->set_size(entry.size);
        msg->set_checksum(entry.checksum);
        msg->set_pins(entry.pins);
        msg->set_key(std::move(entry.key));
      }
    }
    return Outcome{absl::OkStatus(), batch->entries.size(), 0};
  }

  Outcome GetReplicaList(const rpc::BatchKeysRequest& request,
                         rpc::BatchGetReplicaListReply* reply) {
    const auto results = request.query_only() ? service_->BatchQueryReplicas(Keys(request.keys()))
                                              : service_->BatchGetReplicaList(Keys(request.keys()));
    uint64_t hits = 0;
    uint64_t misses = 0;
    for (const auto& result : results) {
      rpc::ObjectLocationMsg* out = reply->add_results();
      ToRpc(result.status(), out->mutable_status());
      if (!result.ok()) {
        if (ToErrorCode(result.status()) == ErrorCode::kObjectNotFound) ++misses;
        continue;
      }
      ++hits;
      out->set_size(result->size);
      out->set_checksum(result->checksum);
      out->set_lease_ttl_ms(static_cast<uint64_t>(std::max<int64_t>(0, result->lease_ttl.count())));
      out->set_lease_id(result->lease_id);
      for (const Replica& replica : result->replicas) ToRpc(replica, out->add_replicas());
    }
    // Metadata queries are not cache lookups.
    if (metrics_ != nullptr && !request.query_only()) metrics_->RecordLookups(hits, misses);
    return Outcome{absl::OkStatus(), results.size(), results.size() - hits};
  }

  MasterService* const service_;
  const std::function<uint64_t()> term_;
  const std::function<absl::Status()> admit_;
  MasterMetrics* const metrics_;
  const std::string cluster_secret_;
  std::atomic<uint16_t> fast_rpc_port_{0};
  LongPolls polls_;
};

absl::StatusOr<std::unique_ptr<GrpcMasterServer>> GrpcMasterServer::Start(
    const std::string& address, MasterService* service, Options options) {
  if (service == nullptr) return absl::InvalidArgumentError("no MasterService given");
  if (auto status = CheckAddress(address); !status.ok()) return status;
  if (options.max_concurrent_streams < 1) {
    return absl::InvalidArgumentError(absl::StrCat("max_concurrent_streams must be positive, got ",
                                                   options.max_concurrent_streams));
  }
  if (options.max_message_bytes < (1 << 20)) {
    return absl::InvalidArgumentError(
        absl::StrCat("max_message_bytes must be at least 1 MiB, got ", options.max_message_bytes));
  }

  std::unique_ptr<GrpcMasterServer> server(new GrpcMasterServer());
  server->handler_ =
      std::make_unique<Handler>(service, std::move(options.term_provider), std::move(options.admit),
                                options.metrics, options.security.cluster_secret);
  absl::StatusOr<std::shared_ptr<grpc::ServerCredentials>> credentials =
      MasterServerCredentials(options.security);
  if (!credentials.ok()) return credentials.status();

  grpc::ServerBuilder builder;
  // Without this gRPC sets SO_REUSEPORT, and a second master would share the port silently.
  builder.AddChannelArgument(GRPC_ARG_ALLOW_REUSEPORT, 0);
  builder.SetMaxReceiveMessageSize(options.max_message_bytes);
  builder.SetMaxSendMessageSize(options.max_message_bytes);
  builder.AddChannelArgument(GRPC_ARG_MAX_CONCURRENT_STREAMS, options.max_concurrent_streams);
  int selected_port = 0;
  builder.AddListeningPort(address, *credentials, &selected_port);
  builder.RegisterService(server->handler_.get());
  server->server_ = builder.BuildAndStart();
  if (server->server_ == nullptr || selected_port <= 0) {
    if (server->server_ != nullptr) server->Shutdown(std::chrono::milliseconds(0));
    server->shut_down_ = true;
    return absl::UnavailableError(
        absl::StrCat("cannot serve gRPC on ", address, " (address in use or not local?)"));
  }
  server->port_ = static_cast<uint16_t>(selected_port);
  server->service_ = service;
  Handler* handler = server->handler_.get();
  service->SetJournalListener([handler] { handler->NotifyPolls(); });
  YB_LOG_DEBUG("master gRPC serving on {} (port {})", address, server->port_);
  return server;
}

GrpcMasterServer::~GrpcMasterServer() { Shutdown(); }

FastRpcServer::Dispatcher GrpcMasterServer::FastDispatcher() {
  Handler* handler = handler_.get();
  return [handler](uint8_t method, std::string request, FastRpcServer::Done done) {
    handler->ServeFast(method, std::move(request), std::move(done));
  };
}

void GrpcMasterServer::AdvertiseFastRpcPort(uint16_t port) { handler_->SetFastRpcPort(port); }

void GrpcMasterServer::Shutdown(std::chrono::milliseconds grace) {
  if (shut_down_ || server_ == nullptr) {
    shut_down_ = true;
    return;
  }
  shut_down_ = true;
  if (service_ != nullptr) service_->SetJournalListener(nullptr);
  handler_->StopPolls();  // a parked call would hold Shutdown for its whole wait
  server_->Shutdown(std::chrono::system_clock::now() + grace);
  server_->Wait();
}

}  // namespace yuebing::master
