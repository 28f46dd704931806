// The optional cluster secret and the primitives built on it: loading it once at start,
// HMAC-SHA256, constant-time comparison, fresh random nonces, and the per-call token the master's
// gRPC server accepts. The secret itself never leaves the process; only HMACs over fresh values are
// sent.
//
// Thread safety: every function is thread-safe (pure, or reads the environment/files once per
// call). Errors: kInvalidArgument for a secret that is set but unusable (unreadable file, empty,
// shorter than kMinClusterSecretBytes), kInternal when the OpenSSL random generator fails.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace yuebing {

inline constexpr const char* kClusterSecretEnv = "YUEBING_CLUSTER_SECRET";
inline constexpr const char* kClusterSecretFileEnv = "YUEBING_CLUSTER_SECRET_FILE";
// A shorter secret is refused: it could be guessed offline from one captured handshake.
inline constexpr size_t kMinClusterSecretBytes = 16;
inline constexpr size_t kMaxClusterSecretBytes = 4096;
inline constexpr size_t kHmacBytes = 32;
inline constexpr size_t kNonceBytes = 32;

// Reads the cluster secret, in this order: the file `file_flag` (when non-empty), the file named by
// $YUEBING_CLUSTER_SECRET_FILE, the value of $YUEBING_CLUSTER_SECRET. Trailing whitespace/newlines
// of a file are dropped. Returns "" when none is configured (authentication off).
absl::StatusOr<std::string> LoadClusterSecret(const std::string& file_flag = "");

// Reads a secret file as LoadClusterSecret does. Errors: kInvalidArgument naming the file.
absl::StatusOr<std::string> ReadClusterSecretFile(const std::string& path);

// HMAC-SHA256(key, data): kHmacBytes raw bytes.
std::string HmacSha256(absl::string_view key, absl::string_view data);

// Equality of two byte strings whose running time does not depend on where they differ (it does
// depend on the lengths, which are public).
bool ConstantTimeEquals(absl::string_view a, absl::string_view b);

// `bytes` bytes from OpenSSL's CSPRNG. Errors: kInternal.
absl::StatusOr<std::string> RandomBytes(size_t bytes);

// The per-call credential of the master's gRPC API: "v1.<unix ms>.<nonce hex>.<hmac hex>", the
// HMAC keyed by the secret over the label, timestamp and nonce. It proves knowledge of the secret
// at a recent time; it does not bind the request body (see docs/security.md).
inline constexpr const char* kMasterAuthMetadataKey = "x-yuebing-auth";
absl::StatusOr<std::string> MakeMasterCallToken(absl::string_view secret,
                                                std::chrono::system_clock::time_point now);
// OK when `token` was made with `secret` within `max_skew` of `now` (either direction).
// Errors: kUnauthenticated with the reason (malformed, expired, wrong secret).
absl::Status VerifyMasterCallToken(absl::string_view secret, absl::string_view token,
                                   std::chrono::system_clock::time_point now,
                                   std::chrono::milliseconds max_skew);

}  // namespace yuebing
