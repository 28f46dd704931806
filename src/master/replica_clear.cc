// MasterService::BatchReplicaClear: drops the replicas of objects nobody is reading (Mooncake's
// batch_replica_clear), all of them or those on one segment.
#include <algorithm>
#include <string>
#include <vector>

#include "master/master_impl.h"
#include "yuebing/common/error_code.h"
#include "yuebing/common/limits.h"
#include "yuebing/common/status.h"
#include "yuebing/master/master_service.h"

namespace yuebing::master {

absl::Status MasterService::Impl::ReplicaClear(const std::string& key,
                                               const std::string& segment_name) {
  YB_RETURN_IF_ERROR(ValidateKey(key));
  yuebing::ReaderMutexLock topo(&topo_mu_);
  const int64_t now = NowNs();
  Shard& s = ShardFor(key);
  yuebing::MutexLock lock(&s.mu);
  const uint32_t index = s.table.Find(key);
  if (index == ObjectTable::kNone) {
    auto disk = s.disk.find(key);
    if (disk == s.disk.end() || !segment_name.empty()) {
      // A disk-only object has no replica on a memory segment.
      return MakeError(ErrorCode::kObjectNotFound, "no such object");
    }
    DropDiskObject(s, disk->first);
    return absl::OkStatus();
  }
  const ObjectEntry& entry = s.table.at(index);
  if (!(entry.flags & kEntryComplete)) {
    return MakeError(ErrorCode::kObjectNotFound, "no such object (its put is in progress)");
  }
  if (entry.time_ns > now) return MakeError(ErrorCode::kObjectHasLease, "a read is in progress");
  if (entry.flags & (kEntryPendingUpsert | kEntrySpilling)) {
    return MakeError(ErrorCode::kObjectHasLease, "the object is being replaced or spilled");
  }
  if (segment_name.empty()) {
    DropObject(s, index, now, Unfinished::kHoldUntilRelease);
    return absl::OkStatus();
  }
  auto slot = segment_by_name_.find(segment_name);
  std::vector<ReplicaRef> kept = ReplicasOf(s, index);
  std::vector<ReplicaRef> cleared;
  if (slot != segment_by_name_.end()) {
    auto on_segment = [&](const ReplicaRef& ref) { return ref.segment == slot->second; };
    std::copy_if(kept.begin(), kept.end(), std::back_inserter(cleared), on_segment);
    kept.erase(std::remove_if(kept.begin(), kept.end(), on_segment), kept.end());
  }
  if (cleared.empty()) {
    return MakeError(ErrorCode::kObjectNotFound, "the object has no replica on that segment");
  }
  if (kept.empty()) {
    DropObject(s, index, now, Unfinished::kHoldUntilRelease);
    return absl::OkStatus();
  }
  // No reader holds the object (checked above), so the cleared replicas' space is free now.
  ReleaseReplicas(s, index, cleared, AlignedSize(entry.size), now);
  SetReplicas(s, index, kept);
  return absl::OkStatus();
}

std::vector<absl::Status> MasterService::BatchReplicaClear(const std::vector<std::string>& keys,
                                                           const std::string& segment_name) {
  if (keys.size() > limits::kMaxBatchKeys) {
    return std::vector<absl::Status>(keys.size(),
                                     MakeError(ErrorCode::kInvalidParams, "batch too large"));
  }
  std::vector<absl::Status> results;
  results.reserve(keys.size());
  for (const std::string& key : keys) results.push_back(impl_->ReplicaClear(key, segment_name));
  return results;
}

}  // namespace yuebing::master
