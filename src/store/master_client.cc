#include "store/master_client.h"

#include <grpcpp/grpcpp.h>

#include "absl/strings/str_cat.h"
#include "master.grpc.pb.h"
#include "yuebing/common/error_code.h"
#include "yuebing/common/status.h"

namespace yuebing::store {

namespace rpc = ::yuebing::rpc;

class MasterClient::Impl {
 public:
  Impl(std::shared_ptr<grpc::Channel> channel, std::chrono::milliseconds timeout)
      : stub(rpc::MasterService::NewStub(channel)), timeout(timeout) {}

  std::unique_ptr<rpc::MasterService::Stub> stub;
  const std::chrono::milliseconds timeout;
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
    : address_(std::move(address)), impl_(std::move(impl)) {}

MasterClient::~MasterClient() = default;

absl::StatusOr<std::unique_ptr<MasterClient>> MasterClient::Create(
    const std::string& address, std::chrono::milliseconds timeout) {
  if (address.empty()) return MakeError(ErrorCode::kInvalidParams, "empty master address");
  grpc::ChannelArguments args;
  args.SetMaxReceiveMessageSize(64 << 20);
  args.SetMaxSendMessageSize(64 << 20);
  // Reconnect quickly after a master restart.
  args.SetInt(GRPC_ARG_MAX_RECONNECT_BACKOFF_MS, 1000);
  args.SetInt(GRPC_ARG_INITIAL_RECONNECT_BACKOFF_MS, 100);
  auto channel = grpc::CreateCustomChannel(address, grpc::InsecureChannelCredentials(), args);
  return std::unique_ptr<MasterClient>(
      new MasterClient(address, std::make_unique<Impl>(std::move(channel), timeout)));
}

namespace {

// Runs one unary RPC with the client's deadline; checks the transport status and the reply's term
// (raising the highest term seen, refusing replies from older ones).
template <typename Request, typename Reply>
absl::Status Call(const char* name,
                  grpc::Status (rpc::MasterService::Stub::*method)(grpc::ClientContext*,
                                                                   const Request&, Reply*),
                  rpc::MasterService::Stub& stub, std::chrono::milliseconds timeout,
                  const std::string& address, std::atomic<uint64_t>& max_term,
                  const Request& request, Reply& reply) {
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() + timeout);
  grpc::Status rpc_status = (stub.*method)(&context, request, &reply);
  if (!rpc_status.ok()) {
    return MakeError(ErrorCode::kRpcFail,
                     absl::StrCat(name, " to ", address, ": ", rpc_status.error_message()));
  }
  uint64_t seen = max_term.load();
  while (reply.term() > seen && !max_term.compare_exchange_weak(seen, reply.term())) {
  }
  if (reply.term() < max_term.load()) {
    return MakeError(ErrorCode::kRpcFail,
                     absl::StrCat(name, ": reply from stale master term ", reply.term()));
  }
  return absl::OkStatus();
}

}  // namespace

#define YB_CALL(method, request, reply)                                                    \
  Call(#method, &rpc::MasterService::Stub::method, *impl_->stub, impl_->timeout, address_, \
       max_term_, request, reply)

absl::StatusOr<uint64_t> MasterClient::MountSegment(const master::ClientId& client,
                                                    const master::Segment& segment) {
  rpc::MountSegmentRequest request;
  request.set_client_id(client);
  request.mutable_segment()->set_name(segment.name);
  request.mutable_segment()->set_base(segment.base);
  request.mutable_segment()->set_size(segment.size);
  rpc::MountSegmentReply reply;
  YB_RETURN_IF_ERROR(YB_CALL(MountSegment, request, reply));
  YB_RETURN_IF_ERROR(FromRpc(reply.status()));
  return reply.epoch();
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
    const std::vector<uint64_t>& sizes, const master::ReplicateConfig& config, bool upsert) {
  using Result = absl::StatusOr<std::vector<master::Replica>>;
  rpc::BatchPutStartRequest request;
  request.set_client_id(client);
  for (const std::string& key : keys) request.add_keys(key);
  for (uint64_t size : sizes) request.add_sizes(size);
  request.mutable_config()->set_replica_num(config.replica_num);
  request.mutable_config()->set_with_soft_pin(config.with_soft_pin);
  request.mutable_config()->set_with_hard_pin(config.with_hard_pin);
  request.mutable_config()->set_preferred_segment(config.preferred_segment);
  request.set_upsert(upsert);
  rpc::BatchPutStartReply reply;
  absl::Status status = YB_CALL(BatchPutStart, request, reply);
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
  absl::Status call = YB_CALL(BatchPutEnd, request, reply);
  return StatusesFromReply(call, reply, keys.size());
}

std::vector<absl::Status> MasterClient::BatchPutRevoke(const master::ClientId& client,
                                                       const std::vector<std::string>& keys) {
  rpc::BatchKeysRequest request;
  request.set_client_id(client);
  for (const std::string& key : keys) request.add_keys(key);
  rpc::BatchStatusReply reply;
  absl::Status call = YB_CALL(BatchPutRevoke, request, reply);
  return StatusesFromReply(call, reply, keys.size());
}

std::vector<absl::StatusOr<master::ObjectLocation>> MasterClient::BatchGetReplicaList(
    const std::vector<std::string>& keys) {
  using Result = absl::StatusOr<master::ObjectLocation>;
  rpc::BatchKeysRequest request;
  for (const std::string& key : keys) request.add_keys(key);
  rpc::BatchGetReplicaListReply reply;
  absl::Status status = YB_CALL(BatchGetReplicaList, request, reply);
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
    for (const rpc::ReplicaMsg& r : msg.replicas()) location.replicas.push_back(FromRpc(r));
    out.emplace_back(std::move(location));
  }
  return out;
}

absl::StatusOr<std::vector<bool>> MasterClient::BatchExist(const std::vector<std::string>& keys) {
  rpc::BatchKeysRequest request;
  for (const std::string& key : keys) request.add_keys(key);
  rpc::BatchExistReply reply;
  YB_RETURN_IF_ERROR(YB_CALL(BatchExist, request, reply));
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
  rpc::BatchStatusReply reply;
  absl::Status call = YB_CALL(BatchRemove, request, reply);
  return StatusesFromReply(call, reply, keys.size());
}

absl::StatusOr<uint64_t> MasterClient::GetSize(const std::string& key) {
  rpc::GetSizeRequest request;
  request.set_key(key);
  rpc::GetSizeReply reply;
  YB_RETURN_IF_ERROR(YB_CALL(GetSize, request, reply));
  YB_RETURN_IF_ERROR(FromRpc(reply.status()));
  return reply.size();
}

absl::StatusOr<uint64_t> MasterClient::RemoveByRegex(const std::string& pattern, bool force) {
  rpc::RemoveByRegexRequest request;
  request.set_pattern(pattern);
  request.set_force(force);
  rpc::RemoveCountReply reply;
  YB_RETURN_IF_ERROR(YB_CALL(RemoveByRegex, request, reply));
  YB_RETURN_IF_ERROR(FromRpc(reply.status()));
  return reply.removed();
}

absl::StatusOr<uint64_t> MasterClient::RemoveAll(bool force) {
  rpc::RemoveAllRequest request;
  request.set_force(force);
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
  return out;
}

#undef YB_CALL

}  // namespace yuebing::store
