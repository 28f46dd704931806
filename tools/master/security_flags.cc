#include "security_flags.h"

#include <string>

#include "absl/flags/flag.h"
#include "absl/strings/str_cat.h"
#include "yuebing/common/cluster_auth.h"
#include "yuebing/common/logging.h"

ABSL_FLAG(std::string, cluster_secret_file, "",
          "File holding the cluster secret (>= 16 bytes). When set (or $YUEBING_CLUSTER_SECRET_FILE"
          " / $YUEBING_CLUSTER_SECRET), every gRPC call must carry a credential derived from it.");
ABSL_FLAG(std::string, tls_cert_file, "",
          "PEM certificate chain: serve gRPC over TLS (needs --tls_key_file).");
ABSL_FLAG(std::string, tls_key_file, "", "PEM private key of --tls_cert_file.");

namespace yuebing::master {

absl::StatusOr<MasterRpcSecurity> MasterSecurityFromFlags() {
  MasterRpcSecurity security;
  absl::StatusOr<std::string> secret = LoadClusterSecret(absl::GetFlag(FLAGS_cluster_secret_file));
  if (!secret.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("--cluster_secret_file: ", secret.status().message()));
  }
  security.cluster_secret = *std::move(secret);
  const std::string cert = absl::GetFlag(FLAGS_tls_cert_file);
  const std::string key = absl::GetFlag(FLAGS_tls_key_file);
  if (cert.empty() != key.empty()) {
    return absl::InvalidArgumentError("--tls_cert_file and --tls_key_file go together");
  }
  if (!cert.empty()) {
    absl::StatusOr<std::string> cert_pem = ReadPemFile(cert, "--tls_cert_file");
    if (!cert_pem.ok()) return cert_pem.status();
    absl::StatusOr<std::string> key_pem = ReadPemFile(key, "--tls_key_file");
    if (!key_pem.ok()) return key_pem.status();
    security.tls_cert_pem = *std::move(cert_pem);
    security.tls_key_pem = *std::move(key_pem);
  }
  YB_LOG_INFO("yuebing-master: cluster secret {}, gRPC {}",
              security.cluster_secret.empty() ? "off" : "on",
              security.tls_cert_pem.empty() ? "plaintext" : "TLS");
  return security;
}

}  // namespace yuebing::master
