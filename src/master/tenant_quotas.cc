#include "master/tenant_quotas.h"

#include <algorithm>
#include <utility>

#include "absl/numeric/int128.h"
#include "absl/strings/str_cat.h"
#include "yuebing/common/error_code.h"
#include "yuebing/common/status.h"
#include "yuebing/common/tenant_key.h"

namespace yuebing::master {

TenantQuotas::TenantQuotas(TenantPolicy policy, std::string path) : path_(std::move(path)) {
  for (const auto& [tenant, bytes] : policy) {
    const uint32_t index = Intern(tenant);
    yuebing::MutexLock lock(&mu_);
    accounts_[index - 1].requested = bytes;
  }
}

uint32_t TenantQuotas::Intern(absl::string_view tenant) {
  yuebing::MutexLock lock(&mu_);
  auto it = index_.find(tenant);
  if (it != index_.end()) return it->second;
  accounts_.push_back(Account{std::string(tenant)});
  const auto index = static_cast<uint32_t>(accounts_.size());
  index_.emplace(std::string(tenant), index);
  computed_for_ = UINT64_MAX;
  return index;
}

const std::string& TenantQuotas::Name(uint32_t tenant) const {
  yuebing::MutexLock lock(&mu_);
  return accounts_[tenant - 1].name;
}

void TenantQuotas::Recompute(uint64_t capacity) const {
  if (computed_for_ == capacity && effective_.size() == accounts_.size()) return;
  effective_.assign(accounts_.size(), 0);
  absl::uint128 sum = 0;
  for (const Account& a : accounts_) sum += a.requested;
  if (sum <= capacity) {
    for (size_t i = 0; i < accounts_.size(); ++i) effective_[i] = accounts_[i].requested;
  } else {
    // Shares of the memory mounted, in proportion to the requests; the bytes floor() leaves go
    // one each to the largest remainders (ties: by name).
    std::vector<std::pair<absl::uint128, size_t>> remainders;
    uint64_t given = 0;
    for (size_t i = 0; i < accounts_.size(); ++i) {
      if (accounts_[i].requested == 0) continue;
      const absl::uint128 product = static_cast<absl::uint128>(capacity) * accounts_[i].requested;
      effective_[i] = absl::Uint128Low64(product / sum);
      given += effective_[i];
      remainders.emplace_back(product % sum, i);
    }
    std::sort(remainders.begin(), remainders.end(), [this](const auto& a, const auto& b) {
      if (a.first != b.first) return a.first > b.first;
      return accounts_[a.second].name < accounts_[b.second].name;
    });
    for (size_t k = 0; k < remainders.size() && given < capacity; ++k, ++given) {
      ++effective_[remainders[k].second];
    }
  }
  computed_for_ = capacity;
}

absl::Status TenantQuotas::TryCharge(uint32_t tenant, uint64_t bytes, uint64_t capacity,
                                     uint64_t* deficit) {
  yuebing::MutexLock lock(&mu_);
  Account& account = accounts_[tenant - 1];
  if (account.requested == 0 || account.closing) {
    return MakeError(ErrorCode::kTenantNotRegistered,
                     absl::StrCat("tenant '", account.name, "' has no quota policy"));
  }
  if (bytes == 0) return absl::OkStatus();
  Recompute(capacity);
  const uint64_t effective = effective_[tenant - 1];
  if (account.charged > effective || bytes > effective - account.charged) {
    if (deficit != nullptr)
      *deficit = account.charged + bytes - std::min(effective, account.charged + bytes);
    return MakeError(
        ErrorCode::kTenantQuotaExceeded,
        absl::StrCat("tenant '", account.name, "' holds ", account.charged,
                     " bytes of its quota of ", effective, "; ", bytes, " more do not fit"));
  }
  account.charged += bytes;
  return absl::OkStatus();
}

void TenantQuotas::Charge(uint32_t tenant, uint64_t bytes) {
  yuebing::MutexLock lock(&mu_);
  accounts_[tenant - 1].charged += bytes;
}

void TenantQuotas::CountQuotaReject(uint32_t tenant) {
  yuebing::MutexLock lock(&mu_);
  ++accounts_[tenant - 1].quota_rejects;
}

void TenantQuotas::CountEvictedBytes(uint32_t tenant, uint64_t bytes) {
  yuebing::MutexLock lock(&mu_);
  accounts_[tenant - 1].evicted_bytes += bytes;
}

void TenantQuotas::Refund(uint32_t tenant, uint64_t bytes) {
  yuebing::MutexLock lock(&mu_);
  Account& account = accounts_[tenant - 1];
  account.charged -= std::min(account.charged, bytes);
}

TenantQuotaSnapshot TenantQuotas::SnapshotOf(uint32_t index, uint64_t capacity) const {
  Recompute(capacity);
  const Account& account = accounts_[index - 1];
  TenantQuotaSnapshot snapshot;
  snapshot.tenant_id = account.name;
  snapshot.requested_quota_bytes = account.requested;
  snapshot.effective_quota_bytes = effective_[index - 1];
  snapshot.charged_bytes = account.charged;
  snapshot.has_explicit_policy = account.requested != 0;
  snapshot.admission_closed = account.requested == 0 || account.closing;
  snapshot.over_quota = account.charged > snapshot.effective_quota_bytes;
  snapshot.quota_rejects = account.quota_rejects;
  snapshot.evicted_bytes = account.evicted_bytes;
  return snapshot;
}

std::vector<TenantQuotaSnapshot> TenantQuotas::List(uint64_t capacity) const {
  yuebing::MutexLock lock(&mu_);
  std::vector<TenantQuotaSnapshot> out;
  for (uint32_t i = 1; i <= accounts_.size(); ++i) {
    if (accounts_[i - 1].requested != 0 || accounts_[i - 1].charged != 0) {
      out.push_back(SnapshotOf(i, capacity));
    }
  }
  std::sort(out.begin(), out.end(),
            [](const auto& a, const auto& b) { return a.tenant_id < b.tenant_id; });
  return out;
}

absl::StatusOr<TenantQuotaSnapshot> TenantQuotas::Get(absl::string_view tenant,
                                                      uint64_t capacity) const {
  yuebing::MutexLock lock(&mu_);
  auto it = index_.find(tenant);
  if (it == index_.end() ||
      (accounts_[it->second - 1].requested == 0 && accounts_[it->second - 1].charged == 0)) {
    return MakeError(ErrorCode::kObjectNotFound,
                     absl::StrCat("tenant '", tenant, "' has no quota policy and no charge"));
  }
  return SnapshotOf(it->second, capacity);
}

TenantPolicy TenantQuotas::PolicyLocked() const {
  TenantPolicy policy;
  for (const Account& a : accounts_) {
    if (a.requested != 0) policy.emplace(a.name, a.requested);
  }
  return policy;
}

absl::StatusOr<TenantQuotaSnapshot> TenantQuotas::Upsert(absl::string_view tenant, uint64_t bytes,
                                                         uint64_t capacity) {
  YB_RETURN_IF_ERROR(CheckTenantId(tenant));
  if (bytes == 0 || bytes > kMaxTenantQuotaBytes) {
    return MakeError(ErrorCode::kInvalidParams, "Tenant quota must be in [1, 2^63 - 1] bytes");
  }
  yuebing::MutexLock admin(&admin_mu_);
  TenantPolicy policy;
  {
    yuebing::MutexLock lock(&mu_);
    policy = PolicyLocked();
  }
  policy[std::string(tenant)] = bytes;
  if (!path_.empty()) YB_RETURN_IF_ERROR(SaveTenantPolicy(path_, policy));
  const uint32_t index = Intern(tenant);
  yuebing::MutexLock lock(&mu_);
  accounts_[index - 1].requested = bytes;
  accounts_[index - 1].closing = false;
  computed_for_ = UINT64_MAX;
  return SnapshotOf(index, capacity);
}

absl::Status TenantQuotas::BeginDelete(absl::string_view tenant) {
  admin_mu_.Lock();  // held until FinishDelete
  yuebing::MutexLock lock(&mu_);
  auto it = index_.find(tenant);
  if (it == index_.end() || accounts_[it->second - 1].requested == 0) {
    admin_mu_.Unlock();
    return MakeError(ErrorCode::kObjectNotFound,
                     absl::StrCat("tenant '", tenant, "' has no quota policy"));
  }
  Account& account = accounts_[it->second - 1];
  if (account.charged != 0) {
    admin_mu_.Unlock();
    return MakeError(ErrorCode::kTenantNotEmpty, absl::StrCat("tenant '", tenant, "' still holds ",
                                                              account.charged, " bytes of memory"));
  }
  account.closing = true;
  return absl::OkStatus();
}

absl::Status TenantQuotas::FinishDelete(absl::string_view tenant, bool empty) {
  absl::Status result = absl::OkStatus();
  TenantPolicy policy;
  uint32_t index = 0;
  {
    yuebing::MutexLock lock(&mu_);
    index = index_.find(tenant)->second;
    policy = PolicyLocked();
  }
  policy.erase(std::string(tenant));
  if (!empty) {
    result = MakeError(ErrorCode::kTenantNotEmpty,
                       absl::StrCat("tenant '", tenant, "' still owns objects"));
  } else if (!path_.empty()) {
    result = SaveTenantPolicy(path_, policy);
  }
  {
    yuebing::MutexLock lock(&mu_);
    Account& account = accounts_[index - 1];
    account.closing = false;
    if (result.ok()) {
      account.requested = 0;
      computed_for_ = UINT64_MAX;
    }
  }
  admin_mu_.Unlock();
  return result;
}

uint64_t TenantQuotas::Charged(uint32_t tenant) const {
  yuebing::MutexLock lock(&mu_);
  return accounts_[tenant - 1].charged;
}

}  // namespace yuebing::master
