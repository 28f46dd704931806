#include "yuebing/common/cluster_auth.h"

#include <openssl/crypto.h>
#include <openssl/hmac.h>
#include <openssl/rand.h>

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/escaping.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"

namespace yuebing {
namespace {

constexpr absl::string_view kTokenLabel = "yuebing-master-call-v1";

absl::Status CheckSecret(absl::string_view secret, absl::string_view source) {
  if (secret.size() < kMinClusterSecretBytes) {
    return absl::InvalidArgumentError(absl::StrCat("cluster secret from ", source, " has ",
                                                   secret.size(), " bytes; at least ",
                                                   kMinClusterSecretBytes, " are required"));
  }
  if (secret.size() > kMaxClusterSecretBytes) {
    return absl::InvalidArgumentError(absl::StrCat("cluster secret from ", source,
                                                   " is over the limit of ", kMaxClusterSecretBytes,
                                                   " bytes"));
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<std::string> ReadClusterSecretFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    return absl::InvalidArgumentError(absl::StrCat("cannot read cluster secret file '", path, "'"));
  }
  std::string text(kMaxClusterSecretBytes + 2, '\0');
  in.read(text.data(), static_cast<std::streamsize>(text.size()));
  text.resize(static_cast<size_t>(in.gcount()));
  if (in.bad()) {
    return absl::InvalidArgumentError(
        absl::StrCat("error reading cluster secret file '", path, "'"));
  }
  std::string secret(absl::StripTrailingAsciiWhitespace(text));
  if (auto status = CheckSecret(secret, absl::StrCat("file '", path, "'")); !status.ok()) {
    return status;
  }
  return secret;
}

absl::StatusOr<std::string> LoadClusterSecret(const std::string& file_flag) {
  if (!file_flag.empty()) return ReadClusterSecretFile(file_flag);
  if (const char* file = std::getenv(kClusterSecretFileEnv); file != nullptr && *file != '\0') {
    return ReadClusterSecretFile(file);
  }
  if (const char* value = std::getenv(kClusterSecretEnv); value != nullptr && *value != '\0') {
    std::string secret(value);
    if (auto status = CheckSecret(secret, absl::StrCat("$", kClusterSecretEnv)); !status.ok()) {
      return status;
    }
    return secret;
  }
  return std::string();
}

std::string HmacSha256(absl::string_view key, absl::string_view data) {
  unsigned char out[EVP_MAX_MD_SIZE];
  unsigned int length = 0;
  HMAC(EVP_sha256(), key.data(), static_cast<int>(key.size()),
       reinterpret_cast<const unsigned char*>(data.data()), data.size(), out, &length);
  return std::string(reinterpret_cast<const char*>(out), length);
}

bool ConstantTimeEquals(absl::string_view a, absl::string_view b) {
  if (a.size() != b.size()) return false;
  return CRYPTO_memcmp(a.data(), b.data(), a.size()) == 0;
}

absl::StatusOr<std::string> RandomBytes(size_t bytes) {
  std::string out(bytes, '\0');
  if (RAND_bytes(reinterpret_cast<unsigned char*>(out.data()), static_cast<int>(bytes)) != 1) {
    return absl::InternalError("OpenSSL RAND_bytes failed");
  }
  return out;
}

absl::StatusOr<std::string> MakeMasterCallToken(absl::string_view secret,
                                                std::chrono::system_clock::time_point now) {
  absl::StatusOr<std::string> nonce = RandomBytes(16);
  if (!nonce.ok()) return nonce.status();
  const int64_t ms =
      std::chrono::duration_cast<std::chrono::milliseconds>(now.time_since_epoch()).count();
  const std::string nonce_hex = absl::BytesToHexString(*nonce);
  const std::string mac = HmacSha256(secret, absl::StrCat(kTokenLabel, ".", ms, ".", nonce_hex));
  return absl::StrCat("v1.", ms, ".", nonce_hex, ".", absl::BytesToHexString(mac));
}

absl::Status VerifyMasterCallToken(absl::string_view secret, absl::string_view token,
                                   std::chrono::system_clock::time_point now,
                                   std::chrono::milliseconds max_skew) {
  std::vector<absl::string_view> parts = absl::StrSplit(token, '.');
  int64_t ms = 0;
  if (parts.size() != 4 || parts[0] != "v1" || !absl::SimpleAtoi(parts[1], &ms) ||
      parts[2].size() != 32 || parts[3].size() != 2 * kHmacBytes) {
    return absl::UnauthenticatedError("malformed cluster credential");
  }
  const std::string expected =
      absl::BytesToHexString(HmacSha256(secret, absl::StrCat(kTokenLabel, ".", ms, ".", parts[2])));
  if (!ConstantTimeEquals(parts[3], expected)) {
    return absl::UnauthenticatedError("cluster credential does not match this cluster's secret");
  }
  const int64_t now_ms =
      std::chrono::duration_cast<std::chrono::milliseconds>(now.time_since_epoch()).count();
  if (std::llabs(now_ms - ms) > max_skew.count()) {
    return absl::UnauthenticatedError(absl::StrCat("cluster credential is ", (now_ms - ms) / 1000,
                                                   " s off this master's clock (limit ",
                                                   max_skew.count() / 1000, " s)"));
  }
  return absl::OkStatus();
}

}  // namespace yuebing
