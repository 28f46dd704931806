// The master's side of store disk tiers: spill tasks instead of plain eviction, disk-only
// objects, and the SyncDiskTier exchange with stores (see docs/store.md "Disk tier").
//
// Life of a spill: eviction picks a complete object with a replica on a store that has a disk
// tier -> TrySpill queues a task for that store and marks the entry kEntrySpilling (readable, not
// evictable again) -> the store copies the bytes into its file store and reports them spilled ->
// the entry leaves the object table (its memory retired until any read lease ends) and becomes
// a DiskEntry. If no report comes within spill_timeout, ExpireSpills evicts the object plainly;
// a late report then gets a drop back.
//
// Life of a promotion (promotion on hit): reads of a disk-only object are counted; at
// promotion_admission_threshold its store gets it in SyncDiskTier's `promote` -> the store reads
// the file and puts the value with ReplicateConfig::promotion: an unfinished put in the object
// table while the DiskEntry stays and serves reads -> the PutEnd replaces the DiskEntry with the
// complete object (and the store deletes its file), unless the disk copy was removed or replaced
// meanwhile: then the put is dropped and nothing comes back.
#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "master/master_impl.h"
#include "yuebing/common/checksum.h"
#include "yuebing/common/error_code.h"
#include "yuebing/common/host_port.h"
#include "yuebing/common/limits.h"
#include "yuebing/common/logging.h"
#include "yuebing/common/status.h"

namespace yuebing::master {
namespace {

constexpr size_t kMaxEndpointBytes = 1024;
constexpr uint32_t kMaxTasksPerSync = 4096;
constexpr size_t kMaxQueuedDrops = 65536;

}  // namespace

void MasterService::Impl::QueueDrop(uint64_t serial, std::string key) {
  yuebing::MutexLock lock(&spill_mu_);
  SpillQueue& queue = spill_queues_[serial];
  // A store that stops syncing cannot grow this without bound; a file whose drop is lost is
  // only a stale file: reads verify against the master's record, and it is not announced
  // again unless the store restarts (see docs/store.md, limitations).
  if (queue.drops.size() < kMaxQueuedDrops) queue.drops.push_back(std::move(key));
}

void MasterService::Impl::DropDiskObject(Shard& s, const std::string& key) {
  auto it = s.disk.find(key);
  if (it == s.disk.end()) return;
  const uint64_t owner = it->second.owner;
  std::string k = it->first;
  s.disk.erase(it);
  disk_objects_.fetch_sub(1);
  QueueDrop(owner, std::move(k));
}

ObjectLocation MasterService::Impl::DiskLocation(const DiskEntry& entry) const {
  ObjectLocation location;
  location.size = entry.size;
  location.checksum = entry.checksum;
  Replica replica;
  replica.size = entry.size;
  replica.disk_endpoint = endpoints_[entry.endpoint].endpoint;
  location.replicas.push_back(std::move(replica));
  location.lease_ttl = options_.default_kv_lease_ttl;
  return location;
}

bool MasterService::Impl::TrySpill(Shard& s, uint32_t index, int64_t now) {
  ObjectEntry& entry = s.table.at(index);
  for (const ReplicaRef& ref : ReplicasOf(s, index)) {
    const SegmentState& seg = *segments_[ref.segment];
    if (seg.dying || seg.owner == nullptr) continue;
    // A tier declared at mount but not announced yet (a restarted master) takes tasks too: its
    // first sync hands them out.
    const bool announced = seg.owner->disk_endpoint != 0;
    if (!announced && !seg.owner->has_disk_tier) continue;
    if (!OwnerAlive(seg, now)) continue;
    {
      yuebing::MutexLock lock(&spill_mu_);
      SpillQueue& queue = spill_queues_[seg.owner->serial];
      if (queue.tasks.size() >= options_.max_queued_spills) continue;
      queue.tasks.push_back(SpillTask{std::string(s.table.key(index)),
                                      seg.segment.base + ref.offset, entry.size, entry.aux});
    }
    entry.flags |= kEntrySpilling;
    const uint64_t bytes = MemoryOf(entry);
    spilling_bytes_.fetch_add(bytes);
    // The spill_timeout clock starts when the store takes the task (SyncDiskTier); a queued
    // task waits for a store that still syncs (a dead one expires with its queue and objects).
    // A tier never announced gets spill_timeout from now: if it never syncs, ExpireSpills
    // evicts plainly.
    s.spilling[index] = Shard::Spill{announced ? INT64_MAX : now + spill_timeout_ns_, bytes};
    return true;
  }
  return false;
}

void MasterService::Impl::EndSpill(Shard& s, uint32_t index) {
  ObjectEntry& entry = s.table.at(index);
  if (!(entry.flags & kEntrySpilling)) return;
  entry.flags &= static_cast<uint8_t>(~kEntrySpilling);
  auto it = s.spilling.find(index);
  if (it == s.spilling.end()) return;
  spilling_bytes_.fetch_sub(it->second.bytes);
  s.spilling.erase(it);
}

void MasterService::Impl::ExpireSpills(int64_t now) {
  uint64_t expired = 0;
  for (const std::unique_ptr<Shard>& shard : shards_) {
    Shard& s = *shard;
    yuebing::MutexLock lock(&s.mu);
    if (s.spilling.empty()) continue;
    std::vector<uint32_t> due;
    for (const auto& [index, spill] : s.spilling) {
      if (spill.deadline_ns <= now) due.push_back(index);
    }
    for (uint32_t index : due) {
      DropObject(s, index, now, Unfinished::kFreeNow);
      ++expired;
    }
  }
  if (expired > 0) {
    YB_LOG_WARN("{} spills were not reported within spill_timeout: evicted plainly", expired);
  }
}

void MasterService::Impl::CountDiskHit(const std::string& key, DiskEntry& entry) {
  if (!options_.promotion_on_hit || entry.promotion_queued) return;
  if (++entry.hits < std::max<uint32_t>(options_.promotion_admission_threshold, 1)) return;
  if (queued_promotions_.load() >= options_.promotion_queue_limit) return;
  {
    yuebing::MutexLock lock(&spill_mu_);
    spill_queues_[entry.owner].promotions.push_back(DiskObject{key, entry.size, entry.checksum});
  }
  queued_promotions_.fetch_add(1);
  entry.promotion_queued = true;
  entry.hits = 0;
}

bool MasterService::Impl::IsPromotion(const Shard& s, uint32_t index) const {
  auto it = s.in_progress.find(index);
  return it != s.in_progress.end() && it->second.promotion;
}

absl::Status MasterService::Impl::CheckPromotion(const Shard& s, absl::string_view key,
                                                 uint64_t serial, uint64_t size) const {
  auto disk = s.disk.find(key);
  if (disk == s.disk.end() || disk->second.owner != serial || disk->second.size != size) {
    return MakeError(ErrorCode::kObjectNotFound, "no such disk-only object of this store");
  }
  if (s.table.Find(key) != ObjectTable::kNone) {
    return MakeError(ErrorCode::kObjectAlreadyExists, "the key is being promoted");
  }
  return absl::OkStatus();
}

absl::Status MasterService::Impl::EndPromotion(Shard& s, uint32_t index, uint64_t serial,
                                               uint64_t checksum, int64_t now) {
  const std::string key(s.table.key(index));
  auto disk = s.disk.find(key);
  if (disk == s.disk.end() || disk->second.owner != serial ||
      disk->second.size != s.table.at(index).size ||
      (checksum != kNoChecksum && disk->second.checksum != kNoChecksum &&
       checksum != disk->second.checksum)) {
    DropObject(s, index, now, Unfinished::kFreeNow);  // its writer is done writing
    return MakeError(ErrorCode::kObjectNotFound,
                     "the disk copy was removed or replaced while it was promoted");
  }
  s.disk.erase(disk);
  disk_objects_.fetch_sub(1);
  auto started = s.in_progress.find(index);
  CompletePut(s, index, checksum, started->second, now);
  promoted_objects_.fetch_add(1);
  return absl::OkStatus();
}

void MasterService::Impl::DropDiskTiers(const absl::flat_hash_set<uint64_t>& serials) {
  if (serials.empty()) return;
  uint64_t dropped = 0;
  for (const std::unique_ptr<Shard>& shard : shards_) {
    Shard& s = *shard;
    yuebing::MutexLock lock(&s.mu);
    for (auto it = s.disk.begin(); it != s.disk.end();) {
      if (serials.contains(it->second.owner)) {
        s.disk.erase(it++);
        ++dropped;
      } else {
        ++it;
      }
    }
  }
  disk_objects_.fetch_sub(dropped);
  yuebing::MutexLock lock(&spill_mu_);
  for (uint64_t serial : serials) {
    auto it = spill_queues_.find(serial);
    if (it == spill_queues_.end()) continue;
    queued_promotions_.fetch_sub(it->second.promotions.size());
    spill_queues_.erase(it);
  }
}

absl::StatusOr<DiskSyncReply> MasterService::Impl::SyncDiskTier(const ClientId& client,
                                                                const DiskSyncRequest& request) {
  // The endpoint is the store's transfer engine segment name: readers call ReadObject on it.
  if (request.endpoint.empty() || request.endpoint.size() > limits::kMaxSegmentNameBytes ||
      !ParseHostPort(request.endpoint).ok()) {
    return MakeError(ErrorCode::kInvalidParams,
                     "bad disk endpoint (expected the store's segment name, host:port)");
  }
  if (request.tier_id.empty() || request.tier_id.size() > kMaxEndpointBytes) {
    return MakeError(ErrorCode::kInvalidParams, "bad disk tier id");
  }
  if (request.spilled.size() + request.announced.size() + request.removed.size() >
      limits::kMaxDiskReportEntries) {
    return MakeError(ErrorCode::kInvalidParams, "too many entries in one disk report");
  }
  YB_ASSIGN_OR_RETURN(const uint64_t serial, TouchClient(client));
  DiskSyncReply reply;
  bool known = false;
  {
    yuebing::MutexLock topo(&topo_mu_);
    auto it = clients_.find(client);
    if (it == clients_.end()) return MakeError(ErrorCode::kClientNotFound, "client expired");
    ClientInfo& info = it->second;
    auto [id, inserted] =
        endpoint_ids_.try_emplace(absl::StrCat(request.tier_id, "@", request.endpoint),
                                  static_cast<uint32_t>(endpoints_.size()));
    if (inserted) endpoints_.push_back(DiskTierInfo{request.endpoint, request.tier_id});
    known = info.disk_endpoint == id->second + 1;
    info.disk_endpoint = id->second + 1;
  }
  if (!known && !request.full) {
    // Reports made for another incarnation of this master (or of this client) would be
    // misread: everything is announced again instead.
    reply.need_full_sync = true;
    return reply;
  }
  const int64_t now = NowNs();
  yuebing::ReaderMutexLock topo(&topo_mu_);
  const auto it = clients_.find(client);
  if (it == clients_.end() || it->second.serial != serial) {
    return MakeError(ErrorCode::kClientNotFound, "client expired");
  }
  const uint32_t endpoint = it->second.disk_endpoint - 1;
  std::vector<std::string> drops;
  for (const DiskObject& object : request.spilled) {
    if (!ValidateKey(object.key).ok()) continue;
    Shard& s = ShardFor(object.key);
    yuebing::MutexLock lock(&s.mu);
    const uint32_t index = s.table.Find(object.key);
    if (index == ObjectTable::kNone) {
      drops.push_back(object.key);  // removed or timed out meanwhile
      continue;
    }
    const ObjectEntry& entry = s.table.at(index);
    if (!(entry.flags & kEntrySpilling) || (entry.flags & kEntryPendingUpsert) ||
        entry.size != object.size || entry.aux != object.checksum) {
      drops.push_back(object.key);  // replaced, or not what was asked for
      continue;
    }
    DropObject(s, index, now, Unfinished::kFreeNow);  // memory waits for read leases
    s.disk[object.key] = DiskEntry{serial, endpoint, object.size, object.checksum};
    disk_objects_.fetch_add(1);
    spilled_objects_.fetch_add(1);
  }
  for (const DiskObject& object : request.announced) {
    if (!ValidateKey(object.key).ok() || object.size == 0) continue;
    Shard& s = ShardFor(object.key);
    yuebing::MutexLock lock(&s.mu);
    const uint32_t index = s.table.Find(object.key);
    // The key was put again meanwhile: memory wins. A promotion of it by this store's previous
    // incarnation, though, will not end: the file stays the object.
    if (index != ObjectTable::kNone && !IsPromotion(s, index)) {
      drops.push_back(object.key);
      continue;
    }
    auto [disk, inserted] = s.disk.try_emplace(object.key);
    if (!inserted && disk->second.owner != serial) {
      // Another store holds the key. A restarted store (same tier id: same directory) takes
      // its files back; otherwise the first holder stays and this copy is redundant.
      if (endpoints_[disk->second.endpoint].tier_id != endpoints_[endpoint].tier_id) {
        drops.push_back(object.key);
        continue;
      }
    }
    if (inserted) disk_objects_.fetch_add(1);
    disk->second = DiskEntry{serial, endpoint, object.size, object.checksum};
  }
  // Removals last: a file spilled and then removed within one report ends removed.
  for (const std::string& key : request.removed) {
    if (!ValidateKey(key).ok()) continue;
    Shard& s = ShardFor(key);
    yuebing::MutexLock lock(&s.mu);
    auto disk = s.disk.find(key);
    if (disk != s.disk.end() && disk->second.owner == serial) {
      s.disk.erase(disk);
      disk_objects_.fetch_sub(1);
    }
  }
  {
    yuebing::MutexLock lock(&spill_mu_);
    SpillQueue& queue = spill_queues_[serial];
    const size_t take =
        std::min<size_t>(std::min(request.max_tasks, kMaxTasksPerSync), queue.tasks.size());
    reply.spill.assign(std::make_move_iterator(queue.tasks.begin()),
                       std::make_move_iterator(queue.tasks.begin() + take));
    queue.tasks.erase(queue.tasks.begin(), queue.tasks.begin() + take);
    reply.drop = std::move(queue.drops);
    queue.drops.clear();
    const size_t promote = std::min<size_t>(std::max<uint32_t>(options_.promotion_max_per_sync, 1),
                                            queue.promotions.size());
    reply.promote.assign(std::make_move_iterator(queue.promotions.begin()),
                         std::make_move_iterator(queue.promotions.begin() + promote));
    queue.promotions.erase(queue.promotions.begin(), queue.promotions.begin() + promote);
    queued_promotions_.fetch_sub(promote);
  }
  for (const DiskObject& object : reply.promote) {
    // Handed out: a promotion that fails is queued again after as many reads.
    Shard& s = ShardFor(object.key);
    yuebing::MutexLock lock(&s.mu);
    if (auto disk = s.disk.find(object.key); disk != s.disk.end()) {
      disk->second.promotion_queued = false;
    }
  }
  for (const SpillTask& task : reply.spill) {
    Shard& s = ShardFor(task.key);
    yuebing::MutexLock lock(&s.mu);
    const uint32_t index = s.table.Find(task.key);
    if (index == ObjectTable::kNone || !(s.table.at(index).flags & kEntrySpilling)) continue;
    s.spilling[index].deadline_ns = now + spill_timeout_ns_;
  }
  reply.drop.insert(reply.drop.end(), std::make_move_iterator(drops.begin()),
                    std::make_move_iterator(drops.end()));
  return reply;
}

}  // namespace yuebing::master
