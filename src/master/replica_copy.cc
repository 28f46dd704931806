// MasterService::ReplicaCopyStart / ReplicaCopyEnd: new replicas of a complete object on chosen
// segments (Mooncake's copy and move tasks). A copy in progress is a PendingPut with `copy` set,
// so everything that cancels a replacing put (removal, eviction, the unmount of a target, the
// copier's expiry, put_start_release_timeout) cancels a copy the same way.
#include <algorithm>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "master/master_impl.h"
#include "yuebing/common/error_code.h"
#include "yuebing/common/status.h"
#include "yuebing/master/master_service.h"

namespace yuebing::master {

absl::StatusOr<CopyPlan> MasterService::Impl::ReplicaCopyStart(
    const ClientId& client, const std::string& key, const std::string& source,
    const std::vector<std::string>& targets, bool move) {
  YB_RETURN_IF_ERROR(ValidateKey(key));
  if (targets.empty()) return MakeError(ErrorCode::kInvalidParams, "no target segment");
  if (move && (targets.size() != 1 || source.empty())) {
    return MakeError(ErrorCode::kInvalidParams, "a move takes one source and one target");
  }
  if (move && source == targets.front()) {
    return MakeError(ErrorCode::kInvalidParams, "a move needs a target other than its source");
  }
  YB_ASSIGN_OR_RETURN(const uint64_t serial, TouchClient(client));
  yuebing::ReaderMutexLock topo(&topo_mu_);
  const int64_t now = NowNs();
  Shard& s = ShardFor(key);
  yuebing::MutexLock lock(&s.mu);
  const uint32_t index = s.table.Find(key);
  if (index == ObjectTable::kNone || !(s.table.at(index).flags & kEntryComplete)) {
    return MakeError(ErrorCode::kObjectNotFound, "no such object in memory");
  }
  ObjectEntry& entry = s.table.at(index);
  if (entry.flags & (kEntryPendingUpsert | kEntrySpilling)) {
    return MakeError(ErrorCode::kObjectHasReplicationTask,
                     "the object is being replaced, copied, moved or spilled");
  }
  // Target slots, in order, without repeats.
  std::vector<uint32_t> target_slots;
  for (const std::string& name : targets) {
    auto it = segment_by_name_.find(name);
    if (it == segment_by_name_.end()) {
      return MakeError(ErrorCode::kInvalidParams, absl::StrCat("unknown segment '", name, "'"));
    }
    const SegmentState& seg = *segments_[it->second];
    if (!OpenForNewObjects(seg, now)) {
      return MakeError(ErrorCode::kUnavailableInCurrentStatus,
                       absl::StrCat("segment '", name, "' takes no new replicas now"));
    }
    if (std::find(target_slots.begin(), target_slots.end(), it->second) == target_slots.end()) {
      target_slots.push_back(it->second);
    }
  }
  const std::vector<ReplicaRef> current = ReplicasOf(s, index);
  auto holds = [&](uint32_t slot) {
    return std::any_of(current.begin(), current.end(),
                       [&](const ReplicaRef& ref) { return ref.segment == slot; });
  };
  std::optional<ReplicaRef> source_ref;
  if (!source.empty()) {
    auto it = segment_by_name_.find(source);
    if (it != segment_by_name_.end()) {
      for (const ReplicaRef& ref : current) {
        if (ref.segment == it->second) source_ref = ref;
      }
    }
    if (!source_ref.has_value()) {
      return MakeError(ErrorCode::kInvalidParams,
                       absl::StrCat("segment '", source, "' holds no replica of the object"));
    }
  }
  const uint64_t length = AlignedSize(entry.size);
  const auto wanted = std::count_if(target_slots.begin(), target_slots.end(),
                                    [&](uint32_t slot) { return !holds(slot); });
  if (current.size() + static_cast<size_t>(wanted) > kMaxReplicas) {
    return MakeError(ErrorCode::kInvalidParams,
                     absl::StrCat("an object has at most ", kMaxReplicas, " replicas"));
  }
  // The new replicas are charged to the object's tenant. A copy is admitted against its quota;
  // a move is not (it adds nothing once its source goes, and a drain must not fail on quotas),
  // its target charged until then.
  const uint32_t tenant = TenantOf(key);
  const uint64_t charge = length * static_cast<uint64_t>(wanted);
  if (move && tenant != 0) {
    quotas_->Charge(tenant, charge);
  } else {
    absl::Status charged = ChargeTenant(tenant, charge, nullptr);
    if (ToErrorCode(charged) == ErrorCode::kTenantQuotaExceeded) quotas_->CountQuotaReject(tenant);
    YB_RETURN_IF_ERROR(charged);
  }
  std::vector<ReplicaRef> fresh;
  for (uint32_t slot : target_slots) {
    if (holds(slot)) continue;
    std::optional<ReplicaRef> ref = AllocateOn(slot, length, now, tenant);
    if (!ref.has_value()) {
      if (tenant != 0)
        quotas_->Refund(tenant, length * (static_cast<uint64_t>(wanted) - fresh.size()));
      for (const ReplicaRef& taken : fresh) FreeRange(taken.segment, taken.offset, length);
      return MakeError(ErrorCode::kNoAvailableHandle,
                       absl::StrCat("segment '", segments_[slot]->segment.name, "' has no room"));
    }
    fresh.push_back(*ref);
  }
  CopyPlan plan;
  plan.size = entry.size;
  plan.checksum = entry.aux;
  if (fresh.empty()) {
    if (move) {
      // The target holds a replica already: the move only drops the source's, its space held
      // until the leases of its readers end.
      std::vector<ReplicaRef> kept = current;
      kept.erase(std::find(kept.begin(), kept.end(), *source_ref));
      JournalDrops({*source_ref});
      Retire(*source_ref, length, std::max(now, entry.time_ns), now);
      SetReplicas(s, index, kept);
    }
    return plan;
  }
  plan.targets = ToReplicas(fresh, entry.size);
  const uint8_t pins = entry.flags & (kEntrySoftPin | kEntryHardPin);
  JournalRefs(fresh, JournalEntry::Op::kAdd, /*committed=*/false, key, entry.size, entry.aux, pins);
  entry.flags |= kEntryPendingUpsert;
  s.pending[index] = PendingPut{serial,        now,
                                entry.size,    pins,
                                entry.aux,     std::move(fresh),
                                /*copy=*/true, move ? source_ref : std::nullopt};
  return plan;
}

absl::Status MasterService::Impl::ReplicaCopyEnd(const ClientId& client, const std::string& key,
                                                 bool revoke) {
  YB_RETURN_IF_ERROR(ValidateKey(key));
  yuebing::ReaderMutexLock topo(&topo_mu_);
  const uint64_t serial = SerialOf(client);
  const int64_t now = NowNs();
  Shard& s = ShardFor(key);
  yuebing::MutexLock lock(&s.mu);
  const uint32_t index = s.table.Find(key);
  auto it = index == ObjectTable::kNone ? s.pending.end() : s.pending.find(index);
  if (it == s.pending.end() || !it->second.copy) {
    return MakeError(ErrorCode::kObjectNotFound, "no copy of the key is under way");
  }
  if (serial == 0 || it->second.writer != serial) {
    return MakeError(ErrorCode::kIllegalClient, "the copy was started by another client");
  }
  if (revoke) {
    CancelPending(s, index, now, Unfinished::kFreeNow);
    return absl::OkStatus();
  }
  PendingPut done = std::move(it->second);
  s.pending.erase(it);
  ObjectEntry& entry = s.table.at(index);
  entry.flags &= static_cast<uint8_t>(~kEntryPendingUpsert);
  std::vector<ReplicaRef> replicas = ReplicasOf(s, index);
  if (done.move_source.has_value()) {
    auto source = std::find(replicas.begin(), replicas.end(), *done.move_source);
    if (source != replicas.end()) {
      replicas.erase(source);
      JournalDrops({*done.move_source});
      Retire(*done.move_source, AlignedSize(entry.size), std::max(now, entry.time_ns), now);
    }
  }
  JournalReplicas(s, index, done.replicas, JournalEntry::Op::kAdd);
  replicas.insert(replicas.end(), done.replicas.begin(), done.replicas.end());
  SetReplicas(s, index, replicas);
  return absl::OkStatus();
}

absl::StatusOr<CopyPlan> MasterService::ReplicaCopyStart(const ClientId& client,
                                                         const std::string& key,
                                                         const std::string& source,
                                                         const std::vector<std::string>& targets,
                                                         bool move) {
  return impl_->ReplicaCopyStart(client, key, source, targets, move);
}

absl::Status MasterService::ReplicaCopyEnd(const ClientId& client, const std::string& key,
                                           bool revoke) {
  return impl_->ReplicaCopyEnd(client, key, revoke);
}

}  // namespace yuebing::master
