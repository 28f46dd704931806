// The tenant of one store client: maps the user keys its callers pass to the scoped keys the
// object client, the master and the disk tiers use (yuebing/common/tenant_key.h).
//
// A user key outside 1..limits::kMaxKeyBytes maps to "", which the object client refuses for
// that key alone (kInvalidParams), as it refused the user key before tenants existed. For the
// default tenant and ordinary keys the mapping is the identity and costs no copy.
// Thread safety: immutable after construction.
#pragma once

#include <string>
#include <vector>

#include "absl/strings/string_view.h"

namespace yuebing::store {

class TenantScope {
 public:
  // `tenant` must pass CheckTenantId.
  explicit TenantScope(std::string tenant);

  const std::string& tenant() const { return tenant_; }
  // The scoped key of `key`: `key` itself, or `storage` filled with it.
  const std::string& Key(const std::string& key, std::string& storage) const;
  // The scoped keys of `keys`: `keys` itself, or `storage` filled with them.
  const std::vector<std::string>& Keys(const std::vector<std::string>& keys,
                                       std::vector<std::string>& storage) const;

 private:
  bool Identity(const std::string& key) const;

  const std::string tenant_;
  const bool is_default_;
};

}  // namespace yuebing::store
