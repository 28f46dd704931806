// Store client facade: composes the transfer engine, the master connection (MasterApi), the
// segment host (src/store/segment_host.*) and the object client (src/store/object_client.*).
#include "yuebing/store/client.h"

#include <algorithm>
#include <random>
#include <utility>

#include "absl/strings/str_cat.h"
#include "store/client_internal.h"
#include "store/client_security.h"
#include "store/drain_worker.h"
#include "store/engine_port.h"
#include "store/master_client.h"
#include "store/object_client.h"
#include "store/replica_tasks.h"
#include "store/segment_host.h"
#include "store/tenant_scope.h"
#include "yuebing/common/error_code.h"
#include "yuebing/common/logging.h"
#include "yuebing/common/status.h"
#include "yuebing/common/tenant_key.h"

namespace yuebing::store {
namespace {

std::string RandomClientId() {
  std::random_device device;
  return absl::StrCat(absl::Hex(uint64_t{device()} << 32 | device(), absl::kZeroPad16),
                      absl::Hex(uint64_t{device()} << 32 | device(), absl::kZeroPad16));
}

class ClientImpl final : public Client {
 public:
  explicit ClientImpl(const ClientConfig& config)
      : config_(config), id_(RandomClientId()), scope_(config.tenant_id) {}
  // Members go in reverse order: the segment host (disk tier, pings, unmount) first, the engine
  // last.
  ~ClientImpl() override = default;

  // Starts the engine, then connects: to `master` when given, else to a new gRPC MasterClient at
  // config.master_server_address.
  absl::Status Init(std::shared_ptr<MasterApi> master);

  absl::Status Put(const std::string& key, absl::string_view value,
                   const master::ReplicateConfig& config) override {
    std::string scoped;
    return objects_->BatchPutParts({scope_.Key(key, scoped)}, {{value}}, config, false)[0];
  }
  absl::Status PutParts(const std::string& key, absl::Span<const absl::string_view> parts,
                        const master::ReplicateConfig& config) override {
    std::string scoped;
    return objects_->BatchPutParts({scope_.Key(key, scoped)},
                                   {std::vector<absl::string_view>(parts.begin(), parts.end())},
                                   config, false)[0];
  }
  absl::Status Upsert(const std::string& key, absl::string_view value,
                      const master::ReplicateConfig& config) override {
    std::string scoped;
    return objects_->BatchPutParts({scope_.Key(key, scoped)}, {{value}}, config, true)[0];
  }
  absl::StatusOr<std::string> Get(const std::string& key) override {
    std::string scoped;
    return std::move(objects_->BatchGet({scope_.Key(key, scoped)})[0]);
  }
  absl::StatusOr<uint64_t> GetInto(const std::string& key, void* buffer,
                                   uint64_t capacity) override {
    std::string scoped;
    return std::move(
        objects_->BatchGetInto({scope_.Key(key, scoped)}, {Buffer{buffer, capacity}})[0]);
  }
  absl::StatusOr<bool> IsExist(const std::string& key) override {
    std::string scoped;
    return std::move(objects_->BatchIsExist({scope_.Key(key, scoped)})[0]);
  }
  absl::StatusOr<uint64_t> GetSize(const std::string& key) override {
    std::string scoped;
    return objects_->GetSize(scope_.Key(key, scoped));
  }
  absl::Status Remove(const std::string& key, bool force) override {
    std::string scoped;
    return objects_->BatchRemove({scope_.Key(key, scoped)}, force)[0];
  }
  absl::StatusOr<uint64_t> RemoveByRegex(const std::string& pattern, bool force) override {
    return objects_->RemoveByRegex(pattern, force, scope_.tenant());
  }
  absl::StatusOr<uint64_t> RemoveAll(bool force) override {
    return objects_->RemoveAll(force, scope_.tenant());
  }

  std::vector<absl::Status> BatchPut(const std::vector<std::string>& keys,
                                     const std::vector<absl::string_view>& values,
                                     const master::ReplicateConfig& config, bool upsert) override {
    std::vector<std::string> scoped;
    return objects_->BatchPut(scope_.Keys(keys, scoped), values, config, upsert);
  }
  std::vector<absl::Status> BatchPutParts(const std::vector<std::string>& keys,
                                          const std::vector<std::vector<absl::string_view>>& parts,
                                          const master::ReplicateConfig& config,
                                          bool upsert) override {
    std::vector<std::string> scoped;
    return objects_->BatchPutParts(scope_.Keys(keys, scoped), parts, config, upsert);
  }
  std::vector<absl::StatusOr<std::string>> BatchGet(const std::vector<std::string>& keys) override {
    std::vector<std::string> scoped;
    return objects_->BatchGet(scope_.Keys(keys, scoped));
  }
  std::vector<absl::StatusOr<uint64_t>> BatchGetIntoParts(
      const std::vector<std::string>& keys,
      const std::vector<std::vector<Buffer>>& buffers) override {
    std::vector<std::string> scoped;
    return objects_->BatchGetIntoParts(scope_.Keys(keys, scoped), buffers);
  }
  std::vector<absl::StatusOr<uint64_t>> BatchGetInto(const std::vector<std::string>& keys,
                                                     const std::vector<Buffer>& buffers) override {
    std::vector<std::string> scoped;
    return objects_->BatchGetInto(scope_.Keys(keys, scoped), buffers);
  }
  std::vector<absl::StatusOr<uint64_t>> BatchGetAllocated(const std::vector<std::string>& keys,
                                                          const Allocate& allocate) override {
    std::vector<std::string> scoped;
    return objects_->BatchGetAllocated(scope_.Keys(keys, scoped), allocate);
  }
  std::vector<absl::StatusOr<std::vector<absl::Status>>> BatchGetRanges(
      const std::vector<std::string>& keys,
      const std::vector<std::vector<Range>>& ranges) override {
    std::vector<std::string> scoped;
    return objects_->BatchGetRanges(scope_.Keys(keys, scoped), ranges);
  }
  std::vector<absl::Status> StartReadSessions(const std::vector<std::string>& keys) override {
    std::vector<std::string> scoped;
    return objects_->StartReadSessions(scope_.Keys(keys, scoped));
  }
  std::vector<absl::StatusOr<uint64_t>> ReadSessionRanges(
      const std::vector<std::string>& keys,
      const std::vector<std::vector<Range>>& ranges) override {
    std::vector<std::string> scoped;
    return objects_->ReadSessionRanges(scope_.Keys(keys, scoped), ranges);
  }
  std::vector<absl::Status> StartPutSessions(const std::vector<std::string>& keys,
                                             const std::vector<uint64_t>& sizes,
                                             const master::ReplicateConfig& config) override {
    std::vector<std::string> scoped;
    return objects_->StartPutSessions(scope_.Keys(keys, scoped), sizes, config);
  }
  std::vector<absl::StatusOr<uint64_t>> WritePutSessionRanges(
      const std::vector<std::string>& keys,
      const std::vector<std::vector<Range>>& ranges) override {
    std::vector<std::string> scoped;
    return objects_->WritePutSessionRanges(scope_.Keys(keys, scoped), ranges);
  }
  std::vector<absl::Status> EndPutSessions(const std::vector<std::string>& keys) override {
    std::vector<std::string> scoped;
    return objects_->EndPutSessions(scope_.Keys(keys, scoped));
  }
  std::vector<absl::Status> RevokePutSessions(const std::vector<std::string>& keys) override {
    std::vector<std::string> scoped;
    return objects_->RevokePutSessions(scope_.Keys(keys, scoped));
  }
  void EndReadSessions(const std::vector<std::string>& keys) override {
    std::vector<std::string> scoped;
    objects_->EndReadSessions(scope_.Keys(keys, scoped));
  }
  std::vector<absl::StatusOr<bool>> BatchIsExist(const std::vector<std::string>& keys) override {
    std::vector<std::string> scoped;
    return objects_->BatchIsExist(scope_.Keys(keys, scoped));
  }
  std::vector<absl::Status> BatchRemove(const std::vector<std::string>& keys, bool force) override {
    std::vector<std::string> scoped;
    return objects_->BatchRemove(scope_.Keys(keys, scoped), force);
  }
  std::vector<absl::StatusOr<master::ObjectLocation>> BatchQueryReplicas(
      const std::vector<std::string>& keys) override {
    std::vector<std::string> scoped;
    return objects_->BatchQueryReplicas(scope_.Keys(keys, scoped));
  }
  std::vector<absl::Status> BatchReplicaClear(const std::vector<std::string>& keys,
                                              const std::string& segment_name) override {
    std::vector<std::string> scoped;
    return objects_->BatchReplicaClear(scope_.Keys(keys, scoped), segment_name);
  }
  absl::StatusOr<TaskId> CreateCopyTask(const std::string& key,
                                        const std::vector<std::string>& targets) override {
    std::string scoped;
    return tasks_->Create(TaskType::kReplicaCopy, scope_.Key(key, scoped), "", targets);
  }
  absl::StatusOr<TaskId> CreateMoveTask(const std::string& key, const std::string& source,
                                        const std::string& target) override {
    std::string scoped;
    return tasks_->Create(TaskType::kReplicaMove, scope_.Key(key, scoped), source, {target});
  }
  absl::StatusOr<TaskInfo> QueryTask(const TaskId& id) override { return tasks_->Query(id); }

  absl::Status RegisterBuffer(void* data, uint64_t size) override {
    return engine_->RegisterLocalMemory(data, size);
  }
  absl::Status UnregisterBuffer(void* data) override {
    return engine_->UnregisterLocalMemory(data);
  }
  absl::Status HealthCheck() override { return master_->Ping(id_).status(); }
  const std::string& SegmentName() const override { return engine_->LocalSegmentName(); }
  const master::ClientId& Id() const override { return id_; }
  ClientStats Stats() const override { return objects_->Stats(); }
  transport::TransferEngine& Engine() override { return *engine_; }

 private:
  const ClientConfig config_;
  const master::ClientId id_;
  // The namespace of every key this client's callers pass (internal parts use scoped keys).
  const TenantScope scope_;
  std::unique_ptr<transport::TransferEngine> engine_;
  std::shared_ptr<MasterApi> master_;
  std::unique_ptr<ObjectClient> objects_;
  std::unique_ptr<SegmentHost> host_;
  std::unique_ptr<ReplicaTasks> tasks_;  // its worker uses objects_
  // Moves this client's objects off its segment when a drain job asks (segment owners only);
  // first to go.
  std::unique_ptr<DrainWorker> drainer_;
};

absl::Status ClientImpl::Init(std::shared_ptr<MasterApi> master) {
  InitLogging();
  YB_RETURN_IF_ERROR(CheckTenantId(config_.tenant_id));
  if (master == nullptr && config_.master_server_address.empty()) {
    return MakeError(ErrorCode::kInvalidParams, "master_server_address is empty");
  }
  YB_ASSIGN_OR_RETURN(MasterRpcSecurity security, LoadClientSecurity(config_));
  transport::TransferEngineOptions options;
  options.cluster_secret = security.cluster_secret;
  options.metadata_conn = config_.metadata_server;
  options.local_server_name = config_.local_hostname;
  options.protocol = config_.protocol;
  options.rdma_devices = config_.device_name;
  options.enable_shm = config_.enable_shm;
  options.request_timeout = config_.transfer_timeout;
  // Opening a peer's segment is part of moving data: bounded by the same deadline.
  options.connect_timeout = std::min(options.connect_timeout, config_.transfer_timeout);
  auto engine = CreateEngineOnClientPort(options, EnginePortRangeFromEnvironment());
  if (!engine.ok()) {
    return MakeError(ToErrorCode(engine.status()) == ErrorCode::kObjectNotFound
                         ? ErrorCode::kInvalidParams
                         : ToErrorCode(engine.status()),
                     absl::StrCat("transfer engine: ", engine.status().message()));
  }
  engine_ = std::move(engine).value();
  if (master != nullptr) {
    master_ = std::move(master);
  } else {
    YB_ASSIGN_OR_RETURN(master_, MasterClient::Create(config_.master_server_address,
                                                      config_.rpc_timeout, security));
  }
  objects_ = std::make_unique<ObjectClient>(config_, id_, engine_.get(), master_.get());
  tasks_ = std::make_unique<ReplicaTasks>(objects_.get());
  // A promotion (disk tier) goes to this store's own segment first: a local copy.
  auto promote = [this](const std::string& key, absl::string_view value) {
    master::ReplicateConfig config;
    config.promotion = true;
    config.preferred_segment = engine_->LocalSegmentName();
    return objects_->BatchPut({key}, {value}, config, /*upsert=*/false).front();
  };
  YB_ASSIGN_OR_RETURN(
      host_, SegmentHost::Start(config_, id_, engine_.get(), master_.get(), std::move(promote)));
  if (config_.global_segment_size > 0) {
    drainer_ = std::make_unique<DrainWorker>(id_, objects_.get(), master_.get());
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<std::unique_ptr<Client>> Client::Create(const ClientConfig& config) {
  auto client = std::make_unique<ClientImpl>(config);
  YB_RETURN_IF_ERROR(client->Init(nullptr));
  return std::unique_ptr<Client>(std::move(client));
}

absl::StatusOr<std::unique_ptr<Client>> CreateClientWithMaster(const ClientConfig& config,
                                                               std::shared_ptr<MasterApi> master) {
  if (master == nullptr) return MakeError(ErrorCode::kInvalidParams, "no MasterApi given");
  auto client = std::make_unique<ClientImpl>(config);
  YB_RETURN_IF_ERROR(client->Init(std::move(master)));
  return std::unique_ptr<Client>(std::move(client));
}

}  // namespace yuebing::store
