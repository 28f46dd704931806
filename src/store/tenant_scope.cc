#include "store/tenant_scope.h"

#include <algorithm>
#include <utility>

#include "yuebing/common/limits.h"
#include "yuebing/common/tenant_key.h"

namespace yuebing::store {

TenantScope::TenantScope(std::string tenant)
    : tenant_(std::move(tenant)), is_default_(tenant_ == kDefaultTenant) {}

bool TenantScope::Identity(const std::string& key) const {
  return is_default_ && !key.empty() && key.size() <= limits::kMaxKeyBytes && key.front() != '\0';
}

const std::string& TenantScope::Key(const std::string& key, std::string& storage) const {
  if (Identity(key)) return key;
  storage =
      key.empty() || key.size() > limits::kMaxKeyBytes ? std::string() : ScopedKey(tenant_, key);
  return storage;
}

const std::vector<std::string>& TenantScope::Keys(const std::vector<std::string>& keys,
                                                  std::vector<std::string>& storage) const {
  if (std::all_of(keys.begin(), keys.end(), [this](const std::string& k) { return Identity(k); })) {
    return keys;
  }
  storage.clear();
  storage.reserve(keys.size());
  std::string scoped;
  for (const std::string& key : keys) storage.push_back(Key(key, scoped));
  return storage;
}

}  // namespace yuebing::store
