// Security of the master's gRPC API, shared by yuebing-master and the store client:
//  - a per-call credential derived from the cluster secret (metadata "x-yuebing-auth", see
//    yuebing/common/cluster_auth.h), checked by the server before a call touches the master;
//  - optional TLS: the server presents a certificate/key, clients verify it against a CA bundle.
// Without TLS the credential travels in clear text: it keeps out processes that do not know the
// secret, but an on-path observer could replay a captured credential within kMaxCallSkew.
//
// Thread safety: all functions are thread-safe. Errors: kInvalidArgument naming the file or option.
#pragma once

#include <grpcpp/security/credentials.h>
#include <grpcpp/security/server_credentials.h>
#include <grpcpp/server_context.h>
#include <grpcpp/support/status.h>

#include <chrono>
#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace grpc {
class ClientContext;
}  // namespace grpc

namespace yuebing {

// Environment variable naming a PEM CA bundle; when set, store clients talk TLS to the master.
inline constexpr const char* kMasterTlsCaFileEnv = "YUEBING_MASTER_TLS_CA_FILE";
// A call credential this far from the master's clock (either way) is refused.
inline constexpr std::chrono::milliseconds kMaxCallSkew{300000};

struct MasterRpcSecurity {
  std::string cluster_secret;  // "" = no per-call credential required / sent
  // Server: PEM certificate chain and private key (both or neither).
  std::string tls_cert_pem;
  std::string tls_key_pem;
  // Client: PEM CA bundle the master's certificate must chain to ("" = plaintext channel).
  std::string tls_ca_pem;
};

// Reads a whole PEM file (at most 1 MiB). Errors: kInvalidArgument naming `what` and the path.
absl::StatusOr<std::string> ReadPemFile(const std::string& path, const char* what);

// TLS server credentials when a certificate is given, insecure ones otherwise.
// Errors: kInvalidArgument when only one of certificate and key is given.
absl::StatusOr<std::shared_ptr<grpc::ServerCredentials>> MasterServerCredentials(
    const MasterRpcSecurity& security);

// TLS channel credentials verifying the master against tls_ca_pem when set, insecure otherwise.
std::shared_ptr<grpc::ChannelCredentials> MasterChannelCredentials(
    const MasterRpcSecurity& security);

// Server side: OK when no secret is configured or the call carries a valid credential;
// UNAUTHENTICATED (with the reason) otherwise.
grpc::Status CheckMasterCallCredential(const grpc::ServerContextBase& context,
                                       const std::string& secret);

// Client side: adds a fresh credential to `context` when `secret` is non-empty.
// Errors: kInternal when no random nonce could be drawn.
absl::Status AttachMasterCallCredential(grpc::ClientContext* context, const std::string& secret);

}  // namespace yuebing
