#include "transport/etcd_metadata_store.h"

#include <optional>
#include <utility>

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "common/etcd_client.h"
#include "yuebing/common/status.h"

namespace yuebing::transport {
namespace {

class EtcdMetadataStore final : public MetadataStore {
 public:
  explicit EtcdMetadataStore(std::unique_ptr<EtcdClient> etcd) : etcd_(std::move(etcd)) {}

  absl::Status Put(const std::string& key, const std::string& value) override {
    YB_RETURN_IF_ERROR(ValidateMetadataKey(key));
    return etcd_->Put(key, value);
  }

  absl::StatusOr<std::string> Get(const std::string& key) override {
    YB_RETURN_IF_ERROR(ValidateMetadataKey(key));
    YB_ASSIGN_OR_RETURN(std::optional<EtcdClient::KeyValue> kv, etcd_->Get(key));
    if (!kv.has_value()) {
      return absl::NotFoundError(absl::StrCat("etcd key not found: ", absl::CEscape(key)));
    }
    return std::move(kv->value);
  }

  absl::Status Delete(const std::string& key) override {
    YB_RETURN_IF_ERROR(ValidateMetadataKey(key));
    return etcd_->Delete(key);
  }

  std::string Describe() const override { return etcd_->Describe(); }

 private:
  const std::unique_ptr<EtcdClient> etcd_;
};

}  // namespace

absl::StatusOr<std::unique_ptr<MetadataStore>> NewEtcdMetadataStore(
    absl::string_view endpoints, std::chrono::milliseconds timeout) {
  YB_ASSIGN_OR_RETURN(std::unique_ptr<EtcdClient> etcd, EtcdClient::Create(endpoints, timeout));
  return std::unique_ptr<MetadataStore>(std::make_unique<EtcdMetadataStore>(std::move(etcd)));
}

}  // namespace yuebing::transport
