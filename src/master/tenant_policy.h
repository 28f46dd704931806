// Tenant quota policies: the YAML document upstream Mooncake's master reads with
// --tenant_quota_connector_type=file (docs/master.md "Tenants and quotas"):
//
//   version: 1
//   tenants:
//     - name: tenant-a
//       quota: 200GB
//
// Names follow CheckTenantId (yuebing/common/tenant_key.h) and are unique; a quota is a positive
// integer with an optional unit B, KB, MB, GB or TB (binary: KB = 1024), at most 2^63 - 1 bytes.
// Stateless functions; thread-safe.
#pragma once

#include <cstdint>
#include <map>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace yuebing::master {

// tenant -> requested quota in bytes.
using TenantPolicy = std::map<std::string, uint64_t>;

// The most a tenant's quota may be.
inline constexpr uint64_t kMaxTenantQuotaBytes = (uint64_t{1} << 63) - 1;

// "200GB" -> 200 << 30. Errors: kInvalidParams with upstream's sentence ("quota must be
// positive", "unsupported quota unit 'XB'", ...).
absl::StatusOr<uint64_t> ParseTenantQuota(absl::string_view text);

// Errors: kInvalidParams naming the fault (bad YAML, wrong version, a bad name or quota, a
// duplicate name).
absl::StatusOr<TenantPolicy> ParseTenantPolicy(absl::string_view yaml);
// The document ParseTenantPolicy reads back: names quoted, quotas in bytes, sorted by name.
std::string FormatTenantPolicy(const TenantPolicy& policy);

// Reads `path` (a missing file is an error: upstream refuses to start without it).
absl::StatusOr<TenantPolicy> LoadTenantPolicy(const std::string& path);
// Replaces `path` atomically (a temporary file beside it, fsync, rename). Errors:
// kPersistentFail.
absl::Status SaveTenantPolicy(const std::string& path, const TenantPolicy& policy);

}  // namespace yuebing::master
