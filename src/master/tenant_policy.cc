#include "master/tenant_policy.h"

#include <fcntl.h>
#include <unistd.h>
#include <yaml-cpp/yaml.h>

#include <cstdio>
#include <fstream>
#include <sstream>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "yuebing/common/error_code.h"
#include "yuebing/common/tenant_key.h"

namespace yuebing::master {
namespace {

absl::Status Invalid(absl::string_view message) {
  return MakeError(ErrorCode::kInvalidParams, message);
}

// Double-quoted YAML scalar.
std::string Quoted(absl::string_view text) {
  std::string out = "\"";
  for (char c : text) {
    const auto byte = static_cast<unsigned char>(c);
    switch (c) {
      case '\\':
        out += "\\\\";
        break;
      case '"':
        out += "\\\"";
        break;
      default:
        if (byte < 0x20 || byte == 0x7f) {
          out += absl::StrFormat("\\x%02X", byte);
        } else {
          out += c;
        }
    }
  }
  return out + "\"";
}

}  // namespace

absl::StatusOr<uint64_t> ParseTenantQuota(absl::string_view text) {
  if (text.empty()) return Invalid("quota must not be empty");
  size_t digits = 0;
  while (digits < text.size() && absl::ascii_isdigit(static_cast<unsigned char>(text[digits]))) {
    ++digits;
  }
  if (digits == 0) return Invalid("quota must start with an integer");
  uint64_t value = 0;
  for (size_t i = 0; i < digits; ++i) {
    const uint64_t digit = static_cast<uint64_t>(text[i] - '0');
    if (value > (UINT64_MAX - digit) / 10) return Invalid("quota integer overflows uint64");
    value = value * 10 + digit;
  }
  if (value == 0) return Invalid("quota must be positive");
  const absl::string_view unit = text.substr(digits);
  int shift = 0;
  if (unit.empty() || unit == "B") {
    shift = 0;
  } else if (unit == "KB") {
    shift = 10;
  } else if (unit == "MB") {
    shift = 20;
  } else if (unit == "GB") {
    shift = 30;
  } else if (unit == "TB") {
    shift = 40;
  } else {
    return Invalid(absl::StrCat("unsupported quota unit '", unit, "'"));
  }
  if (shift > 0 && value > (UINT64_MAX >> shift)) {
    return Invalid("quota byte value overflows uint64");
  }
  const uint64_t bytes = value << shift;
  if (bytes > kMaxTenantQuotaBytes) return Invalid("quota exceeds maximum supported tenant charge");
  return bytes;
}

absl::StatusOr<TenantPolicy> ParseTenantPolicy(absl::string_view yaml) {
  YAML::Node root;
  try {
    root = YAML::Load(std::string(yaml));
  } catch (const YAML::Exception& e) {
    return Invalid(absl::StrCat("invalid YAML: ", e.what()));
  }
  if (!root.IsMap()) return Invalid("tenant quota policy must be a YAML map");
  const YAML::Node version = root["version"];
  if (!version || !version.IsScalar()) return Invalid("tenant quota policy version is required");
  int number = 0;
  if (!absl::SimpleAtoi(version.Scalar(), &number)) {
    return Invalid(absl::StrCat("invalid version: ", version.Scalar()));
  }
  if (number != 1) {
    return Invalid(absl::StrCat("unsupported tenant quota policy version: ", number));
  }
  const YAML::Node tenants = root["tenants"];
  if (!tenants) return Invalid("tenants is required");
  if (!tenants.IsSequence()) return Invalid("tenants must be a YAML sequence");
  TenantPolicy policy;
  for (const YAML::Node& entry : tenants) {
    if (!entry.IsMap()) return Invalid("tenant entry must be a YAML map");
    const YAML::Node name = entry["name"];
    if (!name || !name.IsScalar()) return Invalid("tenant name is required");
    const YAML::Node quota = entry["quota"];
    if (!quota || !quota.IsScalar()) return Invalid("tenant quota is required");
    const std::string& tenant = name.Scalar();
    if (!CheckTenantId(tenant).ok())
      return Invalid(absl::StrCat("invalid tenant name '", tenant, "'"));
    absl::StatusOr<uint64_t> bytes = ParseTenantQuota(quota.Scalar());
    if (!bytes.ok()) {
      return Invalid(
          absl::StrCat("invalid quota for tenant '", tenant, "': ", bytes.status().message()));
    }
    if (!policy.emplace(tenant, *bytes).second) {
      return Invalid(absl::StrCat("duplicate tenant name '", tenant, "'"));
    }
  }
  return policy;
}

std::string FormatTenantPolicy(const TenantPolicy& policy) {
  std::string out = "version: 1\n\n";
  if (policy.empty()) return out + "tenants: []\n";
  out += "tenants:\n";
  for (const auto& [tenant, bytes] : policy) {
    absl::StrAppend(&out, "  - name: ", Quoted(tenant), "\n    quota: ", bytes, "\n");
  }
  return out;
}

absl::StatusOr<TenantPolicy> LoadTenantPolicy(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    return Invalid(absl::StrCat("failed to open tenant quota policy file '", path, "'"));
  }
  std::stringstream text;
  text << in.rdbuf();
  return ParseTenantPolicy(text.str());
}

absl::Status SaveTenantPolicy(const std::string& path, const TenantPolicy& policy) {
  const std::string text = FormatTenantPolicy(policy);
  const std::string temp = absl::StrCat(path, ".tmp.", getpid());
  auto fail = [&](absl::string_view what) {
    unlink(temp.c_str());
    return MakeError(ErrorCode::kPersistentFail,
                     absl::StrCat("tenant quota policy '", path, "': ", what));
  };
  const int fd = open(temp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return fail("cannot create its temporary file");
  size_t written = 0;
  while (written < text.size()) {
    const ssize_t n = write(fd, text.data() + written, text.size() - written);
    if (n <= 0) {
      close(fd);
      return fail("write failed");
    }
    written += static_cast<size_t>(n);
  }
  const bool synced = fsync(fd) == 0;
  close(fd);
  if (!synced) return fail("fsync failed");
  if (rename(temp.c_str(), path.c_str()) != 0) return fail("rename failed");
  const size_t slash = path.rfind('/');
  const std::string dir = slash == std::string::npos ? "." : path.substr(0, slash + 1);
  const int dir_fd = open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dir_fd >= 0) {
    fsync(dir_fd);
    close(dir_fd);
  }
  return absl::OkStatus();
}

}  // namespace yuebing::master
