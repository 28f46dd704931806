// RdmaTransport on libibverbs. Compiled only when the build found libibverbs; it has NOT run on
// RDMA hardware in this project (see docs/transfer_engine.md). The decisions it takes (slices,
// NIC choice, retries, endpoint bound, QP exchange messages) come from the plain C++ parts beside
// it, which are unit-tested; this file only wires them to verbs (verbs.h).
//
// Per local NIC: one CQ polled by one thread, which also enforces deadlines; an LRU of active
// endpoints (QPs toward one NIC of one peer incarnation) and one of passive endpoints (made by
// HandleConnect). A slice is owned by exactly one NIC's in-flight set from post to completion;
// it finishes its task exactly once.
#include <algorithm>
#include <atomic>
#include <deque>
#include <map>
#include <random>
#include <thread>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "transport/rdma/endpoint_cache.h"
#include "transport/rdma/nic_topology.h"
#include "transport/rdma/qp_exchange.h"
#include "transport/rdma/rdma_handshake.h"
#include "transport/rdma/rdma_transport.h"
#include "transport/rdma/retry_policy.h"
#include "transport/rdma/slice_planner.h"
#include "transport/rdma/verbs.h"
#include "yuebing/common/check.h"
#include "yuebing/common/logging.h"
#include "yuebing/common/status.h"

namespace yuebing::transport::rdma {
namespace {

constexpr auto kDeadlineScanPeriod = std::chrono::milliseconds(10);
constexpr auto kMaxIdleSleep = std::chrono::microseconds(1000);
constexpr auto kShutdownDrain = std::chrono::seconds(2);
constexpr uint32_t kNicFailureThreshold = 3;
constexpr auto kNicQuarantine = std::chrono::milliseconds(1000);

uint32_t RandomPsn() {
  static thread_local std::mt19937 rng(std::random_device{}());
  return rng() & 0xffffff;
}

struct Slice;

// QPs from one local NIC to one NIC of one peer incarnation (or, passive, the reverse).
struct Endpoint {
  std::string key;
  std::vector<std::unique_ptr<verbs::QueuePair>> qps;
  uint32_t max_wr = 1;
  std::atomic<uint32_t> next_qp{0};
  yuebing::Mutex mu;
  std::vector<uint32_t> outstanding ABSL_GUARDED_BY(mu);
  std::vector<std::deque<Slice*>> backlog ABSL_GUARDED_BY(mu);
  bool failed ABSL_GUARDED_BY(mu) = false;

  bool Failed() {
    yuebing::MutexLock lock(&mu);
    return failed;
  }
  // Moves every QP to ERROR (outstanding work flushes) and returns the slices never posted.
  std::vector<Slice*> Fail() {
    yuebing::MutexLock lock(&mu);
    std::vector<Slice*> unposted;
    if (!failed) {
      failed = true;
      for (auto& qp : qps) qp->MoveToError();
    }
    for (auto& queue : backlog) {
      unposted.insert(unposted.end(), queue.begin(), queue.end());
      queue.clear();
    }
    return unposted;
  }
};

struct Path {
  size_t local_nic = 0;
  uint32_t remote_nic = 0;
  uint32_t lkey = 0;
  uint32_t rkey = 0;
};

struct RequestState {
  TransferTask* task = nullptr;
  bool write = true;
  char* local = nullptr;
  uint64_t remote = 0;
  SteadyTime deadline;
  std::shared_ptr<const SegmentDescriptor> peer;
  std::vector<Path> paths;
};

struct Slice {
  std::shared_ptr<RequestState> request;
  uint64_t offset = 0;
  uint64_t length = 0;
  uint32_t path = 0;
  uint32_t qp = 0;
  SliceAttempts attempts;
  std::shared_ptr<Endpoint> endpoint;
};

struct Region {
  uint64_t addr = 0;
  uint64_t length = 0;
  std::vector<ibv_mr*> mrs;       // one per NIC
  std::vector<size_t> nic_order;  // preferred NICs first (NicPreference)
  size_t preferred = 0;           // how many of nic_order are preferred
};

struct LocalNic {
  std::unique_ptr<verbs::Device> device;
  NicInfo topology;
  std::unique_ptr<EndpointCache<Endpoint>> active;
  std::unique_ptr<EndpointCache<Endpoint>> passive;
  yuebing::Mutex connect_mu;  // one QP exchange at a time per NIC, so one endpoint per key
  yuebing::Mutex inflight_mu;
  absl::flat_hash_set<Slice*> inflight ABSL_GUARDED_BY(inflight_mu);
  std::thread poller;
};

class VerbsRdmaTransport final : public RdmaTransport {
 public:
  explicit VerbsRdmaTransport(const RdmaTransportOptions& options)
      : options_(options), config_(options.config) {}
  ~VerbsRdmaTransport() override;

  absl::Status Start(const std::vector<std::string>& names);

  std::vector<RdmaNicDescriptor> LocalNics() const override;
  absl::StatusOr<std::vector<uint32_t>> RegisterMemory(void* addr, size_t length,
                                                       const std::string& location) override;
  absl::Status UnregisterMemory(void* addr) override;
  absl::StatusOr<std::string> HandleConnect(const std::string& request) override;
  absl::Status Submit(const SegmentDescriptor& peer, const TransferRequest& request,
                      TransferBatch* batch, TransferTask& task, SteadyTime deadline) override;
  void Shutdown() override;

 private:
  absl::StatusOr<std::shared_ptr<Endpoint>> GetEndpoint(size_t nic, const SegmentDescriptor& peer,
                                                        uint32_t remote_nic);
  absl::StatusOr<std::shared_ptr<Endpoint>> MakeEndpoint(size_t nic, uint32_t qps);
  // Queues the slice on its endpoint (posting it when the QP has room). On error the slice is
  // not owned by any NIC.
  absl::Status Enqueue(Slice* slice);
  absl::Status PostLocked(Endpoint& endpoint, Slice* slice)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(endpoint.mu);
  // A slice whose attempt failed: repost on another path, or finish it.
  void Retry(Slice* slice, bool retryable, std::string error);
  void Finish(Slice* slice, const absl::Status& status);
  void Own(Slice* slice);
  void Disown(Slice* slice);
  void PollLoop(size_t nic);
  void HandleCompletion(size_t nic, const verbs::Completion& completion);
  void ExpireDeadlines(size_t nic, SteadyTime now);

  const RdmaTransportOptions options_;
  const RdmaConfig config_;
  std::vector<std::unique_ptr<LocalNic>> nics_;
  std::unique_ptr<NicHealth> health_;
  std::atomic<uint64_t> rotation_{0};
  std::atomic<bool> stopping_{false};      // no new work; in-flight work is flushed
  std::atomic<bool> stop_pollers_{false};  // pollers exit
  yuebing::Mutex regions_mu_;
  std::map<uint64_t, Region> regions_ ABSL_GUARDED_BY(regions_mu_);
};

absl::Status VerbsRdmaTransport::Start(const std::vector<std::string>& names) {
  absl::StatusOr<std::vector<NicInfo>> topology = ReadNicTopology(options_.sysfs_root);
  if (!topology.ok()) YB_LOG_WARN("RDMA NIC topology unreadable: {}", topology.status().ToString());
  std::string errors;
  for (const std::string& name : names) {
    absl::StatusOr<std::unique_ptr<verbs::Device>> device = verbs::Device::Open(name, config_);
    if (!device.ok()) {
      absl::StrAppend(&errors, errors.empty() ? "" : "; ", device.status().message());
      continue;
    }
    auto nic = std::make_unique<LocalNic>();
    nic->device = *std::move(device);
    nic->topology.name = name;
    if (topology.ok()) {
      for (const NicInfo& info : *topology) {
        if (info.name == name) nic->topology = info;
      }
    }
    nic->active = std::make_unique<EndpointCache<Endpoint>>(config_.max_endpoints);
    nic->passive = std::make_unique<EndpointCache<Endpoint>>(config_.max_endpoints);
    nics_.push_back(std::move(nic));
  }
  if (nics_.empty()) {
    return absl::UnavailableError(absl::StrCat("no RDMA device could be opened: ", errors));
  }
  health_ = std::make_unique<NicHealth>(nics_.size(), kNicFailureThreshold, kNicQuarantine);
  for (size_t i = 0; i < nics_.size(); ++i) {
    nics_[i]->poller = std::thread(&VerbsRdmaTransport::PollLoop, this, i);
  }
  return absl::OkStatus();
}

VerbsRdmaTransport::~VerbsRdmaTransport() {
  Shutdown();
  for (auto& nic : nics_) {
    (void)nic->active->Clear();
    (void)nic->passive->Clear();
  }
  yuebing::MutexLock lock(&regions_mu_);
  for (auto& [addr, region] : regions_) {
    for (ibv_mr* mr : region.mrs) verbs::Device::Deregister(mr);
  }
  regions_.clear();
}

void VerbsRdmaTransport::Shutdown() {
  if (stopping_.exchange(true)) return;
  // Flush everything in flight, let the pollers finish the flushed slices, then stop them.
  std::vector<Slice*> unposted;
  for (auto& nic : nics_) {
    for (auto& endpoint : nic->active->Clear()) {
      for (Slice* s : endpoint->Fail()) unposted.push_back(s);
    }
    for (auto& endpoint : nic->passive->Clear()) (void)endpoint->Fail();
  }
  for (Slice* s : unposted) Finish(s, absl::CancelledError("RDMA transport shut down"));
  const SteadyTime give_up = Clock::Real().Now() + kShutdownDrain;
  for (auto& nic : nics_) {
    while (Clock::Real().Now() < give_up) {
      {
        yuebing::MutexLock lock(&nic->inflight_mu);
        if (nic->inflight.empty()) break;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
  }
  stop_pollers_ = true;
  for (auto& nic : nics_) {
    if (nic->poller.joinable()) nic->poller.join();
    std::vector<Slice*> left;
    {
      yuebing::MutexLock lock(&nic->inflight_mu);
      left.assign(nic->inflight.begin(), nic->inflight.end());
    }
    if (!left.empty())
      YB_LOG_WARN("{} RDMA slices never completed on {}", left.size(), nic->topology.name);
    for (Slice* s : left) Finish(s, absl::CancelledError("RDMA transport shut down"));
  }
}

std::vector<RdmaNicDescriptor> VerbsRdmaTransport::LocalNics() const {
  std::vector<RdmaNicDescriptor> out;
  for (const auto& nic : nics_) {
    out.push_back({nic->device->name(), nic->device->lid(), GidToHex(nic->device->gid())});
  }
  return out;
}

absl::StatusOr<std::vector<uint32_t>> VerbsRdmaTransport::RegisterMemory(
    void* addr, size_t length, const std::string& location) {
  const uint64_t start = reinterpret_cast<uint64_t>(addr);
  Region region;
  region.addr = start;
  region.length = length;
  std::vector<NicInfo> topology;
  for (const auto& nic : nics_) topology.push_back(nic->topology);
  NicPreference preference = SelectNics(topology, location, options_.sysfs_root);
  region.nic_order = preference.preferred;
  region.nic_order.insert(region.nic_order.end(), preference.others.begin(),
                          preference.others.end());
  region.preferred = preference.preferred.size();
  std::vector<uint32_t> rkeys;
  for (const auto& nic : nics_) {
    absl::StatusOr<ibv_mr*> mr = nic->device->Register(addr, length);
    if (!mr.ok()) {
      for (ibv_mr* done : region.mrs) verbs::Device::Deregister(done);
      return mr.status();
    }
    region.mrs.push_back(*mr);
    rkeys.push_back((*mr)->rkey);
  }
  yuebing::MutexLock lock(&regions_mu_);
  auto next = regions_.lower_bound(start);
  bool overlaps = (next != regions_.end() && next->first < start + length) ||
                  (next != regions_.begin() &&
                   std::prev(next)->second.addr + std::prev(next)->second.length > start);
  if (overlaps) {
    for (ibv_mr* done : region.mrs) verbs::Device::Deregister(done);
    return absl::AlreadyExistsError("memory overlaps a region registered for RDMA");
  }
  regions_[start] = std::move(region);
  return rkeys;
}

absl::Status VerbsRdmaTransport::UnregisterMemory(void* addr) {
  yuebing::MutexLock lock(&regions_mu_);
  auto it = regions_.find(reinterpret_cast<uint64_t>(addr));
  if (it == regions_.end()) return absl::NotFoundError("no RDMA region starts at this address");
  for (ibv_mr* mr : it->second.mrs) verbs::Device::Deregister(mr);
  regions_.erase(it);
  return absl::OkStatus();
}

absl::StatusOr<std::shared_ptr<Endpoint>> VerbsRdmaTransport::MakeEndpoint(size_t nic,
                                                                           uint32_t qps) {
  auto endpoint = std::make_shared<Endpoint>();
  endpoint->max_wr = config_.max_wr;
  for (uint32_t i = 0; i < qps; ++i) {
    YB_ASSIGN_OR_RETURN(std::unique_ptr<verbs::QueuePair> qp,
                        nics_[nic]->device->CreateQp(config_.max_wr));
    endpoint->qps.push_back(std::move(qp));
  }
  yuebing::MutexLock lock(&endpoint->mu);
  endpoint->outstanding.assign(qps, 0);
  endpoint->backlog.resize(qps);
  return endpoint;
}

absl::StatusOr<std::shared_ptr<Endpoint>> VerbsRdmaTransport::GetEndpoint(
    size_t nic, const SegmentDescriptor& peer, uint32_t remote_nic) {
  LocalNic& local = *nics_[nic];
  const std::string key =
      absl::StrCat(peer.name, "#", peer.epoch, "/", peer.rdma_nics[remote_nic].name);
  std::shared_ptr<Endpoint> cached = local.active->Find(key);
  if (cached != nullptr && !cached->Failed()) return cached;
  yuebing::MutexLock connect_lock(&local.connect_mu);
  cached = local.active->Find(key);
  if (cached != nullptr && !cached->Failed()) return cached;
  if (cached != nullptr) (void)local.active->Erase(key);
  YB_ASSIGN_OR_RETURN(std::shared_ptr<Endpoint> endpoint,
                      MakeEndpoint(nic, config_.qps_per_endpoint));
  endpoint->key = key;
  RdmaConnectRequest request;
  request.initiator = options_.local_segment_name;
  request.target_nic = peer.rdma_nics[remote_nic].name;
  request.qps.nic = local.device->name();
  request.qps.lid = local.device->lid();
  request.qps.gid = local.device->gid();
  request.qps.psn = RandomPsn();
  request.qps.mtu = local.device->mtu();
  for (auto& qp : endpoint->qps) request.qps.qpns.push_back(qp->qpn());
  YB_ASSIGN_OR_RETURN(
      std::string reply,
      ExchangeQpInfo(peer.tcp_host, peer.tcp_port, peer.name, peer.epoch, options_.cluster_secret,
                     EncodeRdmaConnectRequest(request), options_.connect_timeout));
  YB_ASSIGN_OR_RETURN(QpSetInfo remote, DecodeQpSetInfo(reply));
  if (remote.qpns.size() != endpoint->qps.size()) {
    return absl::InternalError("peer answered the QP exchange with another QP count");
  }
  for (size_t i = 0; i < endpoint->qps.size(); ++i) {
    verbs::RemoteQp target{remote.qpns[i], remote.psn, remote.lid, remote.gid, remote.mtu};
    YB_RETURN_IF_ERROR(endpoint->qps[i]->Connect(target, request.qps.psn));
  }
  // Evicted endpoints stay alive while slices hold them; they are destroyed with the last one.
  return local.active->Insert(key, std::move(endpoint), nullptr);
}

absl::StatusOr<std::string> VerbsRdmaTransport::HandleConnect(const std::string& text) {
  if (stopping_) return absl::UnavailableError("RDMA transport is shutting down");
  YB_ASSIGN_OR_RETURN(RdmaConnectRequest request, DecodeRdmaConnectRequest(text));
  size_t nic = nics_.size();
  for (size_t i = 0; i < nics_.size(); ++i) {
    if (nics_[i]->device->name() == request.target_nic) nic = i;
  }
  if (nic == nics_.size()) {
    return absl::NotFoundError(absl::StrCat("no RDMA NIC named ", request.target_nic));
  }
  YB_ASSIGN_OR_RETURN(std::shared_ptr<Endpoint> endpoint,
                      MakeEndpoint(nic, static_cast<uint32_t>(request.qps.qpns.size())));
  const verbs::Device& device = *nics_[nic]->device;
  QpSetInfo reply;
  reply.nic = device.name();
  reply.lid = device.lid();
  reply.gid = device.gid();
  reply.psn = RandomPsn();
  reply.mtu = device.mtu();
  for (size_t i = 0; i < endpoint->qps.size(); ++i) {
    verbs::RemoteQp initiator{request.qps.qpns[i], request.qps.psn, request.qps.lid,
                              request.qps.gid, request.qps.mtu};
    YB_RETURN_IF_ERROR(endpoint->qps[i]->Connect(initiator, reply.psn));
    reply.qpns.push_back(endpoint->qps[i]->qpn());
  }
  endpoint->key = absl::StrCat(request.initiator, "/", request.qps.nic, "/", request.qps.qpns[0]);
  (void)nics_[nic]->passive->Insert(endpoint->key, std::move(endpoint), nullptr);
  return EncodeQpSetInfo(reply);
}

void VerbsRdmaTransport::Own(Slice* slice) {
  LocalNic& nic = *nics_[slice->request->paths[slice->path].local_nic];
  yuebing::MutexLock lock(&nic.inflight_mu);
  nic.inflight.insert(slice);
}

void VerbsRdmaTransport::Disown(Slice* slice) {
  LocalNic& nic = *nics_[slice->request->paths[slice->path].local_nic];
  yuebing::MutexLock lock(&nic.inflight_mu);
  nic.inflight.erase(slice);
}

absl::Status VerbsRdmaTransport::PostLocked(Endpoint& endpoint, Slice* slice) {
  const Path& path = slice->request->paths[slice->path];
  RequestState& request = *slice->request;
  YB_RETURN_IF_ERROR(endpoint.qps[slice->qp]->PostRdma(
      request.write, reinterpret_cast<uint64_t>(request.local + slice->offset), path.lkey,
      static_cast<uint32_t>(slice->length), request.remote + slice->offset, path.rkey,
      reinterpret_cast<uint64_t>(slice)));
  ++endpoint.outstanding[slice->qp];
  return absl::OkStatus();
}

absl::Status VerbsRdmaTransport::Enqueue(Slice* slice) {
  Endpoint& endpoint = *slice->endpoint;
  Own(slice);  // before posting: the completion may arrive at once
  absl::Status status;
  {
    yuebing::MutexLock lock(&endpoint.mu);
    if (endpoint.failed) {
      status = absl::UnavailableError("endpoint failed");
    } else if (endpoint.outstanding[slice->qp] >= endpoint.max_wr) {
      endpoint.backlog[slice->qp].push_back(slice);
    } else {
      status = PostLocked(endpoint, slice);
    }
  }
  if (!status.ok()) Disown(slice);
  return status;
}

void VerbsRdmaTransport::Finish(Slice* slice, const absl::Status& status) {
  slice->request->task->FinishSlice(status.ok() ? slice->length : 0, status);
  delete slice;
}

void VerbsRdmaTransport::Retry(Slice* slice, bool retryable, std::string error) {
  RequestState& request = *slice->request;
  // NextPath gives up after config_.retry_count attempts, so this loop ends; the check proves it.
  for (uint32_t round = 0;; ++round) {
    YB_CHECK(round <= config_.retry_count + 1, "a slice is retried a bounded number of times");
    if (Clock::Real().Now() >= request.deadline) {
      Finish(slice, absl::DeadlineExceededError(
                        absl::StrCat("RDMA slice past its deadline (", error, ")")));
      return;
    }
    if (stopping_) {
      Finish(slice, absl::CancelledError("RDMA transport shut down"));
      return;
    }
    std::optional<uint32_t> next =
        NextPath(slice->attempts, retryable, static_cast<uint32_t>(request.paths.size()),
                 config_.retry_count,
                 [&](uint32_t path) { return health_->Usable(request.paths[path].local_nic); });
    if (!next) {
      Finish(slice, absl::UnavailableError(absl::StrCat(
                        "RDMA slice failed after ", slice->attempts.made, " attempts: ", error)));
      return;
    }
    ++slice->attempts.made;
    slice->path = *next;
    const Path& path = request.paths[*next];
    absl::StatusOr<std::shared_ptr<Endpoint>> endpoint =
        GetEndpoint(path.local_nic, *request.peer, path.remote_nic);
    if (endpoint.ok()) {
      slice->endpoint = *endpoint;
      slice->qp = (*endpoint)->next_qp.fetch_add(1) % (*endpoint)->qps.size();
      absl::Status posted = Enqueue(slice);
      if (posted.ok()) return;
      endpoint = posted;
    }
    slice->attempts.failed_paths.push_back(*next);
    health_->RecordFailure(path.local_nic);
    retryable = true;
    error = endpoint.status().ToString();
    slice->endpoint.reset();
  }
}

void VerbsRdmaTransport::HandleCompletion(size_t nic, const verbs::Completion& completion) {
  auto* slice = reinterpret_cast<Slice*>(completion.wr_id);
  Disown(slice);
  std::shared_ptr<Endpoint> endpoint = slice->endpoint;
  std::vector<Slice*> to_post;
  {
    yuebing::MutexLock lock(&endpoint->mu);
    --endpoint->outstanding[slice->qp];
    std::deque<Slice*>& backlog = endpoint->backlog[slice->qp];
    while (!endpoint->failed && !backlog.empty() &&
           endpoint->outstanding[slice->qp] < endpoint->max_wr) {
      Slice* next = backlog.front();
      backlog.pop_front();
      if (!PostLocked(*endpoint, next).ok()) to_post.push_back(next);
    }
  }
  for (Slice* s : to_post) {  // could not be posted: treat as a failed attempt
    Disown(s);
    s->attempts.failed_paths.push_back(s->path);
    Retry(s, true, "post failed");
  }
  if (completion.ok) {
    health_->RecordSuccess(nic);
    Finish(slice, absl::OkStatus());
    return;
  }
  // An RC QP in error flushes everything: retry the never-posted slices too.
  for (Slice* s : endpoint->Fail()) {
    Disown(s);
    s->attempts.failed_paths.push_back(s->path);
    Retry(s, true, "endpoint failed");
  }
  // The failed endpoint stays cached until GetEndpoint sees it failed and replaces it, so a late
  // flush cannot drop a newer endpoint that took the same key.
  if (!completion.flushed) health_->RecordFailure(nic);
  slice->attempts.failed_paths.push_back(slice->path);
  Retry(slice, completion.retryable, completion.error);
}

void VerbsRdmaTransport::ExpireDeadlines(size_t nic, SteadyTime now) {
  std::vector<std::shared_ptr<Endpoint>> late;
  {
    yuebing::MutexLock lock(&nics_[nic]->inflight_mu);
    for (Slice* s : nics_[nic]->inflight) {
      if (s->request->deadline <= now) late.push_back(s->endpoint);
    }
  }
  // Flushing makes the NIC give the memory back; the flushed slices then end as TIMEOUT.
  for (auto& endpoint : late) {
    for (Slice* s : endpoint->Fail()) {
      Disown(s);
      Finish(s, absl::DeadlineExceededError("RDMA slice past its deadline (queued)"));
    }
  }
}

void VerbsRdmaTransport::PollLoop(size_t nic) {
  std::vector<verbs::Completion> completions;
  auto idle_sleep = std::chrono::microseconds(1);
  SteadyTime next_scan = Clock::Real().Now() + kDeadlineScanPeriod;
  while (!stop_pollers_) {
    completions.clear();
    absl::Status status = nics_[nic]->device->Poll(64, completions);
    if (!status.ok()) YB_LOG_ERROR("{}", status.ToString());
    for (const verbs::Completion& c : completions) HandleCompletion(nic, c);
    SteadyTime now = Clock::Real().Now();
    if (now >= next_scan) {
      ExpireDeadlines(nic, now);
      next_scan = now + kDeadlineScanPeriod;
    }
    if (completions.empty()) {
      std::this_thread::sleep_for(idle_sleep);
      idle_sleep = std::min<std::chrono::microseconds>(idle_sleep * 2, kMaxIdleSleep);
    } else {
      idle_sleep = std::chrono::microseconds(1);
    }
  }
}

absl::Status VerbsRdmaTransport::Submit(const SegmentDescriptor& peer,
                                        const TransferRequest& request, TransferBatch* batch,
                                        TransferTask& task, SteadyTime deadline) {
  if (stopping_) return absl::FailedPreconditionError("RDMA transport shut down");
  if (peer.rdma_nics.empty()) return absl::FailedPreconditionError("peer serves no RDMA");
  const BufferDescriptor* target = peer.FindBuffer(request.target_offset, request.length);
  if (target == nullptr) {
    return absl::FailedPreconditionError("target range is not in a buffer of the peer");
  }
  auto state = std::make_shared<RequestState>();
  state->task = &task;
  state->write = request.opcode == OpCode::kWrite;
  state->local = static_cast<char*>(request.source);
  state->remote = request.target_offset;
  state->deadline = deadline;
  state->peer = std::make_shared<SegmentDescriptor>(peer);
  size_t preferred = 0;
  {
    yuebing::MutexLock lock(&regions_mu_);
    const uint64_t source = reinterpret_cast<uint64_t>(request.source);
    auto it = regions_.upper_bound(source);
    if (it == regions_.begin()) return absl::FailedPreconditionError("source not registered");
    const Region& region = std::prev(it)->second;
    if (source - region.addr >= region.length ||
        request.length > region.length - (source - region.addr)) {
      return absl::FailedPreconditionError("source not inside one registered region");
    }
    std::vector<uint32_t> remote = PairRemoteNics(static_cast<uint32_t>(region.nic_order.size()),
                                                  static_cast<uint32_t>(peer.rdma_nics.size()));
    for (size_t k = 0; k < region.nic_order.size(); ++k) {
      size_t nic = region.nic_order[k];
      state->paths.push_back({nic, remote[k], region.mrs[nic]->lkey, target->rkeys[remote[k]]});
    }
    preferred = region.preferred;
  }
  // Connect the preferred paths (usually cached); the others are connected on a retry.
  std::vector<std::shared_ptr<Endpoint>> endpoints;
  std::vector<Path> usable;
  std::vector<Path> rest;
  absl::Status last = absl::UnavailableError("no RDMA path");
  for (size_t k = 0; k < state->paths.size(); ++k) {
    const Path& path = state->paths[k];
    if (k >= preferred && !endpoints.empty()) {
      rest.push_back(path);
      continue;
    }
    absl::StatusOr<std::shared_ptr<Endpoint>> endpoint =
        GetEndpoint(path.local_nic, peer, path.remote_nic);
    if (endpoint.ok()) {
      endpoints.push_back(*std::move(endpoint));
      usable.push_back(path);
    } else {
      last = endpoint.status();
      health_->RecordFailure(path.local_nic);
      rest.push_back(path);
    }
  }
  if (endpoints.empty()) return absl::UnavailableError(absl::StrCat("RDMA: ", last.message()));
  const uint32_t striped = static_cast<uint32_t>(usable.size());
  state->paths = usable;
  state->paths.insert(state->paths.end(), rest.begin(), rest.end());
  YB_ASSIGN_OR_RETURN(std::vector<PlannedSlice> plan,
                      PlanSlices({request.length, config_.slice_bytes, striped,
                                  config_.qps_per_endpoint, rotation_.fetch_add(1)}));
  task.Start(batch, static_cast<uint32_t>(plan.size()));
  for (const PlannedSlice& planned : plan) {
    YB_CHECK(planned.length > 0 && planned.offset < request.length &&
                 planned.length <= request.length - planned.offset,
             "an RDMA slice lies inside its request");
    auto* slice = new Slice;
    slice->request = state;
    slice->offset = planned.offset;
    slice->length = planned.length;
    slice->path = planned.path;
    slice->endpoint = endpoints[planned.path];
    slice->qp = planned.qp % slice->endpoint->qps.size();
    slice->attempts.made = 1;
    absl::Status status = Enqueue(slice);
    if (!status.ok()) {
      slice->attempts.failed_paths.push_back(slice->path);
      Retry(slice, true, std::string(status.message()));
    }
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<std::unique_ptr<RdmaTransport>> CreateRdmaTransport(
    const RdmaTransportOptions& options) {
  std::vector<std::string> names = verbs::DeviceNames();
  if (names.empty()) return absl::UnavailableError("ibv_get_device_list returned no device");
  const size_t found = names.size();
  if (!options.config.device_filter.empty()) {
    std::erase_if(names, [&](const std::string& name) {
      const auto& filter = options.config.device_filter;
      return std::find(filter.begin(), filter.end(), name) == filter.end();
    });
  }
  if (names.empty()) {
    return absl::UnavailableError(
        absl::StrCat("none of the ", found, " RDMA devices is in the requested device list"));
  }
  auto transport = std::make_unique<VerbsRdmaTransport>(options);
  YB_RETURN_IF_ERROR(transport->Start(names));
  return std::unique_ptr<RdmaTransport>(std::move(transport));
}

std::vector<std::string> ListRdmaDevices() { return verbs::DeviceNames(); }

}  // namespace yuebing::transport::rdma
