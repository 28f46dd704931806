// MasterService's read-only admin queries (the admin HTTP pages): they look at the object index
// without granting leases or touching eviction order.
#include <string>
#include <utility>
#include <vector>

#include "master/master_impl.h"
#include "yuebing/common/error_code.h"
#include "yuebing/common/status.h"
#include "yuebing/master/master_service.h"

namespace yuebing::master {

absl::StatusOr<ObjectLocation> MasterService::Impl::QueryReplicas(const std::string& key) {
  YB_RETURN_IF_ERROR(ValidateKey(key));
  yuebing::ReaderMutexLock topo(&topo_mu_);
  Shard& s = ShardFor(key);
  yuebing::MutexLock lock(&s.mu);
  const uint32_t index = s.table.Find(key);
  // A disk-only object (while promoted, the put of it in `table` is unfinished).
  if (index == ObjectTable::kNone || !(s.table.at(index).flags & kEntryComplete)) {
    if (auto disk = s.disk.find(key); disk != s.disk.end()) {
      ObjectLocation location = DiskLocation(disk->second);
      location.lease_ttl = std::chrono::milliseconds(0);
      return location;
    }
    return MakeError(ErrorCode::kObjectNotFound, "no such object");
  }
  const ObjectEntry& entry = s.table.at(index);
  if (!(entry.flags & kEntryComplete))
    return MakeError(ErrorCode::kObjectNotFound, "no such object");
  ObjectLocation location;
  location.size = entry.size;
  location.checksum = entry.aux;
  location.replicas = ToReplicas(ReplicasOf(s, index), entry.size);
  return location;
}

std::vector<std::string> MasterService::Impl::ListKeys(size_t limit, bool* truncated,
                                                       absl::string_view tenant) {
  std::vector<std::string> keys;
  bool more = false;
  for (const std::unique_ptr<Shard>& shard : shards_) {
    Shard& s = *shard;
    yuebing::MutexLock lock(&s.mu);
    for (uint32_t i = 0; i < s.table.index_limit() && !more; ++i) {
      if (!(s.table.at(i).flags & kEntryComplete)) continue;  // unused or unfinished
      const TenantKey split = SplitScopedKey(s.table.key(i));
      if (split.tenant != tenant) continue;
      if (keys.size() == limit) {
        more = true;
      } else {
        keys.emplace_back(split.key);
      }
    }
    for (const auto& [key, entry] : s.disk) {
      if (more) break;
      const TenantKey split = SplitScopedKey(key);
      if (split.tenant != tenant) continue;
      if (keys.size() == limit) {
        more = true;
      } else {
        keys.emplace_back(split.key);
      }
    }
    if (more) break;
  }
  if (truncated != nullptr) *truncated = more;
  return keys;
}

absl::StatusOr<ObjectLocation> MasterService::QueryReplicas(const std::string& key) const {
  return impl_->QueryReplicas(key);
}

std::vector<absl::StatusOr<ObjectLocation>> MasterService::BatchQueryReplicas(
    const std::vector<std::string>& keys) const {
  if (keys.size() > limits::kMaxBatchKeys) {
    return std::vector<absl::StatusOr<ObjectLocation>>(
        keys.size(), MakeError(ErrorCode::kInvalidParams, "batch too large"));
  }
  std::vector<absl::StatusOr<ObjectLocation>> results;
  results.reserve(keys.size());
  for (const std::string& key : keys) results.push_back(impl_->QueryReplicas(key));
  return results;
}

std::vector<std::string> MasterService::ListKeys(size_t limit, bool* truncated,
                                                 absl::string_view tenant) const {
  return impl_->ListKeys(limit, truncated, tenant);
}

}  // namespace yuebing::master
