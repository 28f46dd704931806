// Per-tenant memory quotas of a master with multi-tenancy (docs/master.md "Tenants and quotas").
//
// A tenant's charge is the memory its objects' replicas hold in segments (each range at its
// allocated, aligned length): complete objects, puts and copies in progress, and versions still
// held for their readers. The master reserves a write's whole charge before it places replicas
// (TryCharge), gives back what it did not place, and refunds each range when it is freed or its
// segment goes.
//
// A tenant may write only while it has a policy (a requested quota). Its effective quota is the
// requested one while all requests fit in the memory mounted; otherwise each is scaled to its
// share of that memory (largest remainders first, ties by name), as upstream does.
//
// Tenants are interned to small indexes (never reused, never 0) so that segments can record the
// owner of each range cheaply. Thread safety: every method is thread-safe; the lock is a leaf
// (taken under shard and segment locks, nothing is taken under it), except that Upsert and
// Delete write the policy file outside it.
#pragma once

#include <cstdint>
#include <deque>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "master/tenant_policy.h"
#include "yuebing/common/mutex.h"
#include "yuebing/master/types.h"

namespace yuebing::master {

class TenantQuotas {
 public:
  // `path`: where Upsert and Delete persist the policy ("" none).
  TenantQuotas(TenantPolicy policy, std::string path);

  // The index of `tenant` (interning it when new). Never 0.
  uint32_t Intern(absl::string_view tenant);
  const std::string& Name(uint32_t tenant) const;

  // Reserves `bytes` for a write by `tenant` with `capacity` bytes of memory mounted. Errors:
  // kTenantNotRegistered (no policy: even for 0 bytes), kTenantQuotaExceeded (`*deficit`: the
  // bytes past the effective quota).
  absl::Status TryCharge(uint32_t tenant, uint64_t bytes, uint64_t capacity, uint64_t* deficit);
  // Charges without a check (objects restored after a master restart).
  void Charge(uint32_t tenant, uint64_t bytes);
  void Refund(uint32_t tenant, uint64_t bytes);

  // Tenants with a policy or a charge, sorted by name.
  std::vector<TenantQuotaSnapshot> List(uint64_t capacity) const;
  // Errors: kObjectNotFound (neither a policy nor a charge).
  absl::StatusOr<TenantQuotaSnapshot> Get(absl::string_view tenant, uint64_t capacity) const;
  // Sets the requested quota (1..kMaxTenantQuotaBytes) of `tenant`, creating its policy:
  // persisted first, applied only when that succeeded. Errors: kInvalidParams,
  // kPersistentFail.
  absl::StatusOr<TenantQuotaSnapshot> Upsert(absl::string_view tenant, uint64_t bytes,
                                             uint64_t capacity);
  // Step one of deleting a policy: closes admission so that no write starts meanwhile. Errors:
  // kObjectNotFound (no policy), kTenantNotEmpty (it holds a charge; admission reopened).
  absl::Status BeginDelete(absl::string_view tenant);
  // Step two: `empty` tells whether the tenant holds no object (also disk-only ones). Not empty:
  // reopens admission, kTenantNotEmpty. Else persists the policy without it and drops it
  // (kPersistentFail: kept, admission reopened).
  absl::Status FinishDelete(absl::string_view tenant, bool empty);

  uint64_t Charged(uint32_t tenant) const;
  // Counters of upstream's mooncake_tenant_quota_reject_total / mooncake_tenant_evict_bytes_total:
  // a write refused for the quota in the end (after its evictions), bytes evicted for a quota.
  void CountQuotaReject(uint32_t tenant);
  void CountEvictedBytes(uint32_t tenant, uint64_t bytes);

 private:
  struct Account {
    std::string name;
    uint64_t requested = 0;  // 0: no policy
    uint64_t charged = 0;
    bool closing = false;  // a delete is under way: writes refused
    uint64_t quota_rejects = 0;
    uint64_t evicted_bytes = 0;
  };
  // Effective quotas for `capacity` (recomputed when it or the policy changed).
  void Recompute(uint64_t capacity) const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  TenantQuotaSnapshot SnapshotOf(uint32_t index, uint64_t capacity) const
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  TenantPolicy PolicyLocked() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const std::string path_;
  yuebing::Mutex admin_mu_;  // one Upsert or Delete at a time (file writes in order)
  mutable yuebing::Mutex mu_;
  std::deque<Account> accounts_ ABSL_GUARDED_BY(mu_);  // index - 1
  absl::flat_hash_map<std::string, uint32_t> index_ ABSL_GUARDED_BY(mu_);
  mutable std::vector<uint64_t> effective_ ABSL_GUARDED_BY(mu_);     // index - 1
  mutable uint64_t computed_for_ ABSL_GUARDED_BY(mu_) = UINT64_MAX;  // capacity; MAX: stale
};

}  // namespace yuebing::master
