// StoreConfig: a store client's settings as Mooncake's Python API spells them, read from every
// source that API has, defaulted, validated, and translated into a ClientConfig. The Python
// binding only marshals values to and from these functions (docs/python.md):
//   - yuebing.config.MooncakeConfig: its constructor is FromFields, from_dict / from_file are
//     FromJson / FromJsonFile, load_from_env is FromEnvironment;
//   - MooncakeDistributedStore.setup(...): the binding fills the fields from the positional
//     arguments; setup(dict) is FromSetupDict; both end in ToClientConfig.
//
// Errors: kInvalidParams (absl kInvalidArgument) for a missing or malformed value, naming it;
// FromJsonFile (and FromEnvironment through MOONCAKE_CONFIG_PATH) give kNotFound /
// kPermissionDenied / kUnavailable when the file cannot be read.
//
// Thread-safe: pure functions, except that FromEnvironment and ToClientConfig read the process
// environment.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "nlohmann/json_fwd.hpp"
#include "yuebing/store/client.h"

namespace yuebing::store {

// MooncakeConfig's defaults (config file and MOONCAKE_* variables).
inline constexpr int64_t kDefaultGlobalSegmentSize = 3355443200;  // 3.125 GiB
inline constexpr int64_t kDefaultLocalBufferSize = int64_t{1} << 30;
// Upstream's bound on a client's offload files (2 TB).
inline constexpr uint64_t kDefaultOffloadCapacity = uint64_t{2} << 40;
// setup(dict)'s defaults.
inline constexpr int64_t kDefaultSetupDictSegmentSize = int64_t{16} << 20;
inline constexpr char kDefaultMasterServerAddress[] = "127.0.0.1:50051";
inline constexpr int64_t kDefaultClientHttpPort = 9300;

struct StoreConfig {
  std::string local_hostname;
  std::string metadata_server;
  int64_t global_segment_size = 0;
  int64_t local_buffer_size = 0;
  std::string protocol = "tcp";
  std::string device_name;  // setup()'s rdma_devices
  std::string master_server_address;
  // The disk tier of a client lending memory (ClientConfig::ssd_path): spill evicted objects to
  // files under ssd_offload_path (else $MOONCAKE_OFFLOAD_FILE_STORAGE_PATH), at most
  // $MOONCAKE_OFFLOAD_TOTAL_SIZE_LIMIT_BYTES (else kDefaultOffloadCapacity, or 90% of the free
  // space there when less). Ignored, with a warning, when global_segment_size is 0.
  bool enable_ssd_offload = false;
  std::string ssd_offload_path;
  std::string tenant_id = "default";
  bool enable_client_http_server = false;  // accepted and ignored (a warning at setup)
  int64_t client_http_port = kDefaultClientHttpPort;
  // yuebing extension: same-host peers over shared memory; unset means $YUEBING_ENABLE_SHM.
  std::optional<bool> enable_shm;

  // MooncakeConfig's constructor: `fields` is a JSON object with its seven core fields
  // (local_hostname, metadata_server, global_segment_size, local_buffer_size, protocol,
  // device_name, master_server_address; absent means null). Sizes go through SizeFromValue;
  // protocol must be a non-blank string and is trimmed and lower-cased (a protocol other than
  // tcp/rdma is logged, and refused later by ToClientConfig); local_hostname, metadata_server
  // and master_server_address must be non-blank strings (kept as given); device_name null
  // becomes "". Other fields keep their defaults.
  static absl::StatusOr<StoreConfig> FromFields(const nlohmann::json& fields);

  // MooncakeConfig.from_dict: `object` must hold local_hostname, metadata_server and
  // master_server_address; missing sizes default to kDefaultGlobalSegmentSize /
  // kDefaultLocalBufferSize, protocol to "tcp", device_name to "". enable_ssd_offload and
  // enable_client_http_server go through BoolFromValue, client_http_port must be an integer (or
  // integer text), ssd_offload_path and tenant_id are text (empty or null: "" / "default").
  static absl::StatusOr<StoreConfig> FromJson(const nlohmann::json& object);
  // FromJson of a JSON document (MooncakeConfig.from_file's content).
  static absl::StatusOr<StoreConfig> FromJsonText(absl::string_view text);
  static absl::StatusOr<StoreConfig> FromJsonFile(const std::string& path);

  // MooncakeConfig.load_from_env: the file named by MOONCAKE_CONFIG_PATH when it is set and
  // non-empty, else MOONCAKE_MASTER (required, non-empty) and these variables, each with its
  // default when unset: MOONCAKE_LOCAL_HOSTNAME ("localhost"), MOONCAKE_TE_META_DATA_SERVER
  // ("P2PHANDSHAKE"), MOONCAKE_GLOBAL_SEGMENT_SIZE, MOONCAKE_LOCAL_BUFFER_SIZE (the defaults
  // above; units accepted), MOONCAKE_PROTOCOL ("tcp"), MOONCAKE_DEVICE (""),
  // MOONCAKE_OFFLOAD_ENABLED, MOONCAKE_OFFLOAD_FILE_STORAGE_PATH, MOONCAKE_TENANT_ID,
  // MOONCAKE_ENABLE_CLIENT_HTTP_SERVER, MOONCAKE_CLIENT_HTTP_PORT. `getenv` returns a variable's
  // value or nullopt when unset (tests inject one; the default reads the process environment).
  using EnvLookup = std::function<std::optional<std::string>(const char* name)>;
  static absl::StatusOr<StoreConfig> FromEnvironment(const EnvLookup& getenv = nullptr);

  // setup(dict): every value already in text form (the binding passes str() of each non-None
  // value). local_hostname and metadata_server (checked by ToClientConfig), sizes default to
  // kDefaultSetupDictSegmentSize and accept units, protocol "tcp", rdma_devices or device_name,
  // master_server_addr or master_server_address (default kDefaultMasterServerAddress),
  // tenant_id, enable_ssd_offload / enable_client_http_server / enable_shm (ParseBool words).
  static absl::StatusOr<StoreConfig> FromSetupDict(const std::map<std::string, std::string>& dict);

  // What setup() refuses: empty local_hostname, metadata_server or master_server_address,
  // negative sizes, a protocol other than tcp/rdma (after trimming and lower-casing; blank means
  // tcp), a tenant_id that CheckTenantId refuses (empty means "default"; tenants' keys are
  // apart: yuebing/common/tenant_key.h).
  absl::Status Validate() const;

  // Validate(), then the client's configuration: metadata_server normalized (P2PHANDSHAKE and
  // URLs as given, a bare host:port means etcd://host:port), protocol trimmed and lower-cased,
  // enable_shm resolved, the disk tier set up (enable_ssd_offload). Logs a warning for the
  // accepted-and-ignored options. Errors: kInvalidParams (also enable_ssd_offload with no path,
  // or a bad MOONCAKE_OFFLOAD_TOTAL_SIZE_LIMIT_BYTES).
  absl::StatusOr<ClientConfig> ToClientConfig() const;

 private:
  absl::Status SetUpDiskTier(ClientConfig* config) const;
};

// A byte size given as a JSON value (MooncakeConfig's parse_size): a non-negative integer as is,
// a non-negative number truncated, text trimmed and parsed by ParseSize ("16MB", "1.5 GiB").
// Booleans, null, negative numbers and blank text are refused.
absl::StatusOr<uint64_t> SizeFromValue(const nlohmann::json& value);

// A boolean given as a JSON value (MooncakeConfig's parse_bool): a boolean as is, a number is
// true when non-zero, null is false, text goes through ParseBool.
absl::StatusOr<bool> BoolFromValue(const nlohmann::json& value);

// YUEBING_ENABLE_SHM: unset or anything but 0/false/no/off (any case) means shared memory on.
bool ShmEnabledByEnvironment();

}  // namespace yuebing::store
