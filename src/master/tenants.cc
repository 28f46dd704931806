// Tenant quotas of a master with multi-tenancy: the public calls of the admin API and the scan
// a policy's deletion needs (docs/master.md "Tenants and quotas").
#include "absl/strings/str_cat.h"
#include "master/master_impl.h"
#include "yuebing/common/error_code.h"
#include "yuebing/common/status.h"

namespace yuebing::master {
namespace {

absl::Status NotMultiTenant() {
  return MakeError(ErrorCode::kUnavailableInCurrentMode,
                   "tenant quotas need a master started with --enable_multi_tenants=true");
}

}  // namespace

bool MasterService::Impl::TenantHasObjects(absl::string_view tenant) {
  for (const std::unique_ptr<Shard>& shard : shards_) {
    Shard& s = *shard;
    yuebing::MutexLock lock(&s.mu);
    for (uint32_t i = 0; i < s.table.index_limit(); ++i) {
      if ((s.table.at(i).flags & kEntryUsed) && InTenant(s.table.key(i), tenant)) return true;
    }
    for (const auto& [key, entry] : s.disk) {
      if (InTenant(key, tenant)) return true;
    }
  }
  return false;
}

bool MasterService::MultiTenant() const { return impl_->quotas() != nullptr; }

absl::StatusOr<std::vector<TenantQuotaSnapshot>> MasterService::ListTenantQuotas() const {
  if (impl_->quotas() == nullptr) return NotMultiTenant();
  return impl_->quotas()->List(impl_->capacity_bytes());
}

absl::StatusOr<TenantQuotaSnapshot> MasterService::GetTenantQuota(const std::string& tenant) const {
  YB_RETURN_IF_ERROR(CheckTenantId(tenant));
  if (impl_->quotas() == nullptr) return NotMultiTenant();
  return impl_->quotas()->Get(tenant, impl_->capacity_bytes());
}

absl::StatusOr<TenantQuotaSnapshot> MasterService::UpsertTenantQuota(const std::string& tenant,
                                                                     uint64_t bytes) {
  YB_RETURN_IF_ERROR(CheckTenantId(tenant));
  if (impl_->quotas() == nullptr) return NotMultiTenant();
  return impl_->quotas()->Upsert(tenant, bytes, impl_->capacity_bytes());
}

absl::Status MasterService::DeleteTenantQuota(const std::string& tenant) {
  YB_RETURN_IF_ERROR(CheckTenantId(tenant));
  if (impl_->quotas() == nullptr) return NotMultiTenant();
  // Admission closes first, so that no write of the tenant starts while its objects are looked
  // for.
  YB_RETURN_IF_ERROR(impl_->quotas()->BeginDelete(tenant));
  return impl_->quotas()->FinishDelete(tenant, !impl_->TenantHasObjects(tenant));
}

}  // namespace yuebing::master
