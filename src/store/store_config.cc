#include "yuebing/store/store_config.h"

#include <sys/statvfs.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <limits>
#include <nlohmann/json.hpp>
#include <sstream>

#include "absl/strings/ascii.h"
#include "absl/strings/escaping.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "yuebing/common/config.h"
#include "yuebing/common/error_code.h"
#include "yuebing/common/logging.h"
#include "yuebing/common/status.h"
#include "yuebing/common/tenant_key.h"

namespace yuebing::store {
namespace {

using nlohmann::json;

absl::Status Invalid(absl::string_view message) {
  return MakeError(ErrorCode::kInvalidParams, message);
}

// The value of `key` in a JSON object, or null when absent.
const json& Field(const json& object, const char* key) {
  static const json* const kNull = new json(nullptr);
  auto it = object.find(key);
  return it == object.end() ? *kNull : *it;
}

// A JSON scalar as Python's str() writes it (what MooncakeConfig.from_dict does to text fields).
std::string TextOf(const json& value) {
  if (value.is_string()) return value.get<std::string>();
  if (value.is_boolean()) return value.get<bool>() ? "True" : "False";
  return value.dump();
}

// Python truthiness of a JSON value.
bool Truthy(const json& value) {
  if (value.is_null()) return false;
  if (value.is_boolean()) return value.get<bool>();
  if (value.is_number()) return value.get<double>() != 0;
  if (value.is_string()) return !value.get<std::string>().empty();
  if (value.is_array() || value.is_object()) return !value.empty();
  return true;
}

// A size field that must fit setup()'s int64.
absl::StatusOr<int64_t> SizeField(const json& value, const char* name) {
  absl::StatusOr<uint64_t> size = SizeFromValue(value);
  if (!size.ok()) return Invalid(absl::StrCat(name, ": ", size.status().message()));
  if (*size > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
    return Invalid(absl::StrCat(name, ": ", *size, " bytes is too large"));
  }
  return static_cast<int64_t>(*size);
}

absl::StatusOr<std::string> RequiredText(const json& value, const char* name) {
  if (!value.is_string() || absl::StripAsciiWhitespace(value.get<std::string>()).empty()) {
    return Invalid(
        absl::StrCat("config field '", name, "' must be a non-empty string, got ", value.dump()));
  }
  return value.get<std::string>();
}

// An integer field as Python's int() reads it: integers, truncated numbers, booleans, text.
absl::StatusOr<int64_t> IntField(const json& value, const char* name) {
  if (value.is_boolean()) return value.get<bool>() ? 1 : 0;
  if (value.is_number_integer()) return value.get<int64_t>();
  if (value.is_number_float() && std::isfinite(value.get<double>())) {
    return static_cast<int64_t>(value.get<double>());
  }
  int64_t out = 0;
  if (value.is_string() && absl::SimpleAtoi(value.get<std::string>(), &out)) return out;
  return Invalid(absl::StrCat("config field '", name, "' is not an integer: ", value.dump()));
}

absl::StatusOr<bool> BoolField(const json& value, const char* name) {
  absl::StatusOr<bool> flag = BoolFromValue(value);
  if (!flag.ok()) return Invalid(absl::StrCat(name, ": ", flag.status().message()));
  return *flag;
}

// Mooncake's rule for metadata connection strings: P2PHANDSHAKE, a URL, or a bare host:port
// that means etcd.
std::string NormalizeMetadata(const std::string& metadata) {
  if (metadata == "P2PHANDSHAKE" || metadata.find("://") != std::string::npos) return metadata;
  return "etcd://" + metadata;
}

std::optional<std::string> RealGetenv(const char* name) {
  const char* value = std::getenv(name);
  if (value == nullptr) return std::nullopt;
  return std::string(value);
}

}  // namespace

absl::StatusOr<uint64_t> SizeFromValue(const json& value) {
  if (value.is_number_unsigned()) return value.get<uint64_t>();
  if (value.is_number_integer()) {
    if (value.get<int64_t>() < 0) return Invalid(absl::StrCat("invalid size: ", value.dump()));
    return static_cast<uint64_t>(value.get<int64_t>());
  }
  if (value.is_number_float()) {
    const double number = value.get<double>();
    // 2^64 exactly as a double; anything at or above it does not fit.
    if (!(number >= 0) || number >= 18446744073709551616.0) {
      return Invalid(absl::StrCat("invalid size: ", value.dump()));
    }
    return static_cast<uint64_t>(number);
  }
  if (value.is_string()) {
    // get_ref, not get<std::string>(): the view must not outlive a temporary copy.
    const absl::string_view text = absl::StripAsciiWhitespace(value.get_ref<const std::string&>());
    if (text.empty()) return Invalid("invalid size: empty string");
    absl::StatusOr<uint64_t> size = ParseSize(text);
    if (size.ok()) return *size;
    // Upstream's rule for a number without a unit: Python's int(float(text)), so "1.5" is 1
    // byte and "1e9" 10^9 bytes.
    double number = 0;
    if (text.find_first_not_of("0123456789.eE+-") == absl::string_view::npos &&
        absl::SimpleAtod(text, &number) && number >= 0 && number < 18446744073709551616.0) {
      return static_cast<uint64_t>(number);
    }
    return Invalid(size.status().message());
  }
  return Invalid(absl::StrCat("invalid size: ", value.dump()));
}

absl::StatusOr<bool> BoolFromValue(const json& value) {
  if (value.is_boolean()) return value.get<bool>();
  if (value.is_number()) return value.get<double>() != 0;
  if (value.is_null()) return false;
  absl::StatusOr<bool> flag = ParseBool(TextOf(value));
  if (!flag.ok()) return Invalid(absl::StrCat("invalid boolean: ", value.dump()));
  return *flag;
}

bool ShmEnabledByEnvironment() {
  const char* value = std::getenv("YUEBING_ENABLE_SHM");
  if (value == nullptr) return true;
  const std::string v = absl::AsciiStrToLower(value);
  return !(v == "0" || v == "false" || v == "no" || v == "off");
}

absl::StatusOr<StoreConfig> StoreConfig::FromFields(const json& fields) {
  if (!fields.is_object()) return Invalid("config fields must be an object");
  StoreConfig config;
  const json& protocol = Field(fields, "protocol");
  if (!protocol.is_string() || absl::StripAsciiWhitespace(protocol.get<std::string>()).empty()) {
    return Invalid(absl::StrCat("Invalid protocol: ", protocol.dump(),
                                ". Protocol must be a non-empty string, e.g. 'tcp' or 'rdma'."));
  }
  config.protocol = absl::AsciiStrToLower(absl::StripAsciiWhitespace(protocol.get<std::string>()));
  if (config.protocol != "tcp" && config.protocol != "rdma") {
    YB_LOG_WARN("protocol '{}' is not one of tcp, rdma; setup() will reject it", config.protocol);
  }
  YB_ASSIGN_OR_RETURN(config.global_segment_size,
                      SizeField(Field(fields, "global_segment_size"), "global_segment_size"));
  YB_ASSIGN_OR_RETURN(config.local_buffer_size,
                      SizeField(Field(fields, "local_buffer_size"), "local_buffer_size"));
  YB_ASSIGN_OR_RETURN(config.local_hostname,
                      RequiredText(Field(fields, "local_hostname"), "local_hostname"));
  YB_ASSIGN_OR_RETURN(config.metadata_server,
                      RequiredText(Field(fields, "metadata_server"), "metadata_server"));
  YB_ASSIGN_OR_RETURN(
      config.master_server_address,
      RequiredText(Field(fields, "master_server_address"), "master_server_address"));
  const json& device = Field(fields, "device_name");
  if (!device.is_null() && !device.is_string()) {
    return Invalid(absl::StrCat("device_name must be a string, got ", device.dump()));
  }
  config.device_name = device.is_string() ? device.get<std::string>() : "";
  return config;
}

absl::StatusOr<StoreConfig> StoreConfig::FromJson(const json& object) {
  if (!object.is_object()) return Invalid("a store config must be a JSON object");
  for (const char* name : {"local_hostname", "metadata_server", "master_server_address"}) {
    if (!object.contains(name))
      return Invalid(absl::StrCat("Missing required config field: ", name));
  }
  auto get = [&](const char* key, json fallback) {
    return object.contains(key) ? object.at(key) : fallback;
  };
  json core = json::object();
  core["local_hostname"] = object.at("local_hostname");
  core["metadata_server"] = object.at("metadata_server");
  core["global_segment_size"] = get("global_segment_size", kDefaultGlobalSegmentSize);
  core["local_buffer_size"] = get("local_buffer_size", kDefaultLocalBufferSize);
  core["protocol"] = get("protocol", "tcp");
  core["device_name"] = get("device_name", "");
  core["master_server_address"] = object.at("master_server_address");
  // Converted before the core fields are checked, as MooncakeConfig.from_dict does.
  YB_ASSIGN_OR_RETURN(const bool ssd_offload,
                      BoolField(get("enable_ssd_offload", false), "enable_ssd_offload"));
  const json& path = Field(object, "ssd_offload_path");
  const json& tenant = Field(object, "tenant_id");
  YB_ASSIGN_OR_RETURN(const bool http_server, BoolField(get("enable_client_http_server", false),
                                                        "enable_client_http_server"));
  YB_ASSIGN_OR_RETURN(
      const int64_t http_port,
      IntField(get("client_http_port", kDefaultClientHttpPort), "client_http_port"));
  YB_ASSIGN_OR_RETURN(StoreConfig config, FromFields(core));
  config.enable_ssd_offload = ssd_offload;
  config.ssd_offload_path = Truthy(path) ? TextOf(path) : "";
  config.tenant_id = Truthy(tenant) ? TextOf(tenant) : "default";
  config.enable_client_http_server = http_server;
  config.client_http_port = http_port;
  return config;
}

absl::StatusOr<StoreConfig> StoreConfig::FromJsonText(absl::string_view text) {
  json object = json::parse(text.begin(), text.end(), nullptr, /*allow_exceptions=*/false);
  if (object.is_discarded()) return Invalid("the store config is not valid JSON");
  return FromJson(object);
}

absl::StatusOr<StoreConfig> StoreConfig::FromJsonFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    const int error = errno;
    const std::string message = absl::StrCat("cannot read ", path, ": ", std::strerror(error));
    if (error == ENOENT) return absl::NotFoundError(message);
    if (error == EACCES || error == EPERM) return absl::PermissionDeniedError(message);
    return absl::UnavailableError(message);
  }
  std::ostringstream text;
  text << in.rdbuf();
  if (in.bad()) return absl::UnavailableError(absl::StrCat("cannot read ", path));
  return FromJsonText(text.str());
}

absl::StatusOr<StoreConfig> StoreConfig::FromEnvironment(const EnvLookup& getenv) {
  const EnvLookup& env = getenv != nullptr ? getenv : EnvLookup(RealGetenv);
  auto text = [&](const char* name, const char* fallback) { return env(name).value_or(fallback); };
  const std::string path = text("MOONCAKE_CONFIG_PATH", "");
  if (!path.empty()) return FromJsonFile(path);
  const std::string master = text("MOONCAKE_MASTER", "");
  if (master.empty()) {
    return Invalid(
        "Neither the environment variable 'MOONCAKE_CONFIG_PATH' nor 'MOONCAKE_MASTER' is set.");
  }
  auto size = [&](const char* name, int64_t fallback) -> json {
    std::optional<std::string> value = env(name);
    return value ? json(*value) : json(fallback);
  };
  json core = json::object();
  core["local_hostname"] = text("MOONCAKE_LOCAL_HOSTNAME", "localhost");
  core["metadata_server"] = text("MOONCAKE_TE_META_DATA_SERVER", "P2PHANDSHAKE");
  core["global_segment_size"] = size("MOONCAKE_GLOBAL_SEGMENT_SIZE", kDefaultGlobalSegmentSize);
  core["local_buffer_size"] = size("MOONCAKE_LOCAL_BUFFER_SIZE", kDefaultLocalBufferSize);
  core["protocol"] = text("MOONCAKE_PROTOCOL", "tcp");
  core["device_name"] = text("MOONCAKE_DEVICE", "");
  core["master_server_address"] = master;
  YB_ASSIGN_OR_RETURN(const bool ssd_offload, BoolField(text("MOONCAKE_OFFLOAD_ENABLED", "false"),
                                                        "MOONCAKE_OFFLOAD_ENABLED"));
  YB_ASSIGN_OR_RETURN(const bool http_server,
                      BoolField(text("MOONCAKE_ENABLE_CLIENT_HTTP_SERVER", "false"),
                                "MOONCAKE_ENABLE_CLIENT_HTTP_SERVER"));
  YB_ASSIGN_OR_RETURN(const int64_t http_port, IntField(text("MOONCAKE_CLIENT_HTTP_PORT", "9300"),
                                                        "MOONCAKE_CLIENT_HTTP_PORT"));
  YB_ASSIGN_OR_RETURN(StoreConfig config, FromFields(core));
  config.enable_ssd_offload = ssd_offload;
  config.ssd_offload_path = text("MOONCAKE_OFFLOAD_FILE_STORAGE_PATH", "");
  config.tenant_id = text("MOONCAKE_TENANT_ID", "default");
  config.enable_client_http_server = http_server;
  config.client_http_port = http_port;
  return config;
}

absl::StatusOr<StoreConfig> StoreConfig::FromSetupDict(
    const std::map<std::string, std::string>& dict) {
  auto text = [&](const char* key) -> std::optional<std::string> {
    auto it = dict.find(key);
    if (it == dict.end()) return std::nullopt;
    return it->second;
  };
  auto size = [&](const char* key, int64_t* out) -> absl::Status {
    std::optional<std::string> value = text(key);
    if (!value) return absl::OkStatus();
    absl::StatusOr<uint64_t> parsed = ParseSize(*value);
    if (!parsed.ok() || *parsed > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
      return Invalid(absl::StrCat("bad ", key, " '", *value, "'"));
    }
    *out = static_cast<int64_t>(*parsed);
    return absl::OkStatus();
  };
  auto flag = [&](const char* key, bool* out) -> absl::Status {
    std::optional<std::string> value = text(key);
    if (!value) return absl::OkStatus();
    absl::StatusOr<bool> parsed = ParseBool(*value);
    if (!parsed.ok()) return Invalid(parsed.status().message());
    *out = *parsed;
    return absl::OkStatus();
  };
  StoreConfig config;
  config.global_segment_size = kDefaultSetupDictSegmentSize;
  config.local_buffer_size = kDefaultSetupDictSegmentSize;
  config.local_hostname = text("local_hostname").value_or("");
  config.metadata_server = text("metadata_server").value_or("");
  YB_RETURN_IF_ERROR(size("global_segment_size", &config.global_segment_size));
  YB_RETURN_IF_ERROR(size("local_buffer_size", &config.local_buffer_size));
  config.protocol = text("protocol").value_or("tcp");
  // Mooncake's names first; the names of its JSON config file are accepted too.
  config.device_name = text("rdma_devices").value_or(text("device_name").value_or(""));
  config.master_server_address =
      text("master_server_addr")
          .value_or(text("master_server_address").value_or(kDefaultMasterServerAddress));
  config.tenant_id = text("tenant_id").value_or("default");
  YB_RETURN_IF_ERROR(flag("enable_ssd_offload", &config.enable_ssd_offload));
  YB_RETURN_IF_ERROR(flag("enable_client_http_server", &config.enable_client_http_server));
  if (text("enable_shm")) {
    bool shm = true;
    YB_RETURN_IF_ERROR(flag("enable_shm", &shm));
    config.enable_shm = shm;
  }
  return config;
}

absl::Status StoreConfig::Validate() const {
  if (local_hostname.empty()) return Invalid("local_hostname is required");
  if (metadata_server.empty()) return Invalid("metadata_server is required");
  if (master_server_address.empty()) return Invalid("master_server_addr is required");
  if (global_segment_size < 0) return Invalid("global_segment_size must be >= 0");
  if (local_buffer_size < 0) return Invalid("local_buffer_size must be >= 0");
  if (!tenant_id.empty()) {
    if (absl::Status tenant = CheckTenantId(tenant_id); !tenant.ok()) {
      return Invalid(
          absl::StrCat("tenant_id '", absl::CHexEscape(tenant_id), "': ", tenant.message()));
    }
  }
  const std::string normalized = absl::AsciiStrToLower(absl::StripAsciiWhitespace(protocol));
  if (!normalized.empty() && normalized != "tcp" && normalized != "rdma") {
    return Invalid(absl::StrCat("protocol '", protocol, "' is not supported (tcp or rdma)"));
  }
  return absl::OkStatus();
}

absl::StatusOr<ClientConfig> StoreConfig::ToClientConfig() const {
  YB_RETURN_IF_ERROR(Validate());
  if (enable_client_http_server) {
    YB_LOG_WARN("yuebing: the client HTTP server is not supported; ignored");
  }
  ClientConfig config;
  config.tenant_id = tenant_id.empty() ? std::string(kDefaultTenant) : tenant_id;
  config.local_hostname = local_hostname;
  config.metadata_server = NormalizeMetadata(metadata_server);
  config.global_segment_size = static_cast<uint64_t>(global_segment_size);
  config.local_buffer_size = static_cast<uint64_t>(local_buffer_size);
  config.protocol = absl::AsciiStrToLower(absl::StripAsciiWhitespace(protocol));
  if (config.protocol.empty()) config.protocol = "tcp";
  config.device_name = device_name;
  config.master_server_address = master_server_address;
  config.enable_shm = enable_shm.value_or(ShmEnabledByEnvironment());
  if (enable_ssd_offload) YB_RETURN_IF_ERROR(SetUpDiskTier(&config));
  return config;
}

absl::Status StoreConfig::SetUpDiskTier(ClientConfig* config) const {
  if (config->global_segment_size == 0) {
    YB_LOG_WARN(
        "yuebing: enable_ssd_offload needs global_segment_size > 0 (a client that lends "
        "no memory has nothing to spill); ignored");
    return absl::OkStatus();
  }
  std::string path = ssd_offload_path;
  if (path.empty()) path = RealGetenv("MOONCAKE_OFFLOAD_FILE_STORAGE_PATH").value_or("");
  if (path.empty()) {
    return Invalid(
        "enable_ssd_offload needs ssd_offload_path (or MOONCAKE_OFFLOAD_FILE_STORAGE_PATH)");
  }
  uint64_t capacity = kDefaultOffloadCapacity;
  const std::string limit = RealGetenv("MOONCAKE_OFFLOAD_TOTAL_SIZE_LIMIT_BYTES").value_or("");
  if (!limit.empty()) {
    absl::StatusOr<uint64_t> parsed = ParseSize(limit);
    if (!parsed.ok() || *parsed == 0) {
      return Invalid(absl::StrCat("bad MOONCAKE_OFFLOAD_TOTAL_SIZE_LIMIT_BYTES '", limit, "'"));
    }
    capacity = *parsed;
  } else if (struct statvfs fs; statvfs(path.c_str(), &fs) == 0) {
    // Upstream's bound is 2 TB whatever the disk; here at most 90% of what is free now.
    capacity =
        std::min<uint64_t>(capacity, static_cast<uint64_t>(fs.f_bavail) * fs.f_frsize / 10 * 9);
  }
  config->ssd_path = std::move(path);
  config->ssd_capacity = capacity;
  return absl::OkStatus();
}

}  // namespace yuebing::store
