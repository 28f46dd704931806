// TransferEngine implementation: owns the registry, the TCP server, the metadata publication, the
// opened peer segments (descriptor, TCP peer, shm mappings), the RDMA transport when there is one,
// and the batches, and routes every request to the local, shm, RDMA or TCP path.
#include <signal.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <random>
#include <thread>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/time/time.h"
#include "transport/memory_registry.h"
#include "transport/metadata_store.h"
#include "transport/rdma/rdma_transport.h"
#include "transport/segment_descriptor.h"
#include "transport/shared_memory.h"
#include "transport/socket_util.h"
#include "transport/tcp_auth.h"
#include "transport/tcp_peer.h"
#include "transport/tcp_server.h"
#include "transport/transfer_batch.h"
#include "transport/wire_format.h"
#include "yuebing/common/host_port.h"
#include "yuebing/common/logging.h"
#include "yuebing/common/status.h"
#include "yuebing/transport/transfer_engine.h"

namespace yuebing::transport {
namespace {

constexpr auto kWatchdogPeriod = std::chrono::milliseconds(10);
constexpr auto kMinRefreshInterval = std::chrono::milliseconds(50);

uint64_t RandomEpoch() {
  std::random_device device;
  uint64_t epoch = 0;
  while (epoch == 0) epoch = (uint64_t{device()} << 32) ^ device();
  return epoch;
}

// Asks the engine listening at `name` ("host:port") for its descriptor (P2P handshake).
// With a cluster secret the connection authenticates first (the descriptor names shm memfds).
absl::StatusOr<std::string> DescribeOverTcp(const std::string& name,
                                            std::chrono::milliseconds timeout,
                                            const std::string& secret) {
  absl::StatusOr<HostPort> address = ParseHostPort(name);
  if (!address.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("P2PHANDSHAKE needs segment names of the form host:port, got '", name,
                     "': ", address.status().message()));
  }
  YB_ASSIGN_OR_RETURN(int fd, ConnectTcp(address->host, address->port, timeout));
  timeval tv{static_cast<time_t>(timeout.count() / 1000),
             static_cast<suseconds_t>((timeout.count() % 1000) * 1000)};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
  absl::Status status;
  if (!secret.empty()) {
    status = AuthenticateToTarget(fd, secret, name, std::chrono::steady_clock::now() + timeout);
  }
  FrameHeader request;
  request.type = FrameType::kDescribe;
  uint8_t bytes[kFrameHeaderBytes];
  EncodeFrameHeader(request, bytes);
  if (status.ok()) status = SendAll(fd, bytes, kFrameHeaderBytes);
  if (status.ok()) status = RecvAll(fd, bytes, kFrameHeaderBytes);
  std::string out;
  if (status.ok()) {
    absl::StatusOr<FrameHeader> reply = DecodeFrameHeader(bytes);
    if (!reply.ok() || reply->type != FrameType::kDescribeReply) {
      status = absl::InternalError(absl::StrCat("bad DESCRIBE reply from ", name));
    } else if (reply->status == WireStatus::kUnauthenticated) {
      status = absl::PermissionDeniedError(
          absl::StrCat("segment ", name,
                       " requires cluster authentication and this process has no cluster secret"));
    } else if (reply->status != WireStatus::kOk) {
      status = absl::InternalError(
          absl::StrCat("DESCRIBE refused by ", name, ": ", WireStatusText(reply->status)));
    } else {
      out.resize(reply->length);
      status = RecvAll(fd, out.data(), out.size());
    }
  }
  CloseFd(fd);
  YB_RETURN_IF_ERROR(status);
  return out;
}

// Appends the slices of `request` (task already started with their count) to `out`.
void AppendSlices(const TransferRequest& request, TransferTask* task, uint64_t slice_bytes,
                  SteadyTime deadline, std::vector<TcpSlice>& out) {
  for (uint64_t offset = 0; offset < request.length; offset += slice_bytes) {
    TcpSlice slice;
    slice.task = task;
    slice.opcode = request.opcode;
    slice.local = static_cast<char*>(request.source) + offset;
    slice.remote_addr = request.target_offset + offset;
    slice.length = std::min<uint64_t>(slice_bytes, request.length - offset);
    slice.deadline = deadline;
    out.push_back(slice);
  }
}

// Queues slices on a peer; when the peer refuses them, they fail at once.
void SubmitSlices(TcpPeer& peer, std::vector<TcpSlice> slices) {
  std::vector<TcpSlice> copy = slices;
  absl::Status status = peer.Submit(std::move(copy));
  if (!status.ok()) {
    for (TcpSlice& slice : slices) slice.task->FinishSlice(0, status);
  }
}

uint32_t SliceCount(uint64_t length, uint64_t slice_bytes) {
  return static_cast<uint32_t>((length + slice_bytes - 1) / slice_bytes);
}

// An opened peer segment.
struct PeerSegment {
  SegmentHandle handle = -1;
  std::string name;
  yuebing::Mutex mu;
  std::shared_ptr<const SegmentDescriptor> descriptor ABSL_GUARDED_BY(mu);
  std::shared_ptr<TcpPeer> tcp ABSL_GUARDED_BY(mu);
  SteadyTime last_refresh ABSL_GUARDED_BY(mu);
  bool restarted ABSL_GUARDED_BY(mu) = false;  // the peer's epoch changed; handle is dead
  ShmPeerMappings shm;
};

class TransferEngineImpl final : public TransferEngine {
 public:
  explicit TransferEngineImpl(const TransferEngineOptions& options) : options_(options) {}
  ~TransferEngineImpl() override;

  absl::Status Init();

  const std::string& LocalSegmentName() const override { return segment_name_; }
  uint16_t RpcPort() const override { return server_->port(); }
  absl::Status RegisterLocalMemory(void* addr, size_t length, const std::string& location) override;
  absl::Status UnregisterLocalMemory(void* addr) override;
  absl::StatusOr<void*> AllocateSharedMemory(size_t length) override;
  absl::Status FreeSharedMemory(void* addr) override;
  absl::StatusOr<SegmentHandle> OpenSegment(const std::string& segment_name) override;
  absl::Status CloseSegment(SegmentHandle handle) override;
  absl::StatusOr<BatchId> AllocateBatch(size_t capacity) override;
  absl::Status FreeBatch(BatchId batch) override;
  absl::Status SubmitTransfer(BatchId batch, absl::Span<const TransferRequest> requests) override;
  absl::StatusOr<TransferStatus> GetTransferStatus(BatchId batch, size_t task_id) override;
  absl::StatusOr<std::vector<TransferStatus>> WaitBatch(BatchId batch,
                                                        std::chrono::milliseconds timeout) override;
  TransferEngineStats Stats() const override {
    TransferEngineStats stats;
    stats.local_bytes = local_bytes_.load(std::memory_order_relaxed);
    stats.shm_bytes = shm_bytes_.load(std::memory_order_relaxed);
    stats.tcp_bytes = tcp_bytes_.load(std::memory_order_relaxed);
    stats.rdma_bytes = rdma_bytes_.load(std::memory_order_relaxed);
    return stats;
  }

 private:
  absl::Status Register(const RegisteredBuffer& buffer);
  // Opens the RDMA transport for protocol "rdma"; without a device it warns and leaves rdma_ null.
  absl::Status InitRdma();
  void UnregisterRdma(uint64_t addr);
  // Hands a remote request to RDMA; false (task untouched) when RDMA cannot serve it.
  bool TryRdma(PeerSegment& segment, const TransferRequest& request, TransferBatch* batch,
               TransferTask& task, SteadyTime deadline);
  // The descriptor of this engine's segment as it is now, stamped with `version`.
  // include_shm=false hides the memfd numbers (for the metadata server when a secret is set).
  std::string DescribeLocal(uint64_t version, bool include_shm);
  absl::Status Publish();
  absl::StatusOr<SegmentDescriptor> FetchDescriptor(const std::string& name);
  absl::StatusOr<std::shared_ptr<PeerSegment>> FindSegment(SegmentHandle handle);
  absl::Status Refresh(PeerSegment& segment);
  std::shared_ptr<TcpPeer> MakeTcpPeer(const SegmentDescriptor& descriptor);
  static std::shared_ptr<TcpPeer> PeerOf(PeerSegment& segment) {
    yuebing::MutexLock lock(&segment.mu);
    return segment.tcp;
  }
  std::shared_ptr<TransferBatch> FindBatch(BatchId batch);
  void RunLocal(const TransferRequest& request, TransferTask& task);
  bool TryShm(PeerSegment& segment, const TransferRequest& request, TransferTask& task);
  void WatchdogLoop();

  const TransferEngineOptions options_;
  std::unique_ptr<MetadataStore> metadata_;
  MemoryRegistry registry_;
  std::unique_ptr<TcpServer> server_;
  std::string segment_name_;
  std::string tcp_host_;
  uint64_t epoch_ = 0;

  yuebing::Mutex publish_mu_;
  uint64_t descriptor_version_ ABSL_GUARDED_BY(publish_mu_) = 0;

  yuebing::Mutex shm_mu_;
  absl::flat_hash_map<uintptr_t, SharedRegion> owned_shm_ ABSL_GUARDED_BY(shm_mu_);
  uint64_t next_shm_id_ ABSL_GUARDED_BY(shm_mu_) = 1;

  yuebing::Mutex segments_mu_;
  absl::flat_hash_map<SegmentHandle, std::shared_ptr<PeerSegment>> segments_
      ABSL_GUARDED_BY(segments_mu_);
  absl::flat_hash_map<std::string, SegmentHandle> handles_by_name_ ABSL_GUARDED_BY(segments_mu_);
  SegmentHandle next_handle_ ABSL_GUARDED_BY(segments_mu_) = 1;

  yuebing::Mutex batches_mu_;
  absl::flat_hash_map<BatchId, std::shared_ptr<TransferBatch>> batches_
      ABSL_GUARDED_BY(batches_mu_);
  BatchId next_batch_ ABSL_GUARDED_BY(batches_mu_) = 1;

  std::atomic<uint64_t> local_bytes_{0};
  std::atomic<uint64_t> shm_bytes_{0};
  std::atomic<uint64_t> tcp_bytes_{0};
  std::atomic<uint64_t> rdma_bytes_{0};

  std::unique_ptr<rdma::RdmaTransport> rdma_;  // null unless protocol "rdma" found a device
  yuebing::Mutex rkeys_mu_;
  absl::flat_hash_map<uint64_t, std::vector<uint32_t>> rkeys_ ABSL_GUARDED_BY(rkeys_mu_);

  yuebing::Mutex watchdog_mu_;
  bool stopping_ ABSL_GUARDED_BY(watchdog_mu_) = false;
  std::thread watchdog_;
};

absl::Status TransferEngineImpl::Init() {
  InitLogging();
  if (options_.protocol != "tcp" && options_.protocol != "rdma") {
    return absl::InvalidArgumentError(
        absl::StrCat("unknown protocol '", options_.protocol, "' (expected tcp or rdma)"));
  }
  if (options_.tcp_slice_bytes == 0 || options_.tcp_slice_bytes > kMaxDataFrameBytes ||
      options_.tcp_connections_per_peer == 0 || options_.max_batch_size == 0) {
    return absl::InvalidArgumentError(
        "tcp_slice_bytes, tcp_connections_per_peer and "
        "max_batch_size must be positive (slices <= 1 GiB)");
  }
  YB_ASSIGN_OR_RETURN(metadata_,
                      CreateMetadataStore(options_.metadata_conn, options_.connect_timeout));
  YB_ASSIGN_OR_RETURN(HostPort local, ParseHostPort(options_.local_server_name, 0));
  TcpServerOptions server_options;
  server_options.bind_host = options_.bind_address.empty() ? local.host : options_.bind_address;
  server_options.port = local.port;
  server_options.max_connections = options_.tcp_max_server_connections;
  server_options.frame_timeout = options_.request_timeout;
  server_options.cluster_secret = options_.cluster_secret;
  server_options.handshake_timeout = options_.auth_handshake_timeout;
  YB_ASSIGN_OR_RETURN(server_, TcpServer::Bind(server_options, &registry_));
  tcp_host_ = local.host;
  segment_name_ = HostPort{local.host, server_->port()}.ToString();
  epoch_ = RandomEpoch();
  if (options_.protocol == "rdma") YB_RETURN_IF_ERROR(InitRdma());
  server_->Serve(segment_name_, epoch_, [this] {
    uint64_t version;
    {
      yuebing::MutexLock lock(&publish_mu_);
      version = descriptor_version_;
    }
    return DescribeLocal(version, /*include_shm=*/true);
  });
  YB_RETURN_IF_ERROR(Publish());
  watchdog_ = std::thread(&TransferEngineImpl::WatchdogLoop, this);
  YB_LOG_INFO("transfer engine up: segment {} (metadata {})", segment_name_,
              metadata_ ? metadata_->Describe() : "P2PHANDSHAKE");
  return absl::OkStatus();
}

absl::Status TransferEngineImpl::InitRdma() {
  YB_ASSIGN_OR_RETURN(rdma::RdmaConfig config, rdma::LoadRdmaConfigFromEnvironment());
  rdma::RdmaTransportOptions rdma_options;
  rdma_options.config = std::move(config);
  if (!options_.rdma_devices.empty()) {
    rdma_options.config.device_filter.clear();
    for (absl::string_view name : absl::StrSplit(options_.rdma_devices, ',')) {
      name = absl::StripAsciiWhitespace(name);
      if (!name.empty()) rdma_options.config.device_filter.emplace_back(name);
    }
  }
  rdma_options.local_segment_name = segment_name_;
  rdma_options.connect_timeout = options_.connect_timeout;
  rdma_options.cluster_secret = options_.cluster_secret;
  absl::StatusOr<std::unique_ptr<rdma::RdmaTransport>> transport =
      rdma::CreateRdmaTransport(rdma_options);
  if (!transport.ok()) {
    YB_LOG_WARN("protocol \"rdma\" requested but RDMA is unavailable ({}); using TCP",
                transport.status().message());
    return absl::OkStatus();
  }
  rdma_ = *std::move(transport);
  server_->SetRdmaConnectHandler(
      [this](const std::string& request) { return rdma_->HandleConnect(request); });
  YB_LOG_INFO("RDMA transport on {} NIC(s)", rdma_->LocalNics().size());
  return absl::OkStatus();
}

void TransferEngineImpl::UnregisterRdma(uint64_t addr) {
  if (rdma_ == nullptr) return;
  {
    yuebing::MutexLock lock(&rkeys_mu_);
    rkeys_.erase(addr);
  }
  absl::Status status = rdma_->UnregisterMemory(reinterpret_cast<void*>(addr));
  if (!status.ok()) YB_LOG_WARN("RDMA deregistration: {}", status.ToString());
}

bool TransferEngineImpl::TryRdma(PeerSegment& segment, const TransferRequest& request,
                                 TransferBatch* batch, TransferTask& task, SteadyTime deadline) {
  if (rdma_ == nullptr) return false;
  std::shared_ptr<const SegmentDescriptor> descriptor;
  {
    yuebing::MutexLock lock(&segment.mu);
    descriptor = segment.descriptor;
  }
  absl::Status status = rdma_->Submit(*descriptor, request, batch, task, deadline);
  if (!status.ok()) {
    YB_LOG_DEBUG("request to {} over TCP: {}", segment.name, status.ToString());
    return false;
  }
  rdma_bytes_.fetch_add(request.length, std::memory_order_relaxed);
  return true;
}

TransferEngineImpl::~TransferEngineImpl() {
  {
    yuebing::MutexLock lock(&watchdog_mu_);
    stopping_ = true;
  }
  if (watchdog_.joinable()) watchdog_.join();
  if (metadata_ != nullptr && !segment_name_.empty()) {
    absl::Status status = metadata_->Delete(SegmentMetadataKey(segment_name_));
    if (!status.ok()) YB_LOG_WARN("could not remove segment metadata: {}", status.ToString());
  }
  if (rdma_ != nullptr) rdma_->Shutdown();
  server_.reset();
  std::vector<std::shared_ptr<PeerSegment>> segments;
  {
    yuebing::MutexLock lock(&segments_mu_);
    for (auto& [handle, segment] : segments_) segments.push_back(segment);
  }
  for (auto& segment : segments) {
    yuebing::MutexLock lock(&segment->mu);
    if (segment->tcp) segment->tcp->Shutdown();
  }
  rdma_.reset();  // deregisters memory before shm regions go away
  yuebing::MutexLock lock(&shm_mu_);
  for (auto& [addr, region] : owned_shm_) FreeSharedRegion(region);
}

std::string TransferEngineImpl::DescribeLocal(uint64_t version, bool include_shm) {
  SegmentDescriptor d;
  d.name = segment_name_;
  d.tcp_host = tcp_host_;
  d.tcp_port = server_->port();
  d.host_id = LocalHostId();
  d.pid = static_cast<int32_t>(getpid());
  d.epoch = epoch_;
  d.version = version;
  if (rdma_ != nullptr) d.rdma_nics = rdma_->LocalNics();
  yuebing::MutexLock lock(&rkeys_mu_);
  for (const RegisteredBuffer& b : registry_.Snapshot()) {
    BufferDescriptor buffer;
    buffer.addr = b.addr;
    buffer.length = b.length;
    buffer.location = b.location;
    buffer.shm_fd = options_.enable_shm && include_shm ? b.shm_fd : -1;
    buffer.shm_id = b.shm_id;
    if (rdma_ != nullptr) {
      auto it = rkeys_.find(b.addr);
      if (it == rkeys_.end()) continue;  // not registered with the NICs yet
      buffer.rkeys = it->second;
    }
    d.buffers.push_back(std::move(buffer));
  }
  return EncodeSegmentDescriptor(d);
}

absl::Status TransferEngineImpl::Publish() {
  yuebing::MutexLock lock(&publish_mu_);  // orders publications
  ++descriptor_version_;
  if (metadata_ == nullptr) return absl::OkStatus();
  // With a cluster secret the memfd numbers are given only over an authenticated DESCRIBE.
  return metadata_->Put(SegmentMetadataKey(segment_name_),
                        DescribeLocal(descriptor_version_, options_.cluster_secret.empty()));
}

absl::Status TransferEngineImpl::Register(const RegisteredBuffer& buffer) {
  if (rdma_ != nullptr) {  // before the registry, so a published buffer always has its rkeys
    YB_ASSIGN_OR_RETURN(std::vector<uint32_t> rkeys,
                        rdma_->RegisterMemory(reinterpret_cast<void*>(buffer.addr), buffer.length,
                                              buffer.location));
    yuebing::MutexLock lock(&rkeys_mu_);
    rkeys_[buffer.addr] = std::move(rkeys);
  }
  if (absl::Status added = registry_.Add(buffer); !added.ok()) {
    UnregisterRdma(buffer.addr);
    return added;
  }
  if (options_.prefault_on_register && !buffer.engine_owned) {
    PrefaultMemory(reinterpret_cast<void*>(buffer.addr), buffer.length);
  }
  absl::Status status = Publish();
  if (!status.ok()) {
    (void)registry_.Remove(buffer.addr);
    UnregisterRdma(buffer.addr);
    return absl::Status(status.code(), absl::StrCat("registered memory could not be published: ",
                                                    status.message()));
  }
  return absl::OkStatus();
}

absl::Status TransferEngineImpl::RegisterLocalMemory(void* addr, size_t length,
                                                     const std::string& location) {
  RegisteredBuffer buffer;
  buffer.addr = reinterpret_cast<uint64_t>(addr);
  buffer.length = length;
  buffer.location = location;
  return Register(buffer);
}

absl::Status TransferEngineImpl::UnregisterLocalMemory(void* addr) {
  {
    yuebing::MutexLock lock(&shm_mu_);
    if (owned_shm_.contains(reinterpret_cast<uintptr_t>(addr))) {
      return absl::InvalidArgumentError(
          "memory from AllocateSharedMemory is freed with "
          "FreeSharedMemory");
    }
  }
  YB_RETURN_IF_ERROR(registry_.Remove(reinterpret_cast<uint64_t>(addr)).status());
  UnregisterRdma(reinterpret_cast<uint64_t>(addr));
  absl::Status status = Publish();
  if (!status.ok()) YB_LOG_WARN("unregistration not published: {}", status.ToString());
  return absl::OkStatus();
}

absl::StatusOr<void*> TransferEngineImpl::AllocateSharedMemory(size_t length) {
  YB_ASSIGN_OR_RETURN(SharedRegion region, AllocateSharedRegion(length));
  RegisteredBuffer buffer;
  buffer.addr = reinterpret_cast<uint64_t>(region.addr);
  buffer.length = region.length;
  buffer.shm_fd = region.fd;
  buffer.engine_owned = true;
  {
    yuebing::MutexLock lock(&shm_mu_);
    buffer.shm_id = next_shm_id_++;
    owned_shm_[reinterpret_cast<uintptr_t>(region.addr)] = region;
  }
  absl::Status status = Register(buffer);
  if (!status.ok()) {
    yuebing::MutexLock lock(&shm_mu_);
    owned_shm_.erase(reinterpret_cast<uintptr_t>(region.addr));
    FreeSharedRegion(region);
    return status;
  }
  return region.addr;
}

absl::Status TransferEngineImpl::FreeSharedMemory(void* addr) {
  SharedRegion region;
  {
    yuebing::MutexLock lock(&shm_mu_);
    auto it = owned_shm_.find(reinterpret_cast<uintptr_t>(addr));
    if (it == owned_shm_.end()) {
      return absl::NotFoundError("address was not returned by AllocateSharedMemory");
    }
    region = it->second;
    owned_shm_.erase(it);
  }
  absl::Status status = registry_.Remove(reinterpret_cast<uint64_t>(addr)).status();
  UnregisterRdma(reinterpret_cast<uint64_t>(addr));
  FreeSharedRegion(region);
  YB_RETURN_IF_ERROR(status);
  absl::Status published = Publish();
  if (!published.ok()) YB_LOG_WARN("free not published: {}", published.ToString());
  return absl::OkStatus();
}

absl::StatusOr<SegmentDescriptor> TransferEngineImpl::FetchDescriptor(const std::string& name) {
  std::string text;
  if (metadata_ != nullptr) {
    absl::StatusOr<std::string> value = metadata_->Get(SegmentMetadataKey(name));
    if (absl::IsNotFound(value.status())) {
      return absl::NotFoundError(
          absl::StrCat("no segment named '", name, "' in ", metadata_->Describe()));
    }
    YB_ASSIGN_OR_RETURN(text, std::move(value));
    if (!options_.cluster_secret.empty() && options_.enable_shm) {
      // The published descriptor hides the memfds; a same-host peer asks the target itself, over
      // an authenticated connection, to learn them.
      absl::StatusOr<SegmentDescriptor> published = DecodeSegmentDescriptor(text);
      if (published.ok() && published->host_id == LocalHostId()) {
        YB_ASSIGN_OR_RETURN(
            text, DescribeOverTcp(name, options_.connect_timeout, options_.cluster_secret));
      }
    }
  } else {
    YB_ASSIGN_OR_RETURN(text,
                        DescribeOverTcp(name, options_.connect_timeout, options_.cluster_secret));
  }
  YB_ASSIGN_OR_RETURN(SegmentDescriptor descriptor, DecodeSegmentDescriptor(text));
  if (descriptor.name != name) {
    return absl::NotFoundError(
        absl::StrCat("segment at '", name, "' calls itself '", descriptor.name, "'"));
  }
  return descriptor;
}

std::shared_ptr<TcpPeer> TransferEngineImpl::MakeTcpPeer(const SegmentDescriptor& descriptor) {
  TcpPeerOptions peer;
  peer.segment_name = descriptor.name;
  peer.host = descriptor.tcp_host;
  peer.port = descriptor.tcp_port;
  peer.epoch = descriptor.epoch;
  peer.connections = options_.tcp_connections_per_peer;
  peer.max_inflight_bytes = options_.tcp_max_inflight_bytes_per_peer;
  peer.connect_timeout = options_.connect_timeout;
  peer.cluster_secret = options_.cluster_secret;
  return std::make_shared<TcpPeer>(std::move(peer));
}

absl::StatusOr<SegmentHandle> TransferEngineImpl::OpenSegment(const std::string& segment_name) {
  if (segment_name == segment_name_) return kLocalSegmentHandle;
  {
    yuebing::MutexLock lock(&segments_mu_);
    auto it = handles_by_name_.find(segment_name);
    if (it != handles_by_name_.end()) return it->second;
  }
  YB_ASSIGN_OR_RETURN(SegmentDescriptor descriptor, FetchDescriptor(segment_name));
  auto segment = std::make_shared<PeerSegment>();
  segment->name = segment_name;
  {
    yuebing::MutexLock lock(&segment->mu);
    segment->tcp = MakeTcpPeer(descriptor);
    segment->descriptor = std::make_shared<SegmentDescriptor>(std::move(descriptor));
    segment->last_refresh = Clock::Real().Now();
  }
  yuebing::MutexLock lock(&segments_mu_);
  auto [it, inserted] = handles_by_name_.try_emplace(segment_name, next_handle_);
  if (inserted) {
    segment->handle = next_handle_++;
    segments_[segment->handle] = segment;
  }
  return it->second;
}

absl::Status TransferEngineImpl::CloseSegment(SegmentHandle handle) {
  if (handle == kLocalSegmentHandle) return absl::OkStatus();
  std::shared_ptr<PeerSegment> segment;
  {
    yuebing::MutexLock lock(&segments_mu_);
    auto it = segments_.find(handle);
    if (it == segments_.end()) {
      return absl::NotFoundError(absl::StrCat("no open segment with handle ", handle));
    }
    segment = it->second;
    segments_.erase(it);
    handles_by_name_.erase(segment->name);
  }
  yuebing::MutexLock lock(&segment->mu);
  segment->tcp->Shutdown();
  return absl::OkStatus();
}

absl::StatusOr<std::shared_ptr<PeerSegment>> TransferEngineImpl::FindSegment(SegmentHandle handle) {
  yuebing::MutexLock lock(&segments_mu_);
  auto it = segments_.find(handle);
  if (it == segments_.end()) {
    return absl::InvalidArgumentError(absl::StrCat("no open segment with handle ", handle));
  }
  return it->second;
}

// Re-reads the peer's descriptor (at most every kMinRefreshInterval) to learn buffers registered
// since it was opened. A handle stays bound to the incarnation (epoch) it was opened on: when the
// peer restarted, the new descriptor is not adopted and the segment is marked restarted, so no
// byte meant for the old process reaches the new one; CloseSegment + OpenSegment reaches the new.
absl::Status TransferEngineImpl::Refresh(PeerSegment& segment) {
  {
    yuebing::MutexLock lock(&segment.mu);
    if (Clock::Real().Now() - segment.last_refresh < kMinRefreshInterval) {
      return absl::OkStatus();
    }
    segment.last_refresh = Clock::Real().Now();
  }
  YB_ASSIGN_OR_RETURN(SegmentDescriptor descriptor, FetchDescriptor(segment.name));
  yuebing::MutexLock lock(&segment.mu);
  if (descriptor.epoch != segment.descriptor->epoch) {
    segment.restarted = true;
    return absl::FailedPreconditionError(
        absl::StrCat("segment ", segment.name, " restarted; reopen it"));
  }
  segment.descriptor = std::make_shared<SegmentDescriptor>(std::move(descriptor));
  segment.shm.Retain(*segment.descriptor);
  return absl::OkStatus();
}

absl::StatusOr<BatchId> TransferEngineImpl::AllocateBatch(size_t capacity) {
  if (capacity == 0 || capacity > options_.max_batch_size) {
    return absl::InvalidArgumentError(
        absl::StrCat("batch capacity must be 1..", options_.max_batch_size, ", got ", capacity));
  }
  auto batch = std::make_shared<TransferBatch>(capacity);
  yuebing::MutexLock lock(&batches_mu_);
  BatchId id = next_batch_++;
  batches_[id] = std::move(batch);
  return id;
}

std::shared_ptr<TransferBatch> TransferEngineImpl::FindBatch(BatchId batch) {
  yuebing::MutexLock lock(&batches_mu_);
  auto it = batches_.find(batch);
  return it == batches_.end() ? nullptr : it->second;
}

absl::Status TransferEngineImpl::FreeBatch(BatchId batch) {
  yuebing::MutexLock lock(&batches_mu_);
  auto it = batches_.find(batch);
  if (it == batches_.end()) return absl::NotFoundError(absl::StrCat("no batch ", batch));
  if (!it->second->Idle()) {
    return absl::FailedPreconditionError(
        absl::StrCat("batch ", batch, " still has requests in flight"));
  }
  batches_.erase(it);
  return absl::OkStatus();
}

void TransferEngineImpl::RunLocal(const TransferRequest& request, TransferTask& task) {
  absl::StatusOr<MemoryRegistry::Pin> pin =
      registry_.Acquire(request.target_offset, request.length);
  if (pin.ok()) {
    void* target = reinterpret_cast<void*>(request.target_offset);
    if (request.opcode == OpCode::kWrite) {
      std::memmove(target, request.source, request.length);
    } else {
      std::memmove(request.source, target, request.length);
    }
  }
  if (pin.ok()) local_bytes_.fetch_add(request.length, std::memory_order_relaxed);
  task.FinishSlice(request.length, pin.status());
}

bool TransferEngineImpl::TryShm(PeerSegment& segment, const TransferRequest& request,
                                TransferTask& task) {
  if (!options_.enable_shm) return false;
  for (int attempt = 0; attempt < 2; ++attempt) {
    std::shared_ptr<const SegmentDescriptor> descriptor;
    {
      yuebing::MutexLock lock(&segment.mu);
      descriptor = segment.descriptor;
    }
    if (descriptor->host_id != LocalHostId()) return false;
    // A mapping outlives its owner; a dead owner's memory must not look like a live target.
    if (kill(descriptor->pid, 0) != 0 && errno == ESRCH) return false;
    ShmTarget target = segment.shm.Translate(*descriptor, request.target_offset, request.length);
    if (target.address != nullptr) {
      if (request.opcode == OpCode::kWrite) {
        std::memcpy(target.address, request.source, request.length);
      } else {
        std::memcpy(request.source, target.address, request.length);
      }
      shm_bytes_.fetch_add(request.length, std::memory_order_relaxed);
      task.FinishSlice(request.length, absl::OkStatus());
      return true;
    }
    // The range may be in a buffer registered after our copy of the descriptor was taken.
    if (attempt == 0 && descriptor->FindBuffer(request.target_offset, request.length) == nullptr) {
      if (!Refresh(segment).ok()) return false;
      continue;
    }
    return false;
  }
  return false;
}

absl::Status TransferEngineImpl::SubmitTransfer(BatchId batch_id,
                                                absl::Span<const TransferRequest> requests) {
  std::shared_ptr<TransferBatch> batch = FindBatch(batch_id);
  if (batch == nullptr) return absl::InvalidArgumentError(absl::StrCat("no batch ", batch_id));
  std::vector<std::shared_ptr<PeerSegment>> targets(requests.size());
  for (size_t i = 0; i < requests.size(); ++i) {
    const TransferRequest& r = requests[i];
    if (r.source == nullptr || r.length == 0 || r.target_offset + r.length < r.target_offset ||
        (r.opcode != OpCode::kRead && r.opcode != OpCode::kWrite)) {
      return absl::InvalidArgumentError(
          absl::StrCat("request ", i, ": null source, zero length, bad opcode or range overflow"));
    }
    if (r.target_id != kLocalSegmentHandle) {
      YB_ASSIGN_OR_RETURN(targets[i], FindSegment(r.target_id));
    }
  }
  for (size_t i = 0; i < targets.size(); ++i) {
    if (targets[i] == nullptr) continue;
    yuebing::MutexLock lock(&targets[i]->mu);
    if (targets[i]->restarted || targets[i]->tcp->stale()) {
      targets[i]->restarted = true;
      return absl::FailedPreconditionError(
          absl::StrCat("request ", i, ": segment ", targets[i]->name,
                       " restarted since it was opened; CloseSegment and OpenSegment it again"));
    }
  }
  YB_ASSIGN_OR_RETURN(size_t first, batch->Reserve(requests.size()));
  const SteadyTime deadline = Clock::Real().Now() + options_.request_timeout;
  // TCP first so that network transfers overlap the copies done inline below.
  absl::flat_hash_map<PeerSegment*, std::vector<TcpSlice>> per_peer;
  std::vector<size_t> inline_requests;
  for (size_t i = 0; i < requests.size(); ++i) {
    const TransferRequest& r = requests[i];
    PeerSegment* target = targets[i].get();
    bool same_host = false;
    if (target != nullptr && options_.enable_shm) {
      yuebing::MutexLock lock(&target->mu);
      same_host = target->descriptor->host_id == LocalHostId();
    }
    if (target == nullptr || same_host) {
      inline_requests.push_back(i);
      continue;
    }
    TransferTask& task = batch->task(first + i);
    if (TryRdma(*target, r, batch.get(), task, deadline)) continue;
    task.Start(batch.get(), SliceCount(r.length, options_.tcp_slice_bytes));
    tcp_bytes_.fetch_add(r.length, std::memory_order_relaxed);
    AppendSlices(r, &task, options_.tcp_slice_bytes, deadline, per_peer[target]);
  }
  for (auto& [target, slices] : per_peer) SubmitSlices(*PeerOf(*target), std::move(slices));
  for (size_t i : inline_requests) {
    const TransferRequest& r = requests[i];
    TransferTask& task = batch->task(first + i);
    task.Start(batch.get(), 1);
    if (targets[i] == nullptr) {
      RunLocal(r, task);
    } else if (!TryShm(*targets[i], r, task) &&
               !TryRdma(*targets[i], r, batch.get(), task, deadline)) {
      // Not shm- or RDMA-reachable: same-host TCP.
      task.Start(batch.get(), SliceCount(r.length, options_.tcp_slice_bytes));
      tcp_bytes_.fetch_add(r.length, std::memory_order_relaxed);
      std::vector<TcpSlice> slices;
      AppendSlices(r, &task, options_.tcp_slice_bytes, deadline, slices);
      SubmitSlices(*PeerOf(*targets[i]), std::move(slices));
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<TransferStatus> TransferEngineImpl::GetTransferStatus(BatchId batch_id,
                                                                     size_t task_id) {
  std::shared_ptr<TransferBatch> batch = FindBatch(batch_id);
  if (batch == nullptr) return absl::InvalidArgumentError(absl::StrCat("no batch ", batch_id));
  if (task_id >= batch->size()) {
    return absl::InvalidArgumentError(
        absl::StrCat("task ", task_id, " not submitted to batch ", batch_id));
  }
  return batch->task(task_id).Status();
}

absl::StatusOr<std::vector<TransferStatus>> TransferEngineImpl::WaitBatch(
    BatchId batch_id, std::chrono::milliseconds timeout) {
  std::shared_ptr<TransferBatch> batch = FindBatch(batch_id);
  if (batch == nullptr) return absl::InvalidArgumentError(absl::StrCat("no batch ", batch_id));
  batch->WaitIdle(timeout);
  std::vector<TransferStatus> out(batch->size());
  for (size_t i = 0; i < out.size(); ++i) out[i] = batch->task(i).Status();
  return out;
}

void TransferEngineImpl::WatchdogLoop() {
  yuebing::MutexLock lock(&watchdog_mu_);
  while (!stopping_) {
    watchdog_mu_.AwaitWithTimeout(yuebing::Condition(&stopping_),
                                  absl::FromChrono(kWatchdogPeriod));
    if (stopping_) break;
    watchdog_mu_.Unlock();
    std::vector<std::shared_ptr<TcpPeer>> peers;
    {
      yuebing::MutexLock segments_lock(&segments_mu_);
      for (auto& [handle, segment] : segments_) {
        yuebing::MutexLock segment_lock(&segment->mu);
        peers.push_back(segment->tcp);
      }
    }
    SteadyTime now = Clock::Real().Now();
    for (auto& peer : peers) peer->ExpireDeadlines(now);
    watchdog_mu_.Lock();
  }
}

}  // namespace

const char* TransferStateName(TransferState state) {
  switch (state) {
    case TransferState::kWaiting:
      return "WAITING";
    case TransferState::kPending:
      return "PENDING";
    case TransferState::kCompleted:
      return "COMPLETED";
    case TransferState::kFailed:
      return "FAILED";
    case TransferState::kTimeout:
      return "TIMEOUT";
  }
  return "UNKNOWN";
}

absl::StatusOr<std::unique_ptr<TransferEngine>> TransferEngine::Create(
    const TransferEngineOptions& options) {
  auto engine = std::make_unique<TransferEngineImpl>(options);
  YB_RETURN_IF_ERROR(engine->Init());
  return std::unique_ptr<TransferEngine>(std::move(engine));
}

absl::StatusOr<std::vector<TransferStatus>> TransferEngine::TransferSyncStatuses(
    absl::Span<const TransferRequest> requests) {
  if (requests.empty()) return std::vector<TransferStatus>();
  YB_ASSIGN_OR_RETURN(BatchId batch, AllocateBatch(requests.size()));
  absl::Status status = SubmitTransfer(batch, requests);
  if (!status.ok()) {
    (void)FreeBatch(batch);
    return status;
  }
  // The engine makes every request final by its deadline; wait for that, however long it takes,
  // because the caller's buffers must not be released before.
  auto is_final = [](const TransferStatus& s) {
    return s.state != TransferState::kWaiting && s.state != TransferState::kPending;
  };
  while (true) {
    YB_ASSIGN_OR_RETURN(std::vector<TransferStatus> statuses,
                        WaitBatch(batch, std::chrono::milliseconds(1000)));
    if (std::all_of(statuses.begin(), statuses.end(), is_final) && FreeBatch(batch).ok()) {
      return statuses;
    }
  }
}

absl::Status TransferEngine::TransferSync(absl::Span<const TransferRequest> requests) {
  YB_ASSIGN_OR_RETURN(std::vector<TransferStatus> statuses, TransferSyncStatuses(requests));
  for (size_t i = 0; i < statuses.size(); ++i) {
    if (statuses[i].state != TransferState::kCompleted) {
      absl::StatusCode code = statuses[i].state == TransferState::kTimeout
                                  ? absl::StatusCode::kDeadlineExceeded
                                  : absl::StatusCode::kUnavailable;
      return absl::Status(
          code, absl::StrCat("request ", i, " ", TransferStateName(statuses[i].state), ": ",
                             statuses[i].reason));
    }
  }
  return absl::OkStatus();
}

}  // namespace yuebing::transport
