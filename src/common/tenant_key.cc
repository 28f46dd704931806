#include "yuebing/common/tenant_key.h"

#include "absl/strings/str_cat.h"
#include "yuebing/common/error_code.h"

namespace yuebing {

absl::Status CheckTenantId(absl::string_view tenant) {
  if (tenant.empty()) return MakeError(ErrorCode::kInvalidParams, "tenant_id is empty");
  if (tenant.size() > kMaxTenantIdBytes) {
    return MakeError(ErrorCode::kInvalidParams,
                     absl::StrCat("tenant_id is longer than ", kMaxTenantIdBytes, " bytes"));
  }
  if (tenant.front() == '_') {
    return MakeError(ErrorCode::kInvalidParams,
                     "tenant_id must not start with '_' (reserved for internal use)");
  }
  for (char c : tenant) {
    const auto byte = static_cast<unsigned char>(c);
    if (byte < 0x20 || byte == 0x7f) {
      return MakeError(ErrorCode::kInvalidParams, "tenant_id must not hold control characters");
    }
  }
  return absl::OkStatus();
}

std::string ScopedKey(absl::string_view tenant, absl::string_view key) {
  if (tenant == kDefaultTenant && (key.empty() || key.front() != '\0')) return std::string(key);
  return absl::StrCat(absl::string_view("\0", 1), tenant, absl::string_view("\0", 1), key);
}

TenantKey SplitScopedKey(absl::string_view scoped) {
  if (scoped.empty() || scoped.front() != '\0') return TenantKey{kDefaultTenant, scoped};
  const size_t end = scoped.find('\0', 1);
  if (end == absl::string_view::npos) return TenantKey{absl::string_view(), scoped};
  return TenantKey{scoped.substr(1, end - 1), scoped.substr(end + 1)};
}

}  // namespace yuebing
