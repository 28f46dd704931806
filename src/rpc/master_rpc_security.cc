#include "rpc/master_rpc_security.h"

#include <grpcpp/client_context.h>

#include <fstream>

#include "absl/strings/str_cat.h"
#include "yuebing/common/cluster_auth.h"

namespace yuebing {

absl::StatusOr<std::string> ReadPemFile(const std::string& path, const char* what) {
  constexpr size_t kMaxPemBytes = 1 << 20;
  std::ifstream in(path, std::ios::binary);
  if (!in) return absl::InvalidArgumentError(absl::StrCat("cannot read ", what, " '", path, "'"));
  std::string text(kMaxPemBytes + 1, '\0');
  in.read(text.data(), static_cast<std::streamsize>(text.size()));
  text.resize(static_cast<size_t>(in.gcount()));
  if (in.bad() || text.empty() || text.size() > kMaxPemBytes) {
    return absl::InvalidArgumentError(
        absl::StrCat(what, " '", path, "' is empty, unreadable or over 1 MiB"));
  }
  if (text.find("-----BEGIN ") == std::string::npos) {
    return absl::InvalidArgumentError(absl::StrCat(what, " '", path, "' is not PEM"));
  }
  return text;
}

absl::StatusOr<std::shared_ptr<grpc::ServerCredentials>> MasterServerCredentials(
    const MasterRpcSecurity& security) {
  if (security.tls_cert_pem.empty() != security.tls_key_pem.empty()) {
    return absl::InvalidArgumentError("TLS needs both a certificate and its private key");
  }
  if (security.tls_cert_pem.empty()) return grpc::InsecureServerCredentials();
  grpc::SslServerCredentialsOptions options;
  options.pem_key_cert_pairs.push_back({security.tls_key_pem, security.tls_cert_pem});
  return grpc::SslServerCredentials(options);
}

std::shared_ptr<grpc::ChannelCredentials> MasterChannelCredentials(
    const MasterRpcSecurity& security) {
  if (security.tls_ca_pem.empty()) return grpc::InsecureChannelCredentials();
  grpc::SslCredentialsOptions options;
  options.pem_root_certs = security.tls_ca_pem;
  return grpc::SslCredentials(options);
}

grpc::Status CheckMasterCallCredential(const grpc::ServerContextBase& context,
                                       const std::string& secret) {
  if (secret.empty()) return grpc::Status::OK;
  const auto& metadata = context.client_metadata();
  auto it = metadata.find(kMasterAuthMetadataKey);
  if (it == metadata.end()) {
    return grpc::Status(grpc::StatusCode::UNAUTHENTICATED,
                        "this master requires the cluster secret; the call carries no credential");
  }
  absl::Status status =
      VerifyMasterCallToken(secret, absl::string_view(it->second.data(), it->second.size()),
                            std::chrono::system_clock::now(), kMaxCallSkew);
  if (!status.ok()) {
    return grpc::Status(grpc::StatusCode::UNAUTHENTICATED, std::string(status.message()));
  }
  return grpc::Status::OK;
}

absl::Status AttachMasterCallCredential(grpc::ClientContext* context, const std::string& secret) {
  if (secret.empty()) return absl::OkStatus();
  absl::StatusOr<std::string> token = MakeMasterCallToken(secret, std::chrono::system_clock::now());
  if (!token.ok()) return token.status();
  context->AddMetadata(kMasterAuthMetadataKey, *token);
  return absl::OkStatus();
}

}  // namespace yuebing
