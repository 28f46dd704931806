// Tenant namespaces of object keys (docs/store.md "Tenants").
//
// Every object belongs to one tenant. The store client maps a user key to the key the master,
// the segment manifests and the disk tiers know it by (its scoped key), and the master reads the
// tenant back from it:
//   tenant "default", key not starting with NUL  ->  the key itself (what a single-tenant
//                                                    cluster has always stored)
//   any other tenant or key                       ->  "\0" + tenant + "\0" + key
// The mapping is one-to-one because a tenant id never holds a NUL, so two tenants never share a
// scoped key. Stateless; thread-safe.
#pragma once

#include <cstddef>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "yuebing/common/limits.h"

namespace yuebing {

inline constexpr absl::string_view kDefaultTenant = "default";
using limits::kMaxTenantIdBytes;

// Upstream Mooncake's rule plus a length bound: 1..kMaxTenantIdBytes bytes, not starting with
// '_' (reserved), no byte below 0x20 and no 0x7F. Errors: kInvalidParams naming the rule.
absl::Status CheckTenantId(absl::string_view tenant);

// The scoped key of `key` in `tenant` (which must pass CheckTenantId).
std::string ScopedKey(absl::string_view tenant, absl::string_view key);

struct TenantKey {
  absl::string_view tenant;
  absl::string_view key;
};
// The tenant and user key of a scoped key (views into `scoped`). A key not starting with NUL is
// the default tenant's; a malformed one (a leading NUL without a second) reads as tenant "" so
// that CheckTenantId refuses it.
TenantKey SplitScopedKey(absl::string_view scoped);

// `tenant`, or "default" when it is empty (what a request without a tenant means).
inline absl::string_view TenantOrDefault(absl::string_view tenant) {
  return tenant.empty() ? kDefaultTenant : tenant;
}

// Whether `scoped` is a key of `tenant` (no allocation).
inline bool InTenant(absl::string_view scoped, absl::string_view tenant) {
  return SplitScopedKey(scoped).tenant == tenant;
}

}  // namespace yuebing
