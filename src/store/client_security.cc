#include "store/client_security.h"

#include <cstdlib>
#include <string>

#include "yuebing/common/cluster_auth.h"
#include "yuebing/common/error_code.h"

namespace yuebing::store {

absl::StatusOr<MasterRpcSecurity> LoadClientSecurity(const ClientConfig& config) {
  MasterRpcSecurity security;
  if (!config.cluster_secret.empty()) {
    if (config.cluster_secret.size() < kMinClusterSecretBytes) {
      return MakeError(ErrorCode::kInvalidParams, "cluster_secret is shorter than 16 bytes");
    }
    security.cluster_secret = config.cluster_secret;
  } else {
    absl::StatusOr<std::string> secret = LoadClusterSecret(config.cluster_secret_file);
    if (!secret.ok()) return MakeError(ErrorCode::kInvalidParams, secret.status().message());
    security.cluster_secret = *std::move(secret);
  }
  std::string ca_file = config.master_tls_ca_file;
  if (ca_file.empty()) {
    if (const char* env = std::getenv(kMasterTlsCaFileEnv); env != nullptr) ca_file = env;
  }
  if (!ca_file.empty()) {
    absl::StatusOr<std::string> pem = ReadPemFile(ca_file, "master TLS CA file");
    if (!pem.ok()) return MakeError(ErrorCode::kInvalidParams, pem.status().message());
    security.tls_ca_pem = *std::move(pem);
  }
  return security;
}

}  // namespace yuebing::store
