// TransferEngineImpl: start and stop, opened peer segments (open, close, refresh), batches,
// routing of requests to transports, the bounded wait, and the watchdog.
#include "transport/transfer_engine_impl.h"

#include <sys/socket.h>
#include <sys/time.h>

#include <algorithm>
#include <random>

#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "transport/reply_spin.h"
#include "transport/segment_descriptor.h"
#include "transport/socket_util.h"
#include "transport/tcp_auth.h"
#include "transport/wire_format.h"
#include "yuebing/common/check.h"
#include "yuebing/common/host_port.h"
#include "yuebing/common/logging.h"
#include "yuebing/common/status.h"

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
  SetRecvTimeout(fd, timeout);
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

std::vector<TransferStatus> StatusesOf(TransferBatch& batch) {
  const size_t size = batch.size();
  YB_CHECK(size <= batch.capacity(), "a batch never holds more tasks than its capacity");
  std::vector<TransferStatus> out(size);
  for (size_t i = 0; i < size; ++i) out[i] = batch.task(i).Status();
  return out;
}

}  // namespace

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
  object_reader_ = std::make_unique<ObjectReader>(
      ObjectReadOptions{options_.cluster_secret, options_.connect_timeout});
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
  YB_RETURN_IF_ERROR(InitTransports());
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

absl::Status TransferEngineImpl::InitTransports() {
  local_ = std::make_unique<LocalTransport>(&registry_);
  shm_ = std::make_unique<ShmTransport>([this](PeerSegment& segment) { return Refresh(segment); });
  TcpTransportOptions tcp_options;
  tcp_options.slice_bytes = options_.tcp_slice_bytes;
  tcp_options.reply_spin = ReplySpinFromEnvironment(kTcpReplySpinEnv, kDefaultTcpReplySpin);
  tcp_options.connections_per_peer = options_.tcp_connections_per_peer;
  tcp_options.max_inflight_bytes_per_peer = options_.tcp_max_inflight_bytes_per_peer;
  tcp_options.connect_timeout = options_.connect_timeout;
  tcp_options.cluster_secret = options_.cluster_secret;
  tcp_ = std::make_unique<TcpTransport>(std::move(tcp_options));
  if (options_.protocol == "rdma") {
    RdmaEngineOptions rdma;
    rdma.devices = options_.rdma_devices;
    rdma.local_segment_name = segment_name_;
    rdma.connect_timeout = options_.connect_timeout;
    rdma.cluster_secret = options_.cluster_secret;
    YB_ASSIGN_OR_RETURN(rdma_, RdmaEngineTransport::Open(rdma));
    if (rdma_ != nullptr) {
      server_->SetRdmaConnectHandler(
          [this](const std::string& request) { return rdma_->HandleConnect(request); });
      YB_LOG_INFO("RDMA transport on {} NIC(s)", rdma_->LocalNics().size());
    }
  }
  auto pick = [](const std::shared_ptr<Transport>& override, Transport* own) {
    return override != nullptr ? override.get() : own;
  };
  local_route_ = pick(overrides_.local, local_.get());
  Transport* shm = shm_route_ = pick(overrides_.shm, shm_.get());
  Transport* rdma = rdma_route_ = pick(overrides_.rdma, rdma_.get());
  Transport* tcp = tcp_route_ = pick(overrides_.tcp, tcp_.get());
  same_host_chain_ = {shm};
  remote_chain_.clear();
  if (rdma != nullptr) {
    same_host_chain_.push_back(rdma);
    remote_chain_.push_back(rdma);
  }
  same_host_chain_.push_back(tcp);
  remote_chain_.push_back(tcp);
  for (Transport* t : {local_route_, shm, rdma, tcp, static_cast<Transport*>(tcp_.get())}) {
    if (t != nullptr &&
        std::find(all_transports_.begin(), all_transports_.end(), t) == all_transports_.end()) {
      all_transports_.push_back(t);
    }
  }
  return absl::OkStatus();
}

TransferEngineStats TransferEngineImpl::Stats() const {
  TransferEngineStats stats;
  stats.local_bytes = local_route_->bytes();
  stats.shm_bytes = shm_route_->bytes();
  stats.tcp_bytes = tcp_route_->bytes();
  stats.rdma_bytes = rdma_route_ != nullptr ? rdma_route_->bytes() : 0;
  stats.overdue_requests = overdue_requests_.load(std::memory_order_relaxed);
  return stats;
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
  object_reader_.reset();  // its idle connections may be to this engine's own server
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

absl::StatusOr<std::vector<TransferEngine::SegmentBuffer>> TransferEngineImpl::ListSegmentBuffers(
    const std::string& segment_name) {
  std::vector<SegmentBuffer> out;
  if (segment_name == segment_name_) {
    for (const RegisteredBuffer& b : registry_.Snapshot()) out.push_back({b.addr, b.length});
    return out;
  }
  YB_ASSIGN_OR_RETURN(SegmentDescriptor descriptor, FetchDescriptor(segment_name));
  for (const BufferDescriptor& b : descriptor.buffers) out.push_back({b.addr, b.length});
  return out;
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
    segment->tcp = tcp_->MakePeer(descriptor);
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
  batch->NoteDeadline(deadline);
  // Requests grouped by target. Remote ones go first so that network transfers overlap the
  // copies that the local and shm paths do inline.
  absl::flat_hash_map<PeerSegment*, std::vector<TransportWork>> remote, near;
  std::vector<PeerSegment*> remote_order, near_order;
  for (size_t i = 0; i < requests.size(); ++i) {
    PeerSegment* target = targets[i].get();
    bool is_near = target == nullptr;
    if (target != nullptr && options_.enable_shm) {
      is_near = target->Descriptor()->host_id == LocalHostId();
    }
    auto& groups = is_near ? near : remote;
    auto [it, inserted] = groups.try_emplace(target);
    if (inserted) (is_near ? near_order : remote_order).push_back(target);
    it->second.push_back(TransportWork{&requests[i], &batch->task(first + i)});
  }
  for (PeerSegment* target : remote_order) {
    Route(target, remote_chain_, batch.get(), remote[target], deadline);
  }
  for (PeerSegment* target : near_order) {
    Route(target, target == nullptr ? absl::MakeConstSpan(&local_route_, 1) : same_host_chain_,
          batch.get(), near[target], deadline);
  }
  return absl::OkStatus();
}

void TransferEngineImpl::Route(PeerSegment* target, absl::Span<Transport* const> chain,
                               TransferBatch* batch, std::vector<TransportWork>& work,
                               SteadyTime deadline) {
  for (Transport* transport : chain) {
    std::erase_if(work, [](const TransportWork& item) { return item.accepted; });
    if (work.empty()) return;
    transport->Submit(target, batch, absl::MakeSpan(work), deadline);
  }
  YB_CHECK(std::all_of(work.begin(), work.end(),
                       [](const TransportWork& item) { return item.accepted; }),
           "the last transport of a chain accepts every request it is offered");
}

absl::StatusOr<std::shared_ptr<TransferBatch>> TransferEngineImpl::FindBatchWithTask(
    BatchId batch_id, size_t task_id) {
  std::shared_ptr<TransferBatch> batch = FindBatch(batch_id);
  if (batch == nullptr) return absl::InvalidArgumentError(absl::StrCat("no batch ", batch_id));
  if (task_id >= batch->size()) {
    return absl::InvalidArgumentError(
        absl::StrCat("task ", task_id, " not submitted to batch ", batch_id));
  }
  return batch;
}

absl::StatusOr<TransferStatus> TransferEngineImpl::GetTransferStatus(BatchId batch_id,
                                                                     size_t task_id) {
  YB_ASSIGN_OR_RETURN(std::shared_ptr<TransferBatch> batch, FindBatchWithTask(batch_id, task_id));
  return batch->task(task_id).Status();
}

absl::StatusOr<TransferStatus> TransferEngineImpl::WaitTransfer(BatchId batch_id, size_t task_id,
                                                                std::chrono::milliseconds timeout) {
  YB_ASSIGN_OR_RETURN(std::shared_ptr<TransferBatch> batch, FindBatchWithTask(batch_id, task_id));
  batch->WaitTaskFinal(task_id, timeout);
  return batch->task(task_id).Status();
}

absl::StatusOr<std::vector<TransferStatus>> TransferEngineImpl::WaitBatch(
    BatchId batch_id, std::chrono::milliseconds timeout) {
  std::shared_ptr<TransferBatch> batch = FindBatch(batch_id);
  if (batch == nullptr) return absl::InvalidArgumentError(absl::StrCat("no batch ", batch_id));
  batch->WaitIdle(timeout);
  return StatusesOf(*batch);
}

absl::StatusOr<std::vector<TransferStatus>> TransferEngineImpl::WaitAndFreeBatch(BatchId batch_id) {
  std::shared_ptr<TransferBatch> batch = FindBatch(batch_id);
  if (batch == nullptr) return absl::InvalidArgumentError(absl::StrCat("no batch ", batch_id));
  // Every transport makes its requests final by their deadline; the margin covers the watchdog
  // and pollers noticing it. A batch with nothing submitted is idle at once.
  const SteadyTime ceiling = batch->latest_deadline() + kFinalWaitMargin;
  const SteadyTime now = Clock::Real().Now();
  if (now < ceiling) batch->WaitIdle(ceiling - now);
  const bool idle = batch->Idle();  // read first: then every status read below is final
  std::vector<TransferStatus> statuses = StatusesOf(*batch);
  yuebing::MutexLock lock(&batches_mu_);
  auto it = batches_.find(batch_id);
  if (it == batches_.end() || it->second != batch) {
    return absl::InvalidArgumentError(absl::StrCat("batch ", batch_id, " freed while waited on"));
  }
  if (!idle) {
    // A transport broke its contract. The batch is not freed (tasks of a freed batch would be
    // finished into freed memory): it is retired, and the watchdog frees it once idle.
    size_t overdue = 0;
    for (TransferStatus& status : statuses) {
      if (status.state != TransferState::kWaiting && status.state != TransferState::kPending) {
        continue;
      }
      ++overdue;
      status.state = TransferState::kTimeout;
      status.reason = absl::StrCat("request not final ", kFinalWaitMargin.count(),
                                   " ms after its deadline (transport fault); abandoned");
    }
    YB_LOG_ERROR(
        "batch {}: {} request(s) still in flight {} ms after their deadline; batch retired",
        batch_id, overdue, kFinalWaitMargin.count());
    overdue_requests_.fetch_add(overdue, std::memory_order_relaxed);
    retired_.push_back(batch);
  }
  batches_.erase(it);
  return statuses;
}

void TransferEngineImpl::ReapRetiredBatches() {
  yuebing::MutexLock lock(&batches_mu_);
  std::erase_if(retired_, [](const std::shared_ptr<TransferBatch>& b) { return b->Idle(); });
}

void TransferEngineImpl::WatchdogLoop() {
  yuebing::MutexLock lock(&watchdog_mu_);
  while (!stopping_) {
    watchdog_mu_.AwaitWithTimeout(yuebing::Condition(&stopping_),
                                  absl::FromChrono(kWatchdogPeriod));
    if (stopping_) break;
    watchdog_mu_.Unlock();
    SteadyTime now = Clock::Real().Now();
    for (Transport* transport : all_transports_) transport->ExpireDeadlines(now);
    ReapRetiredBatches();
    watchdog_mu_.Lock();
  }
}

absl::StatusOr<std::unique_ptr<TransferEngine>> CreateTransferEngine(
    const TransferEngineOptions& options, TransportOverrides overrides) {
  auto engine = std::make_unique<TransferEngineImpl>(options, std::move(overrides));
  YB_RETURN_IF_ERROR(engine->Init());
  return std::unique_ptr<TransferEngine>(std::move(engine));
}

}  // namespace yuebing::transport
