#include "transport/metadata_store.h"

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "transport/etcd_metadata_store.h"
#include "transport/http_metadata_store.h"
#include "yuebing/common/http_metadata_server.h"

namespace yuebing::transport {

namespace {
constexpr absl::string_view kP2pHandshake = "P2PHANDSHAKE";
constexpr absl::string_view kSchemeSeparator = "://";
}  // namespace

absl::Status ValidateMetadataKey(absl::string_view key) {
  if (key.empty()) return absl::InvalidArgumentError("empty metadata key");
  if (key.size() > HttpMetadataServer::kMaxKeyBytes) {
    return absl::InvalidArgumentError(absl::StrCat("metadata key of ", key.size(),
                                                   " bytes exceeds the limit of ",
                                                   HttpMetadataServer::kMaxKeyBytes));
  }
  return absl::OkStatus();
}

absl::StatusOr<std::unique_ptr<MetadataStore>> CreateMetadataStore(
    absl::string_view conn, std::chrono::milliseconds timeout) {
  conn = absl::StripAsciiWhitespace(conn);
  if (conn == kP2pHandshake) return std::unique_ptr<MetadataStore>();
  if (timeout.count() <= 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("metadata store timeout must be positive, got ", timeout.count(), " ms"));
  }
  if (conn.empty()) return absl::InvalidArgumentError("empty metadata connection string");
  const size_t separator = conn.find(kSchemeSeparator);
  // Without a scheme the address is an etcd endpoint list, as Mooncake reads it.
  if (separator == absl::string_view::npos) return NewEtcdMetadataStore(conn, timeout);
  const std::string scheme = absl::AsciiStrToLower(conn.substr(0, separator));
  const absl::string_view address = conn.substr(separator + kSchemeSeparator.size());
  if (scheme == "http") return NewHttpMetadataStore(address, timeout);
  if (scheme == "etcd") return NewEtcdMetadataStore(address, timeout);
  return absl::InvalidArgumentError(absl::StrCat(
      "unsupported metadata backend \"", scheme, "\" in \"", conn,
      "\"; use P2PHANDSHAKE, http://host:port/metadata or etcd://host:port[,host:port...]"));
}

}  // namespace yuebing::transport
