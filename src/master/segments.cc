// Segments, clients and space of the master: mount/unmount, liveness, placement, frees.
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <thread>
#include <utility>

#include "absl/container/inlined_vector.h"
#include "absl/strings/str_cat.h"
#include "master/master_impl.h"
#include "yuebing/common/error_code.h"
#include "yuebing/common/logging.h"

namespace yuebing::master {
namespace {

bool HeapLater(const RetiredRange& a, const RetiredRange& b) { return a.free_at_ns > b.free_at_ns; }

}  // namespace

bool MasterService::Impl::OwnerAlive(const SegmentState& seg, int64_t now) const {
  return seg.owner != nullptr && seg.owner->last_ping_ns.load() + client_ttl_ns_ >= now;
}

absl::StatusOr<MountResult> MasterService::Impl::MountSegment(const ClientId& client,
                                                              const Segment& segment,
                                                              bool restoring, bool has_disk_tier) {
  if (client.empty() || client.size() > kMaxClientIdBytes) {
    return MakeError(ErrorCode::kInvalidParams, "bad client id");
  }
  if (segment.name.empty() || segment.name.size() > kMaxSegmentNameBytes) {
    return MakeError(ErrorCode::kInvalidParams, "bad segment name");
  }
  if (segment.size == 0 || segment.base > UINT64_MAX - segment.size) {
    return MakeError(ErrorCode::kInvalidParams, "bad segment range");
  }
  auto state = std::make_unique<SegmentState>(segment, alignment_);
  const uint64_t capacity = state->capacity;
  if (capacity == 0) {
    return MakeError(ErrorCode::kInvalidParams, "segment smaller than the allocation alignment");
  }
  const int64_t now = NowNs();
  // A mount waits for an unmount under way: the objects of a segment of the same name must be
  // gone before the new mount's owner reports what it holds.
  yuebing::MutexLock unmounting(&unmount_mu_);
  yuebing::MutexLock topo(&topo_mu_);
  auto client_it = clients_.find(client);
  if (client_it == clients_.end()) {
    if (clients_.size() >= kMaxClients) {
      return MakeError(ErrorCode::kNoAvailableHandle, "too many clients");
    }
    client_it = clients_.try_emplace(client).first;
    client_it->second.serial = next_client_serial_++;
  }
  ClientInfo& info = client_it->second;
  info.last_ping_ns.store(now);
  if (has_disk_tier) info.has_disk_tier = true;
  auto named = segment_by_name_.find(segment.name);
  if (named != segment_by_name_.end()) {
    const SegmentState& old = *segments_[named->second];
    if (old.client_id == client) {
      if (old.segment.base == segment.base && old.segment.size == segment.size) {
        // A restore that did not finish (the owner's call failed) may start over.
        return MountResult{old.epoch, restoring && old.restoring.load()};
      }
      YB_LOG_INFO("segment {} re-mounted with a new range: dropping the old mount", segment.name);
      const std::vector<uint32_t> slots{named->second};
      BeginUnmount(slots, {}, now);
      SweepUnmountLocked(slots, now);
      FinishUnmount(slots);
    } else if (OwnerAlive(old, now)) {
      return MakeError(ErrorCode::kSegmentAlreadyExists,
                       absl::StrCat("segment ", segment.name, " is mounted by a live client"));
    } else {
      // Its owner missed its pings: expire it now (as Tick would), then take the name.
      YB_LOG_INFO("segment {} taken over by client {}", segment.name, client);
      const std::vector<uint32_t> slots = BeginExpiry({old.client_id}, now);
      SweepUnmountLocked(slots, now);
      FinishUnmount(slots);
    }
  }
  if (segment_by_name_.size() >= kMaxSegments) {
    return MakeError(ErrorCode::kNoAvailableHandle, "too many segments");
  }
  uint32_t slot = 0;
  while (slot < segments_.size() && segments_[slot] != nullptr) ++slot;
  if (slot == segments_.size()) segments_.emplace_back();
  state->client_id = client;
  state->owner = &info;
  state->epoch = next_epoch_++;
  state->free_bytes.store(capacity);
  state->restoring.store(restoring);
  state->journaled = restoring;
  const uint64_t epoch = state->epoch;
  segments_[slot] = std::move(state);
  segment_by_name_[segment.name] = slot;
  capacity_bytes_.fetch_add(capacity);
  YB_LOG_INFO("mounted segment {} ({} bytes) for client {} at epoch {}{}", segment.name,
              segment.size, client, epoch, restoring ? " (restoring)" : "");
  return MountResult{epoch, true};
}

absl::Status MasterService::Impl::UnmountSegment(const ClientId& client, const std::string& name) {
  const int64_t now = NowNs();
  yuebing::MutexLock unmounting(&unmount_mu_);
  std::vector<uint32_t> slots;
  {
    yuebing::MutexLock topo(&topo_mu_);
    auto named = segment_by_name_.find(name);
    if (named == segment_by_name_.end()) {
      return MakeError(ErrorCode::kSegmentNotFound, "no such segment");
    }
    if (segments_[named->second]->client_id != client) {
      return MakeError(ErrorCode::kIllegalClient, "segment is owned by another client");
    }
    slots.push_back(named->second);
    BeginUnmount(slots, {}, now);
  }
  SweepAndFinishUnmount(slots, now);
  return absl::OkStatus();
}

ClientState MasterService::Impl::Ping(const ClientId& client) {
  if (client.empty() || client.size() > kMaxClientIdBytes) return ClientState::kNeedRemount;
  const int64_t now = NowNs();
  {
    yuebing::ReaderMutexLock topo(&topo_mu_);
    auto it = clients_.find(client);
    if (it != clients_.end()) {
      it->second.last_ping_ns.store(now);
      return it->second.remount_on_ping.exchange(false) ? ClientState::kNeedRemount
                                                        : ClientState::kOk;
    }
  }
  // Unknown (new, or expired and dropped): remember it, and ask it to mount its segments again.
  yuebing::MutexLock topo(&topo_mu_);
  auto it = clients_.find(client);
  if (it != clients_.end()) {
    it->second.last_ping_ns.store(now);
    return it->second.remount_on_ping.exchange(false) ? ClientState::kNeedRemount
                                                      : ClientState::kOk;
  }
  if (clients_.size() < kMaxClients) {
    it = clients_.try_emplace(client).first;
    it->second.serial = next_client_serial_++;
    it->second.last_ping_ns.store(now);
  }
  return ClientState::kNeedRemount;
}

void MasterService::Impl::ExpireClients(int64_t now) {
  auto expired = [&](const ClientInfo& info) {
    return info.last_ping_ns.load() + client_ttl_ns_ < now;
  };
  {
    yuebing::ReaderMutexLock topo(&topo_mu_);
    if (std::none_of(clients_.begin(), clients_.end(),
                     [&](const auto& entry) { return expired(entry.second); })) {
      return;
    }
  }
  yuebing::MutexLock unmounting(&unmount_mu_);
  std::vector<uint32_t> slots;
  {
    yuebing::MutexLock topo(&topo_mu_);
    std::vector<ClientId> ids;
    for (const auto& [id, info] : clients_) {
      if (expired(info)) ids.push_back(id);
    }
    slots = BeginExpiry(ids, now);
  }
  SweepAndFinishUnmount(slots, now);
}

std::vector<uint32_t> MasterService::Impl::BeginExpiry(const std::vector<ClientId>& ids,
                                                       int64_t now) {
  if (ids.empty()) return {};
  absl::flat_hash_set<uint64_t> serials;
  for (const ClientId& id : ids) serials.insert(clients_.at(id).serial);
  std::vector<uint32_t> slots;
  for (uint32_t slot = 0; slot < segments_.size(); ++slot) {
    const SegmentState* seg = segments_[slot].get();
    if (seg != nullptr && !seg->dying && serials.contains(seg->owner->serial)) {
      slots.push_back(slot);
    }
  }
  BeginUnmount(slots, serials, now);
  DropDiskTiers(serials);
  for (uint64_t serial : serials) journal_.Forget(serial);
  for (const ClientId& id : ids) {
    YB_LOG_WARN("client {} missed pings for longer than client_ttl: dropped", id);
    clients_.erase(id);
  }
  return slots;
}

void MasterService::Impl::DropSegmentReplicas(Shard& s, uint32_t index, int64_t now) {
  ObjectEntry& entry = s.table.at(index);
  auto dying = [&](const ReplicaRef& ref) { return segments_[ref.segment]->dying; };
  bool touched = segments_[entry.segment]->dying;
  if (!touched && entry.replicas > 1) {
    auto it = s.extra.find(index);
    touched = it != s.extra.end() && std::any_of(it->second.begin(), it->second.end(), dying);
  }
  if (!(entry.flags & kEntryComplete)) {
    if (touched) DropObject(s, index, now, Unfinished::kHoldUntilRelease);
    return;
  }
  if (entry.flags & kEntryPendingUpsert) {
    auto it = s.pending.find(index);
    if (it != s.pending.end() &&
        std::any_of(it->second.replicas.begin(), it->second.replicas.end(), dying)) {
      CancelPending(s, index, now, Unfinished::kHoldUntilRelease);
    }
  }
  if (!touched) return;
  std::vector<ReplicaRef> refs = ReplicasOf(s, index);
  refs.erase(std::remove_if(refs.begin(), refs.end(), dying), refs.end());
  if (refs.empty()) {
    DropObject(s, index, now, Unfinished::kHoldUntilRelease);
  } else {
    SetReplicas(s, index, refs);
  }
}

void MasterService::Impl::BeginUnmount(const std::vector<uint32_t>& slots,
                                       const absl::flat_hash_set<uint64_t>& writers, int64_t now) {
  for (uint32_t slot : slots) {
    SegmentState& seg = *segments_[slot];
    seg.dying = true;
    seg.owner = nullptr;  // an expired owner is forgotten before the sweep ends
    {
      yuebing::MutexLock lock(&seg.mu);
      used_bytes_.fetch_sub(seg.alloc.used_bytes());
      capacity_bytes_.fetch_sub(seg.capacity);
      for (const auto& [tenant, bytes] : seg.tenant_bytes) quotas_->Refund(tenant, bytes);
      seg.tenant_bytes.clear();
      seg.range_tenant.clear();
    }
    segment_by_name_.erase(seg.segment.name);
  }
  if (!writers.empty()) {
    for (const std::unique_ptr<Shard>& shard : shards_) {
      Shard& s = *shard;
      yuebing::MutexLock lock(&s.mu);
      std::vector<uint32_t> puts;
      for (const auto& [i, announced] : s.in_progress) {
        if (writers.contains(s.table.at(i).aux)) puts.push_back(i);
      }
      for (uint32_t i : puts) DropObject(s, i, now, Unfinished::kHoldUntilRelease);
      puts.clear();
      for (const auto& [i, pending] : s.pending) {
        if (writers.contains(pending.writer)) puts.push_back(i);
      }
      for (uint32_t i : puts) CancelPending(s, i, now, Unfinished::kHoldUntilRelease);
    }
  }
  if (!slots.empty()) {
    yuebing::MutexLock lock(&retired_mu_);
    auto gone = [&](const RetiredRange& r) { return segments_[r.segment]->dying; };
    retired_.erase(std::remove_if(retired_.begin(), retired_.end(), gone), retired_.end());
    std::make_heap(retired_.begin(), retired_.end(), HeapLater);
  }
}

bool MasterService::Impl::SweepChunk(Shard& s, const std::vector<uint32_t>& slots, int64_t now,
                                     bool first) {
  yuebing::MutexLock lock(&s.mu);
  if (first && !s.pending.empty()) {
    // Upserts started before the unmount whose new replicas are on a dying segment.
    std::vector<uint32_t> cancel;
    for (const auto& [i, pending] : s.pending) {
      if (std::any_of(pending.replicas.begin(), pending.replicas.end(),
                      [&](const ReplicaRef& ref) { return segments_[ref.segment]->dying; })) {
        cancel.push_back(i);
      }
    }
    for (uint32_t i : cancel) CancelPending(s, i, now, Unfinished::kHoldUntilRelease);
  }
  size_t done = 0;
  for (uint32_t slot : slots) {
    // Each entry visited loses its replicas on dying segments (or goes), leaving their lists.
    for (uint32_t i : s.members.Some(s.table, slot, kUnmountChunk - done)) {
      DropSegmentReplicas(s, i, now);
      ++done;
    }
    if (done >= kUnmountChunk) return true;
  }
  return false;
}

void MasterService::Impl::SweepUnmountLocked(const std::vector<uint32_t>& slots, int64_t now) {
  if (slots.empty()) return;
  for (const std::unique_ptr<Shard>& shard : shards_) {
    for (bool first = true; SweepChunk(*shard, slots, now, first); first = false) {
    }
  }
}

void MasterService::Impl::SweepAndFinishUnmount(const std::vector<uint32_t>& slots, int64_t now) {
  if (slots.empty()) return;
  // One chunk per shard in turn, taking topo_mu_ (shared) per chunk: a put waiting for a shard's
  // lock gets it before the sweep comes back to that shard (absl::Mutex is not fair: a loop on
  // one shard would take its lock again before a woken waiter runs), and a writer waiting for
  // topo_mu_ (a new client's ping) holds up puts and reads for one chunk at most. The sweep runs
  // in a thread of its own at a lower CPU priority (nice +10, best effort), so that on a busy
  // host the calls of other clients come first; the caller waits for it.
  std::thread sweeper([&]() ABSL_NO_THREAD_SAFETY_ANALYSIS {
    (void)setpriority(PRIO_PROCESS, static_cast<id_t>(syscall(SYS_gettid)), 10);
    std::vector<Shard*> left;
    for (const std::unique_ptr<Shard>& shard : shards_) left.push_back(shard.get());
    for (bool first = true; !left.empty(); first = false) {
      size_t kept = 0;
      for (Shard* s : left) {
        yuebing::ReaderMutexLock topo(&topo_mu_);
        if (SweepChunk(*s, slots, now, first)) left[kept++] = s;
      }
      left.resize(kept);
    }
  });
  sweeper.join();
  yuebing::MutexLock topo(&topo_mu_);
  FinishUnmount(slots);
}

void MasterService::Impl::FinishUnmount(const std::vector<uint32_t>& slots) {
  for (uint32_t slot : slots) {
    const SegmentState& seg = *segments_[slot];
    YB_LOG_INFO("unmounted segment {} (epoch {}) of client {}", seg.segment.name, seg.epoch,
                seg.client_id);
    segments_[slot].reset();
  }
}

bool MasterService::Impl::OpenForNewObjects(const SegmentState& seg, int64_t now) const {
  return !seg.dying && !seg.restoring.load() && !seg.draining.load() && OwnerAlive(seg, now);
}

bool MasterService::Impl::AnySegmentCouldHold(uint64_t length, int64_t now) const {
  return std::any_of(segments_.begin(), segments_.end(), [&](const auto& seg) {
    // A restoring segment takes no new objects until its owner's report ends (evicting for it
    // would only drop objects just restored); a draining one takes none at all.
    return seg != nullptr && OpenForNewObjects(*seg, now) && seg->capacity >= length;
  });
}

std::vector<ReplicaRef> MasterService::Impl::AllocateReplicas(uint64_t length, uint32_t want,
                                                              const ReplicateConfig& config,
                                                              int64_t now, uint32_t tenant) {
  // Preferred slots in order (unknown names skipped); usually none or one, so a short list.
  absl::InlinedVector<uint32_t, 4> preferred;
  auto prefer = [&](const std::string& name) {
    if (name.empty()) return;
    auto it = segment_by_name_.find(name);
    if (it != segment_by_name_.end() &&
        std::find(preferred.begin(), preferred.end(), it->second) == preferred.end()) {
      preferred.push_back(it->second);
    }
  };
  prefer(config.preferred_segment);
  for (const std::string& name : config.preferred_segments) prefer(name);
  // Most free space first; the preferred segments ahead of all, in their order.
  std::vector<std::pair<uint64_t, uint32_t>> order;  // (free bytes or preference, slot)
  order.reserve(segments_.size());
  for (uint32_t slot = 0; slot < segments_.size(); ++slot) {
    const SegmentState* seg = segments_[slot].get();
    if (seg == nullptr || !OpenForNewObjects(*seg, now)) continue;
    const uint64_t free = seg->free_bytes.load();
    if (free < length) continue;
    auto rank = std::find(preferred.begin(), preferred.end(), slot);
    order.emplace_back(rank != preferred.end() ? UINT64_MAX - (rank - preferred.begin()) : free,
                       slot);
  }
  std::sort(order.begin(), order.end(), [](const auto& a, const auto& b) {
    return a.first != b.first ? a.first > b.first : a.second < b.second;
  });
  std::vector<ReplicaRef> refs;
  for (const auto& [free, slot] : order) {
    if (refs.size() >= want) break;
    SegmentState& seg = *segments_[slot];
    yuebing::MutexLock lock(&seg.mu);
    const std::optional<uint64_t> offset = seg.alloc.Allocate(length);
    if (!offset.has_value()) continue;
    seg.free_bytes.store(seg.alloc.free_bytes());
    used_bytes_.fetch_add(length);
    OwnRange(seg, *offset, length, tenant);
    refs.push_back(ReplicaRef{slot, *offset});
  }
  return refs;
}

std::optional<ReplicaRef> MasterService::Impl::AllocateOn(uint32_t slot, uint64_t length,
                                                          int64_t now, uint32_t tenant) {
  SegmentState& seg = *segments_[slot];
  if (!OpenForNewObjects(seg, now)) return std::nullopt;
  yuebing::MutexLock lock(&seg.mu);
  const std::optional<uint64_t> offset = seg.alloc.Allocate(length);
  if (!offset.has_value()) return std::nullopt;
  seg.free_bytes.store(seg.alloc.free_bytes());
  used_bytes_.fetch_add(length);
  OwnRange(seg, *offset, length, tenant);
  return ReplicaRef{slot, *offset};
}

void MasterService::Impl::OwnRange(SegmentState& seg, uint64_t offset, uint64_t length,
                                   uint32_t tenant) {
  if (tenant == 0) return;
  seg.range_tenant[offset] = tenant;
  seg.tenant_bytes[tenant] += length;
}

void MasterService::Impl::FreeRange(uint32_t segment, uint64_t offset, uint64_t length) {
  SegmentState* seg = segment < segments_.size() ? segments_[segment].get() : nullptr;
  if (seg == nullptr || seg->dying) return;
  yuebing::MutexLock lock(&seg->mu);
  if (!seg->alloc.Free(offset, length)) {
    YB_LOG_ERROR("bug: bad free of [{}, +{}) in segment {}", offset, length, seg->segment.name);
    return;
  }
  seg->free_bytes.store(seg->alloc.free_bytes());
  used_bytes_.fetch_sub(length);
  if (quotas_ != nullptr) {
    auto owner = seg->range_tenant.find(offset);
    if (owner != seg->range_tenant.end()) {
      const uint32_t tenant = owner->second;
      seg->range_tenant.erase(owner);
      uint64_t& held = seg->tenant_bytes[tenant];
      held -= std::min(held, length);
      if (held == 0) seg->tenant_bytes.erase(tenant);
      quotas_->Refund(tenant, length);
    }
  }
}

void MasterService::Impl::Retire(const ReplicaRef& ref, uint64_t length, int64_t free_at_ns,
                                 int64_t now) {
  if (free_at_ns <= now) {
    FreeRange(ref.segment, ref.offset, length);
    return;
  }
  if (segments_[ref.segment]->dying) return;
  yuebing::MutexLock lock(&retired_mu_);
  retired_.push_back(RetiredRange{free_at_ns, ref.segment, ref.offset, length});
  std::push_heap(retired_.begin(), retired_.end(), HeapLater);
}

void MasterService::Impl::FreeRetired(int64_t now) {
  std::vector<RetiredRange> due;
  {
    yuebing::MutexLock lock(&retired_mu_);
    while (!retired_.empty() && retired_.front().free_at_ns <= now) {
      std::pop_heap(retired_.begin(), retired_.end(), HeapLater);
      due.push_back(retired_.back());
      retired_.pop_back();
    }
  }
  for (const RetiredRange& r : due) FreeRange(r.segment, r.offset, r.length);
}

MasterStats MasterService::Impl::Stats() {
  MasterStats stats;
  yuebing::ReaderMutexLock topo(&topo_mu_);
  stats.objects = objects_.load();
  stats.used_bytes = used_bytes_.load();
  stats.condemned_bytes = condemned_bytes_.load();
  stats.capacity_bytes = capacity_bytes_.load();
  stats.evicted_objects = evicted_objects_.load();
  stats.evictions = eviction_passes_.load();
  stats.clients = clients_.size();
  stats.disk_objects = disk_objects_.load();
  stats.spilled_objects = spilled_objects_.load();
  stats.promoted_objects = promoted_objects_.load();
  for (const std::unique_ptr<SegmentState>& seg : segments_) {
    if (seg == nullptr || seg->dying) continue;
    SegmentUsage usage;
    usage.segment = seg->segment;
    usage.client_id = seg->client_id;
    usage.epoch = seg->epoch;
    {
      yuebing::MutexLock lock(&seg->mu);
      usage.used_bytes = seg->alloc.used_bytes();
    }
    stats.segments.push_back(std::move(usage));
  }
  return stats;
}

}  // namespace yuebing::master
