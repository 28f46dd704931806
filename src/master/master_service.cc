// Object operations of the master (put, get, remove, tick) and the public API forwarding.
// Segments and clients are in segments.cc, eviction and reclaim in eviction.cc.
#include "yuebing/master/master_service.h"

#include <xxhash.h>

#include <algorithm>
#include <limits>
#include <random>
#include <regex>
#include <utility>

#include "absl/strings/str_cat.h"
#include "master/master_impl.h"
#include "yuebing/common/checksum.h"
#include "yuebing/common/error_code.h"
#include "yuebing/common/logging.h"
#include "yuebing/common/status.h"

namespace yuebing::master {
namespace {

constexpr uint32_t kNone = ObjectTable::kNone;

// Durations are held in nanoseconds; anything past ~30 years is treated as 30 years, so
// deadline arithmetic never overflows.
int64_t ToNs(std::chrono::milliseconds ms) {
  constexpr int64_t kMaxMs = int64_t{1'000'000'000'000};
  return std::clamp<int64_t>(ms.count(), 0, kMaxMs) * 1'000'000;
}

uint64_t AlignmentOf(uint32_t requested) {
  uint64_t alignment = 1;
  while (alignment < requested && alignment < (uint64_t{1} << 30)) alignment <<= 1;
  return alignment;
}

MasterOptions Sanitized(MasterOptions options) {
  options.num_shards = std::clamp<uint32_t>(options.num_shards, 1, kMaxShards);
  options.eviction_ratio = std::clamp(options.eviction_ratio, 0.0, 1.0);
  options.eviction_high_watermark_ratio =
      std::clamp(options.eviction_high_watermark_ratio, 0.0, 1.0);
  return options;
}

// `soft_pin_ttl_ns`: the put's soft pin (SoftPinTtlNs; 0: none).
uint8_t PinFlags(const ReplicateConfig& config, int64_t soft_pin_ttl_ns) {
  return (soft_pin_ttl_ns > 0 ? kEntrySoftPin : 0) | (config.with_hard_pin ? kEntryHardPin : 0);
}

// The longest pin kept in nanoseconds (about 100 years): deadlines stay far from overflow.
constexpr int64_t kMaxSoftPinNs = int64_t{100} * 365 * 24 * 3600 * 1'000'000'000;

}  // namespace

MasterService::Impl::Impl(MasterOptions options, Clock& clock)
    : options_(Sanitized(options)),
      clock_(clock),
      alignment_(AlignmentOf(options.allocation_alignment)),
      max_key_bytes_(
          std::clamp<uint32_t>(options.max_key_bytes, 1, limits::kMaxConfigurableKeyBytes)),
      lease_ttl_ns_(ToNs(options.default_kv_lease_ttl)),
      soft_pin_ttl_ns_(ToNs(options.default_kv_soft_pin_ttl)),
      client_ttl_ns_(ToNs(options.client_ttl)),
      discard_timeout_ns_(ToNs(options.put_start_discard_timeout)),
      release_timeout_ns_(ToNs(options.put_start_release_timeout)),
      // Epochs continue from the wall clock so that a restarted master never hands out an
      // epoch a client already saw from its predecessor.
      next_epoch_(static_cast<uint64_t>(std::max<int64_t>(clock.WallMillis(), 0)) * 1000 + 1),
      spill_timeout_ns_(ToNs(options.spill_timeout)),
      // Random: a client's acknowledgement from a predecessor never matches.
      journal_((static_cast<uint64_t>(std::random_device{}()) << 32) | std::random_device{}() | 1,
               kMaxJournalEntriesPerClient),
      quotas_(options.multi_tenant
                  ? std::make_unique<TenantQuotas>(
                        TenantPolicy(options.tenant_quotas.begin(), options.tenant_quotas.end()),
                        options.tenant_policy_path)
                  : nullptr) {
  next_hold_generation_.store(std::random_device{}());
  shards_.reserve(options_.num_shards);
  for (uint32_t i = 0; i < options_.num_shards; ++i) {
    shards_.push_back(std::make_unique<Shard>(i));
  }
}

int64_t MasterService::Impl::NowNs() const {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(clock_.Now().time_since_epoch())
      .count();
}

absl::Status MasterService::Impl::ValidateKey(absl::string_view scoped) const {
  const TenantKey split = SplitScopedKey(scoped);
  if (split.tenant != kDefaultTenant) YB_RETURN_IF_ERROR(CheckTenantId(split.tenant));
  const absl::string_view key = split.key;
  if (key.empty()) return MakeError(ErrorCode::kInvalidParams, "empty key");
  if (key.size() > max_key_bytes_ || scoped.size() > ObjectTable::kMaxKeyBytes) {
    return MakeError(ErrorCode::kInvalidParams,
                     absl::StrCat("key of ", key.size(), " bytes exceeds ", max_key_bytes_));
  }
  return absl::OkStatus();
}

uint32_t MasterService::Impl::TenantOf(absl::string_view key) {
  return quotas_ == nullptr ? 0 : quotas_->Intern(SplitScopedKey(key).tenant);
}

absl::Status MasterService::Impl::ChargeTenant(uint32_t tenant, uint64_t bytes, uint64_t* deficit) {
  if (tenant == 0) return absl::OkStatus();
  return quotas_->TryCharge(tenant, bytes, capacity_bytes_.load(), deficit);
}

Shard& MasterService::Impl::ShardFor(absl::string_view key) const {
  return *shards_[XXH3_64bits(key.data(), key.size()) % shards_.size()];
}

uint64_t MasterService::Impl::AlignedSize(uint64_t size) const {
  if (size > std::numeric_limits<uint64_t>::max() - (alignment_ - 1)) return 0;
  return (size + alignment_ - 1) & ~(alignment_ - 1);
}

absl::StatusOr<uint64_t> MasterService::Impl::TouchClient(const ClientId& client) {
  if (client.empty() || client.size() > kMaxClientIdBytes) {
    return MakeError(ErrorCode::kInvalidParams, "bad client id");
  }
  const int64_t now = NowNs();
  {
    yuebing::ReaderMutexLock topo(&topo_mu_);
    auto it = clients_.find(client);
    if (it != clients_.end()) {
      it->second.last_ping_ns.store(now);
      return it->second.serial;
    }
  }
  yuebing::MutexLock topo(&topo_mu_);
  auto it = clients_.find(client);
  if (it == clients_.end()) {
    if (clients_.size() >= kMaxClients) {
      return MakeError(ErrorCode::kNoAvailableHandle, "too many clients");
    }
    it = clients_.try_emplace(client).first;
    it->second.serial = next_client_serial_++;
    // Registered by a call other than a ping or a mount: it may be a client whose segments were
    // dropped when it expired (its drain worker, puts or disk tier kept calling). Its next ping
    // asks it to mount them again, as a ping of an unknown client does.
    it->second.remount_on_ping.store(true);
  }
  it->second.last_ping_ns.store(now);
  return it->second.serial;
}

uint64_t MasterService::Impl::SerialOf(const ClientId& client) {
  auto it = clients_.find(client);
  return it == clients_.end() ? 0 : it->second.serial;
}

// --- replica plumbing ---

std::vector<ReplicaRef> MasterService::Impl::ReplicasOf(Shard& s, uint32_t index) {
  const ObjectEntry& entry = s.table.at(index);
  std::vector<ReplicaRef> refs;
  refs.reserve(entry.replicas);
  refs.push_back(ReplicaRef{entry.segment, entry.offset});
  if (entry.replicas > 1) {
    auto it = s.extra.find(index);
    if (it != s.extra.end()) refs.insert(refs.end(), it->second.begin(), it->second.end());
  }
  return refs;
}

void MasterService::Impl::SetReplicas(Shard& s, uint32_t index,
                                      const std::vector<ReplicaRef>& refs) {
  ObjectEntry& entry = s.table.at(index);
  if (entry.replicas > 0) {
    // Relinked (a replica went with its segment, was cleared, copied or moved): Link puts it at
    // the head of its list, so it counts as just used. Its old access time there would break the
    // list's order, and eviction's walk, which stops at the first entry newer than its cut-off,
    // would never reach it (a full store refused every put after a store's unmount).
    Reprieve(s, index);  // the condemned map is keyed by the access time about to change
    entry.last_access = access_seq_.fetch_add(1) + 1;
  }
  ForgetReplicas(s, index);
  entry.segment = refs.front().segment;
  entry.offset = refs.front().offset;
  entry.replicas = static_cast<uint8_t>(refs.size());
  s.members.Link(s.table, index);
  if (refs.size() > 1) {
    s.extra[index].assign(refs.begin() + 1, refs.end());
    for (auto it = refs.begin() + 1; it != refs.end(); ++it) s.members.AddExtra(it->segment, index);
  }
}

void MasterService::Impl::ForgetReplicas(Shard& s, uint32_t index) {
  ObjectEntry& entry = s.table.at(index);
  if (entry.replicas == 0) return;
  s.members.Unlink(s.table, index);
  if (entry.replicas > 1) {
    if (auto it = s.extra.find(index); it != s.extra.end()) {
      for (const ReplicaRef& ref : it->second) s.members.RemoveExtra(ref.segment, index);
      s.extra.erase(it);
    }
  }
  entry.replicas = 0;
}

std::vector<Replica> MasterService::Impl::ToReplicas(const std::vector<ReplicaRef>& refs,
                                                     uint64_t size) const {
  std::vector<Replica> replicas;
  replicas.reserve(refs.size());
  for (const ReplicaRef& ref : refs) {
    const SegmentState& seg = *segments_[ref.segment];
    replicas.push_back(
        Replica{seg.segment.name, seg.epoch, seg.segment.base + ref.offset, size, {}});
  }
  return replicas;
}

void MasterService::Impl::CancelPending(Shard& s, uint32_t index, int64_t now, Unfinished mode) {
  auto it = s.pending.find(index);
  s.table.at(index).flags &= static_cast<uint8_t>(~kEntryPendingUpsert);
  if (it == s.pending.end()) return;
  const PendingPut& pending = it->second;
  const int64_t free_at =
      mode == Unfinished::kFreeNow ? now : pending.start_ns + release_timeout_ns_;
  const uint64_t length = AlignedSize(pending.size);
  JournalDrops(pending.replicas);
  for (const ReplicaRef& ref : pending.replicas) Retire(ref, length, free_at, now);
  s.pending.erase(it);
}

void MasterService::Impl::DropObject(Shard& s, uint32_t index, int64_t now, Unfinished mode) {
  Reprieve(s, index);
  ObjectEntry& entry = s.table.at(index);
  const uint64_t length = AlignedSize(entry.size);
  if (entry.flags & kEntryComplete) {
    if (entry.flags & kEntryPendingUpsert) CancelPending(s, index, now, mode);
    ReleaseReplicas(s, index, ReplicasOf(s, index), length, now);  // readers keep the bytes
  } else {
    const int64_t free_at =
        mode == Unfinished::kFreeNow ? now : entry.time_ns + release_timeout_ns_;
    s.in_progress.erase(index);
    const std::vector<ReplicaRef> refs = ReplicasOf(s, index);
    JournalDrops(refs);
    for (const ReplicaRef& ref : refs) Retire(ref, length, free_at, now);
  }
  EndSpill(s, index);
  ForgetReplicas(s, index);
  if (!s.soft_pin_until.empty()) s.soft_pin_until.erase(index);
  s.table.Erase(index);
  objects_.fetch_sub(1);
}

// --- writes ---

absl::StatusOr<uint32_t> MasterService::Impl::PrepareKey(Shard& s, absl::string_view key,
                                                         bool upsert, int64_t now) {
  const uint32_t index = s.table.Find(key);
  if (auto disk = s.disk.find(key); disk != s.disk.end()) {
    if (!upsert) return MakeError(ErrorCode::kObjectAlreadyExists, "key exists (on disk)");
    DropDiskObject(s, disk->first);  // replaced: the new value goes to memory
    // A promotion of the old value under way ends with it (its writer may still be writing).
    if (index != kNone) DropObject(s, index, now, Unfinished::kHoldUntilRelease);
    return kNone;
  }
  if (index == kNone) return kNone;
  ObjectEntry& entry = s.table.at(index);
  if (!(entry.flags & kEntryComplete) && IsPromotion(s, index)) {
    // The disk copy it promotes is gone (its file was lost): it can only fail; the new put wins.
    DropObject(s, index, now, Unfinished::kHoldUntilRelease);
    return kNone;
  }
  if (!(entry.flags & kEntryComplete)) {
    if (now - entry.time_ns < discard_timeout_ns_) {
      return MakeError(ErrorCode::kObjectAlreadyExists, "key is being written");
    }
    YB_LOG_INFO("discarding a stale unfinished put of a key ({} bytes) for a new put", entry.size);
    DropObject(s, index, now, Unfinished::kHoldUntilRelease);
    return kNone;
  }
  if (!upsert) return MakeError(ErrorCode::kObjectAlreadyExists, "key exists");
  Reprieve(s, index);  // being replaced: not a victim
  if (entry.flags & kEntryPendingUpsert) {
    auto it = s.pending.find(index);
    if (it != s.pending.end() && now - it->second.start_ns < discard_timeout_ns_) {
      return MakeError(ErrorCode::kObjectAlreadyExists, "key is being replaced");
    }
    CancelPending(s, index, now, Unfinished::kHoldUntilRelease);
  }
  return index;
}

absl::StatusOr<int64_t> MasterService::Impl::SoftPinTtlNs(const ReplicateConfig& config) const {
  if (!config.soft_pin_ttl_ms) return config.with_soft_pin ? soft_pin_ttl_ns_ : 0;
  if (!config.with_soft_pin) {
    return MakeError(ErrorCode::kInvalidParams, "soft_pin_ttl_ms needs a soft pin");
  }
  const uint64_t max_ms = static_cast<uint64_t>(options_.max_kv_soft_pin_ttl.count());
  if (*config.soft_pin_ttl_ms > max_ms) {
    return MakeError(
        ErrorCode::kInvalidParams,
        absl::StrCat("soft_pin_ttl_ms ", *config.soft_pin_ttl_ms,
                     " is longer than the master's max_kv_soft_pin_ttl (", max_ms, " ms)"));
  }
  const uint64_t ms = std::min<uint64_t>(*config.soft_pin_ttl_ms, kMaxSoftPinNs / 1'000'000);
  return static_cast<int64_t>(ms) * 1'000'000;
}

absl::StatusOr<std::vector<Replica>> MasterService::Impl::RecordPut(
    Shard& s, absl::string_view key, uint32_t existing, uint64_t serial, uint64_t size,
    const ReplicateConfig& config, int64_t soft_pin_ttl_ns, std::vector<ReplicaRef> refs,
    int64_t now, uint64_t checksum) {
  std::vector<Replica> replicas = ToReplicas(refs, size);
  const uint8_t pins = PinFlags(config, soft_pin_ttl_ns);
  // The owners learn of the object while its bytes are written (before the PutEnd).
  JournalRefs(refs, JournalEntry::Op::kAdd, /*committed=*/false, key, size, checksum, pins);
  if (existing != kNone) {
    s.table.at(existing).flags |= kEntryPendingUpsert;
    s.pending[existing] =
        PendingPut{serial, now, size, pins, checksum, std::move(refs), false, {}, soft_pin_ttl_ns};
    return replicas;
  }
  const uint32_t index = s.table.Insert(key);
  if (index == kNone) {
    JournalDrops(refs);
    for (const ReplicaRef& ref : refs) FreeRange(ref.segment, ref.offset, AlignedSize(size));
    return MakeError(ErrorCode::kNoAvailableHandle, "object index shard is full");
  }
  ObjectEntry& entry = s.table.at(index);
  entry.size = size;
  entry.aux = serial;
  entry.time_ns = now;
  entry.last_access = access_seq_.fetch_add(1) + 1;
  entry.flags |= pins;
  SetReplicas(s, index, refs);
  s.in_progress[index] = PutInProgress{checksum, soft_pin_ttl_ns};
  objects_.fetch_add(1);
  return replicas;
}

absl::StatusOr<std::vector<Replica>> MasterService::Impl::StartPut(
    const ClientId& client, const std::string& key, uint64_t size, const ReplicateConfig& config,
    bool upsert, bool evict_after, uint64_t checksum) {
  YB_RETURN_IF_ERROR(ValidateKey(key));
  if (size == 0) return MakeError(ErrorCode::kInvalidParams, "object size is 0");
  if (config.replica_num == 0) return MakeError(ErrorCode::kInvalidParams, "replica_num is 0");
  const uint64_t length = AlignedSize(size);
  if (length == 0) return MakeError(ErrorCode::kInvalidParams, "object size too large");
  YB_ASSIGN_OR_RETURN(const int64_t soft_pin_ttl_ns, SoftPinTtlNs(config));
  YB_ASSIGN_OR_RETURN(const uint64_t serial, TouchClient(client));
  const uint32_t want = std::min(config.replica_num, kMaxReplicas);
  // Multi-tenancy: a tenant without a policy writes nothing (before any other check, as
  // upstream), and the replicas are charged to its quota before they are placed.
  const uint32_t tenant = TenantOf(key);
  YB_RETURN_IF_ERROR(ChargeTenant(tenant, 0, nullptr));
  const uint64_t charge = length > UINT64_MAX / want ? UINT64_MAX : length * want;
  Shard& s = ShardFor(key);
  absl::StatusOr<std::vector<Replica>> result =
      MakeError(ErrorCode::kNoAvailableHandle, "no segment has room for the object");
  yuebing::ReaderMutexLock topo(&topo_mu_);
  // At most kMaxReclaims frees of condemned objects, then one eviction pass for space, and
  // kMaxTenantEvictions of the tenant's own objects for its quota, each followed by another
  // attempt.
  int reclaims = 0;
  bool evicted_for_space = false;
  int tenant_evictions = 0;
  while (true) {
    const int64_t now = NowNs();
    uint64_t deficit = 0;
    {
      yuebing::MutexLock lock(&s.mu);
      uint32_t existing = kNone;
      if (config.promotion) {
        if (upsert) return MakeError(ErrorCode::kInvalidParams, "a promotion is not an upsert");
        YB_RETURN_IF_ERROR(CheckPromotion(s, key, serial, size));
      } else {
        YB_ASSIGN_OR_RETURN(existing, PrepareKey(s, key, upsert, now));
      }
      const absl::Status charged = ChargeTenant(tenant, charge, &deficit);
      if (!charged.ok() && (ToErrorCode(charged) != ErrorCode::kTenantQuotaExceeded ||
                            tenant_evictions >= kMaxTenantEvictions)) {
        if (ToErrorCode(charged) == ErrorCode::kTenantQuotaExceeded) {
          quotas_->CountQuotaReject(tenant);
        }
        return charged;
      }
      if (charged.ok()) {
        std::vector<ReplicaRef> refs = AllocateReplicas(length, want, config, now, tenant);
        if (tenant != 0) quotas_->Refund(tenant, length * (want - refs.size()));
        if (!refs.empty()) {
          result = RecordPut(s, key, existing, serial, size, config, soft_pin_ttl_ns,
                             std::move(refs), now, checksum);
          if (result.ok() && config.promotion) s.in_progress[s.table.Find(key)].promotion = true;
          break;
        }
      }
    }
    if (deficit != 0) {  // over the tenant's quota: make room among its own objects
      ++tenant_evictions;
      EvictTenant(tenant, deficit, now);
      continue;
    }
    if (evicted_for_space || !AnySegmentCouldHold(length, now)) break;
    if (reclaims < kMaxReclaims && ReclaimCondemned(charge, now) != 0) {
      ++reclaims;
      continue;
    }
    evicted_for_space = true;
    EvictForSpace(length, now);
  }
  if (evict_after && result.ok()) EvictAboveWatermark(NowNs());
  return result;
}

void MasterService::Impl::CompletePut(Shard& s, uint32_t index, uint64_t checksum,
                                      PutInProgress put, int64_t now) {
  ObjectEntry& entry = s.table.at(index);
  entry.flags |= kEntryComplete;
  entry.aux = checksum;
  entry.time_ns = 0;  // no lease yet
  entry.last_access = access_seq_.fetch_add(1) + 1;
  s.members.Touch(s.table, index);
  if (entry.flags & kEntrySoftPin) s.soft_pin_until[index] = now + put.soft_pin_ttl_ns;
  s.in_progress.erase(index);
  if (checksum == kNoChecksum || checksum != put.announced) {
    JournalReplicas(s, index, ReplicasOf(s, index), JournalEntry::Op::kAdd);
  }
}

absl::Status MasterService::Impl::PutEnd(const ClientId& client, const std::string& key,
                                         uint64_t checksum) {
  YB_RETURN_IF_ERROR(ValidateKey(key));
  yuebing::ReaderMutexLock topo(&topo_mu_);
  const uint64_t serial = SerialOf(client);
  const int64_t now = NowNs();
  Shard& s = ShardFor(key);
  yuebing::MutexLock lock(&s.mu);
  const uint32_t index = s.table.Find(key);
  if (index == kNone) return MakeError(ErrorCode::kObjectNotFound, "no put of this key");
  ObjectEntry& entry = s.table.at(index);
  if (!(entry.flags & kEntryComplete)) {
    if (serial == 0 || entry.aux != serial) {
      return MakeError(ErrorCode::kIllegalClient, "the key is written by another client");
    }
    if (IsPromotion(s, index)) return EndPromotion(s, index, serial, checksum, now);
    auto started = s.in_progress.find(index);
    CompletePut(s, index, checksum,
                started == s.in_progress.end() ? PutInProgress{} : started->second, now);
    return absl::OkStatus();
  }
  if (entry.flags & kEntryPendingUpsert) {
    auto it = s.pending.find(index);
    if (it == s.pending.end() || serial == 0 || it->second.writer != serial) {
      return MakeError(ErrorCode::kIllegalClient, "the key is replaced by another client");
    }
    if (it->second.copy) {
      return MakeError(ErrorCode::kObjectHasReplicationTask, "a copy of the key is under way");
    }
    PendingPut done = std::move(it->second);
    s.pending.erase(it);
    Reprieve(s, index);  // the new value is the most recently used
    // The old version stays readable to its readers until they release or their leases end.
    ReleaseReplicas(s, index, ReplicasOf(s, index), AlignedSize(entry.size), now);
    EndSpill(s, index);  // a report of the old version will not match
    entry.size = done.size;
    entry.flags = kEntryUsed | done.pins;
    if (!(entry.flags & kEntrySoftPin)) s.soft_pin_until.erase(index);
    SetReplicas(s, index, done.replicas);
    CompletePut(s, index, checksum, PutInProgress{done.announced, done.soft_pin_ttl_ns}, now);
    return absl::OkStatus();
  }
  // A retried PutEnd whose first attempt went through.
  if (entry.aux == checksum) return absl::OkStatus();
  return MakeError(ErrorCode::kObjectNotFound, "no put of this key is in progress");
}

absl::Status MasterService::Impl::PutRevoke(const ClientId& client, const std::string& key) {
  YB_RETURN_IF_ERROR(ValidateKey(key));
  yuebing::ReaderMutexLock topo(&topo_mu_);
  const uint64_t serial = SerialOf(client);
  const int64_t now = NowNs();
  Shard& s = ShardFor(key);
  yuebing::MutexLock lock(&s.mu);
  const uint32_t index = s.table.Find(key);
  if (index == kNone) return MakeError(ErrorCode::kObjectNotFound, "no put of this key");
  ObjectEntry& entry = s.table.at(index);
  if (!(entry.flags & kEntryComplete)) {
    if (serial == 0 || entry.aux != serial) {
      return MakeError(ErrorCode::kIllegalClient, "the key is written by another client");
    }
    DropObject(s, index, now, Unfinished::kFreeNow);
    return absl::OkStatus();
  }
  if (entry.flags & kEntryPendingUpsert) {
    auto it = s.pending.find(index);
    if (it == s.pending.end() || serial == 0 || it->second.writer != serial) {
      return MakeError(ErrorCode::kIllegalClient, "the key is replaced by another client");
    }
    CancelPending(s, index, now, Unfinished::kFreeNow);
    return absl::OkStatus();
  }
  return MakeError(ErrorCode::kObjectNotFound, "no put of this key is in progress");
}

// --- reads ---

absl::StatusOr<ObjectLocation> MasterService::Impl::GetReplicaList(const std::string& key) {
  YB_RETURN_IF_ERROR(ValidateKey(key));
  yuebing::ReaderMutexLock topo(&topo_mu_);
  const int64_t now = NowNs();
  Shard& s = ShardFor(key);
  yuebing::MutexLock lock(&s.mu);
  const uint32_t index = s.table.Find(key);
  // A disk-only object (being promoted, the put of it in `table` is unfinished).
  if (index == kNone || !(s.table.at(index).flags & kEntryComplete)) {
    if (auto disk = s.disk.find(key); disk != s.disk.end()) {
      CountDiskHit(disk->first, disk->second);
      return DiskLocation(disk->second);
    }
  }
  if (index == kNone || !(s.table.at(index).flags & kEntryComplete)) {
    return MakeError(ErrorCode::kObjectNotFound, "no such object");
  }
  ObjectEntry& entry = s.table.at(index);
  Reprieve(s, index);  // read: no longer among the least recently used
  const uint64_t lease_id = GrantLease(s, index, now);
  entry.last_access = access_seq_.fetch_add(1) + 1;
  s.members.Touch(s.table, index);
  ObjectLocation location;
  location.size = entry.size;
  location.checksum = entry.aux;
  location.replicas = ToReplicas(ReplicasOf(s, index), entry.size);
  location.lease_ttl = options_.default_kv_lease_ttl;
  location.lease_id = lease_id;
  return location;
}

bool MasterService::Impl::Exist(const std::string& key) {
  if (!ValidateKey(key).ok()) return false;
  Shard& s = ShardFor(key);
  yuebing::ReaderMutexLock lock(&s.mu);
  const uint32_t index = s.table.Find(key);
  if (index == kNone || !(s.table.at(index).flags & kEntryComplete)) return s.disk.contains(key);
  return true;
}

absl::StatusOr<uint64_t> MasterService::Impl::GetSize(const std::string& key) {
  YB_RETURN_IF_ERROR(ValidateKey(key));
  Shard& s = ShardFor(key);
  yuebing::ReaderMutexLock lock(&s.mu);
  const uint32_t index = s.table.Find(key);
  if (index == kNone || !(s.table.at(index).flags & kEntryComplete)) {
    if (auto disk = s.disk.find(key); disk != s.disk.end()) return disk->second.size;
  }
  if (index == kNone || !(s.table.at(index).flags & kEntryComplete)) {
    return MakeError(ErrorCode::kObjectNotFound, "no such object");
  }
  return s.table.at(index).size;
}

// --- removal ---

absl::Status MasterService::Impl::Remove(const std::string& key, bool force) {
  YB_RETURN_IF_ERROR(ValidateKey(key));
  yuebing::ReaderMutexLock topo(&topo_mu_);
  const int64_t now = NowNs();
  Shard& s = ShardFor(key);
  yuebing::MutexLock lock(&s.mu);
  const uint32_t index = s.table.Find(key);
  if (index == kNone || !(s.table.at(index).flags & kEntryComplete)) {
    if (auto disk = s.disk.find(key); disk != s.disk.end()) {
      DropDiskObject(s, disk->first);  // a promotion under way then fails at its PutEnd
      return absl::OkStatus();
    }
  }
  if (index == kNone || !(s.table.at(index).flags & kEntryComplete)) {
    return MakeError(ErrorCode::kObjectNotFound, "no such object");
  }
  if (!force && s.table.at(index).time_ns > now) {
    return MakeError(ErrorCode::kObjectHasLease, "object is leased to a reader");
  }
  DropObject(s, index, now, Unfinished::kHoldUntilRelease);
  return absl::OkStatus();
}

template <typename Match>
uint64_t MasterService::Impl::RemoveMatching(bool force, Match&& match) {
  yuebing::ReaderMutexLock topo(&topo_mu_);
  const int64_t now = NowNs();
  uint64_t removed = 0;
  for (const std::unique_ptr<Shard>& shard : shards_) {
    Shard& s = *shard;
    yuebing::MutexLock lock(&s.mu);
    for (uint32_t i = 0; i < s.table.index_limit(); ++i) {
      const ObjectEntry& entry = s.table.at(i);
      if (!(entry.flags & kEntryComplete)) continue;  // unused or unfinished
      if (!force && entry.time_ns > now) continue;
      if (!match(s.table.key(i))) continue;
      DropObject(s, i, now, Unfinished::kHoldUntilRelease);
      ++removed;
    }
    std::vector<std::string> disk_keys;
    for (const auto& [key, entry] : s.disk) {
      if (match(key)) disk_keys.push_back(key);
    }
    for (const std::string& key : disk_keys) DropDiskObject(s, key);
    removed += disk_keys.size();
  }
  return removed;
}

absl::StatusOr<uint64_t> MasterService::Impl::RemoveByRegex(const std::string& pattern, bool force,
                                                            absl::string_view tenant) {
  if (pattern.size() > kMaxRegexBytes) {
    return MakeError(ErrorCode::kInvalidParams, "regex pattern too long");
  }
  // libstdc++'s default matcher recurses once per input character and backtracks
  // exponentially; its "polynomial" mode matches without either (back-references are then
  // refused as a bad pattern).
  std::regex::flag_type flags = std::regex::ECMAScript;
#ifdef __GLIBCXX__
  flags |= std::regex_constants::__polynomial;
#endif
  std::regex regex;
  try {
    regex = std::regex(pattern, flags);
  } catch (const std::regex_error& e) {
    return MakeError(ErrorCode::kInvalidParams, absl::StrCat("bad regex: ", e.what()));
  }
  bool match_failed = false;
  const uint64_t removed = RemoveMatching(force, [&](absl::string_view scoped) {
    const TenantKey split = SplitScopedKey(scoped);
    if (split.tenant != tenant) return false;
    const absl::string_view key = split.key;
    try {
      return std::regex_match(key.begin(), key.end(), regex);
    } catch (const std::regex_error&) {
      match_failed = true;  // the matcher gave up (e.g. complexity): keep the object
      return false;
    }
  });
  if (match_failed) YB_LOG_WARN("RemoveByRegex: matching gave up on some keys; they were kept");
  return removed;
}

uint64_t MasterService::Impl::RemoveAll(bool force, absl::string_view tenant) {
  if (tenant.empty()) return RemoveMatching(force, [](absl::string_view) { return true; });
  return RemoveMatching(force, [&](absl::string_view key) { return InTenant(key, tenant); });
}

void MasterService::Impl::Tick() {
  const int64_t now = NowNs();
  ExpireClients(now);
  yuebing::ReaderMutexLock topo(&topo_mu_);
  ReleaseZombiePuts(now);
  FreeRetired(now);
  ExpireHolds(now);
  ExpireSpills(now);
  AdvanceDrainJobs(now);
  EvictAboveWatermark(now);
}

void MasterService::Impl::MaybeEvictAboveWatermark() {
  yuebing::ReaderMutexLock topo(&topo_mu_);
  EvictAboveWatermark(NowNs());
}

// --- public API ---

namespace {

template <typename T>
std::vector<T> AllInvalid(size_t n, absl::string_view why) {
  return std::vector<T>(n, T(MakeError(ErrorCode::kInvalidParams, why)));
}

}  // namespace

MasterService::MasterService(MasterOptions options, Clock& clock)
    : impl_(std::make_unique<Impl>(options, clock)) {}

MasterService::~MasterService() = default;

absl::StatusOr<uint64_t> MasterService::MountSegment(const ClientId& client,
                                                     const Segment& segment) {
  YB_ASSIGN_OR_RETURN(const MountResult mount,
                      impl_->MountSegment(client, segment, /*restoring=*/false,
                                          /*has_disk_tier=*/false));
  return mount.epoch;
}

absl::StatusOr<MountResult> MasterService::MountSegmentForRestore(const ClientId& client,
                                                                  const Segment& segment,
                                                                  bool has_disk_tier) {
  return impl_->MountSegment(client, segment, /*restoring=*/true, has_disk_tier);
}

absl::StatusOr<std::vector<absl::Status>> MasterService::RestoreObjects(
    const ClientId& client, const std::string& segment_name,
    const std::vector<RestoredObject>& objects, bool last) {
  return impl_->RestoreObjects(client, segment_name, objects, last);
}

absl::StatusOr<JournalBatch> MasterService::PullJournal(const ClientId& client, uint64_t journal_id,
                                                        uint64_t ack, size_t max_entries) {
  return impl_->PullJournal(client, journal_id, ack, max_entries);
}

void MasterService::SetJournalListener(std::function<void()> listener) {
  impl_->journal().SetListener(std::move(listener));
}

std::vector<ManifestMark> MasterService::ManifestMarks(const std::vector<std::string>& keys) {
  return impl_->ManifestMarks(keys);
}

bool MasterService::ManifestsHave(const std::vector<ManifestMark>& marks) {
  for (const ManifestMark& mark : marks) {
    if (!impl_->journal().Acknowledged(mark.owner, mark.seq)) return false;
  }
  return true;
}

absl::Status MasterService::UnmountSegment(const ClientId& client, const std::string& name) {
  return impl_->UnmountSegment(client, name);
}

ClientState MasterService::Ping(const ClientId& client) { return impl_->Ping(client); }

absl::StatusOr<std::vector<Replica>> MasterService::PutStart(const ClientId& client,
                                                             const std::string& key, uint64_t size,
                                                             const ReplicateConfig& config,
                                                             uint64_t checksum) {
  return impl_->StartPut(client, key, size, config, /*upsert=*/false, /*evict_after=*/true,
                         checksum);
}

absl::Status MasterService::PutEnd(const ClientId& client, const std::string& key,
                                   uint64_t checksum) {
  return impl_->PutEnd(client, key, checksum);
}

absl::Status MasterService::PutRevoke(const ClientId& client, const std::string& key) {
  return impl_->PutRevoke(client, key);
}

absl::StatusOr<std::vector<Replica>> MasterService::UpsertStart(const ClientId& client,
                                                                const std::string& key,
                                                                uint64_t size,
                                                                const ReplicateConfig& config,
                                                                uint64_t checksum) {
  return impl_->StartPut(client, key, size, config, /*upsert=*/true, /*evict_after=*/true,
                         checksum);
}

absl::StatusOr<ObjectLocation> MasterService::GetReplicaList(const std::string& key) {
  return impl_->GetReplicaList(key);
}

bool MasterService::Exist(const std::string& key) { return impl_->Exist(key); }

absl::StatusOr<uint64_t> MasterService::GetSize(const std::string& key) {
  return impl_->GetSize(key);
}

absl::Status MasterService::Remove(const std::string& key, bool force) {
  return impl_->Remove(key, force);
}

absl::StatusOr<uint64_t> MasterService::RemoveByRegex(const std::string& pattern, bool force,
                                                      absl::string_view tenant) {
  return impl_->RemoveByRegex(pattern, force, tenant);
}

uint64_t MasterService::RemoveAll(bool force, absl::string_view tenant) {
  return impl_->RemoveAll(force, tenant);
}

std::vector<absl::StatusOr<std::vector<Replica>>> MasterService::BatchPutStart(
    const ClientId& client, const std::vector<std::string>& keys,
    const std::vector<uint64_t>& sizes, const ReplicateConfig& config,
    const std::vector<uint64_t>& checksums) {
  using Result = absl::StatusOr<std::vector<Replica>>;
  if (keys.size() > limits::kMaxBatchKeys)
    return AllInvalid<Result>(keys.size(), "batch too large");
  if (sizes.size() != keys.size()) return AllInvalid<Result>(keys.size(), "keys/sizes mismatch");
  if (!checksums.empty() && checksums.size() != keys.size()) {
    return AllInvalid<Result>(keys.size(), "keys/checksums mismatch");
  }
  std::vector<Result> results;
  results.reserve(keys.size());
  for (size_t i = 0; i < keys.size(); ++i) {
    results.push_back(impl_->StartPut(client, keys[i], sizes[i], config, /*upsert=*/false,
                                      /*evict_after=*/false, checksums.empty() ? 0 : checksums[i]));
  }
  impl_->MaybeEvictAboveWatermark();
  return results;
}

std::vector<absl::Status> MasterService::BatchPutEnd(const ClientId& client,
                                                     const std::vector<std::string>& keys,
                                                     const std::vector<uint64_t>& checksums) {
  if (keys.size() > limits::kMaxBatchKeys)
    return AllInvalid<absl::Status>(keys.size(), "batch too large");
  if (checksums.size() != keys.size()) {
    return AllInvalid<absl::Status>(keys.size(), "keys/checksums mismatch");
  }
  std::vector<absl::Status> results;
  results.reserve(keys.size());
  for (size_t i = 0; i < keys.size(); ++i) {
    results.push_back(impl_->PutEnd(client, keys[i], checksums[i]));
  }
  return results;
}

std::vector<absl::Status> MasterService::BatchPutRevoke(const ClientId& client,
                                                        const std::vector<std::string>& keys) {
  if (keys.size() > limits::kMaxBatchKeys)
    return AllInvalid<absl::Status>(keys.size(), "batch too large");
  std::vector<absl::Status> results;
  results.reserve(keys.size());
  for (const std::string& key : keys) results.push_back(impl_->PutRevoke(client, key));
  return results;
}

std::vector<absl::StatusOr<ObjectLocation>> MasterService::BatchGetReplicaList(
    const std::vector<std::string>& keys) {
  using Result = absl::StatusOr<ObjectLocation>;
  if (keys.size() > limits::kMaxBatchKeys)
    return AllInvalid<Result>(keys.size(), "batch too large");
  std::vector<Result> results;
  results.reserve(keys.size());
  for (const std::string& key : keys) results.push_back(impl_->GetReplicaList(key));
  return results;
}

std::vector<bool> MasterService::BatchExist(const std::vector<std::string>& keys) {
  if (keys.size() > limits::kMaxBatchKeys) return std::vector<bool>(keys.size(), false);
  std::vector<bool> results;
  results.reserve(keys.size());
  for (const std::string& key : keys) results.push_back(impl_->Exist(key));
  return results;
}

std::vector<absl::Status> MasterService::BatchRemove(const std::vector<std::string>& keys,
                                                     bool force) {
  if (keys.size() > limits::kMaxBatchKeys)
    return AllInvalid<absl::Status>(keys.size(), "batch too large");
  std::vector<absl::Status> results;
  results.reserve(keys.size());
  for (const std::string& key : keys) results.push_back(impl_->Remove(key, force));
  return results;
}

absl::StatusOr<uint64_t> MasterService::ReleaseLeases(const std::vector<uint64_t>& lease_ids) {
  if (lease_ids.size() > limits::kMaxBatchKeys) {
    return MakeError(ErrorCode::kInvalidParams, "too many lease ids in one call");
  }
  return impl_->ReleaseLeases(lease_ids);
}

absl::StatusOr<DiskSyncReply> MasterService::SyncDiskTier(const ClientId& client,
                                                          const DiskSyncRequest& request) {
  return impl_->SyncDiskTier(client, request);
}

void MasterService::Tick() { impl_->Tick(); }

MasterStats MasterService::Stats() const { return impl_->Stats(); }

}  // namespace yuebing::master
