// MooncakeDistributedStore over store::Client.
//
// Return conventions (Mooncake's): 0 or a negative Mooncake error code for writes and removals;
// bytes read (or a negative code) for reads into buffers; `get` returns b"" on a miss or error;
// is_exist returns 1/0/negative. A store used before setup() or after close() answers
// INVALID_PARAMS (-600) (b"", None or [] for the forms that return data), never crashes.
//
// Threading: every method may be called from any Python thread. The GIL is released for all
// network and copy work. The client is held through a shared_ptr snapshot, so close() racing
// with calls in other threads is safe: those calls finish on the old client, which is destroyed
// (segment unmounted, engine stopped) when the last of them returns.
//
// Configuration: setup()'s arguments and dict are handed to yuebing::store::StoreConfig
// (include/yuebing/store/store_config.h), which holds the defaults, the checks and the translation
// into a ClientConfig; limits come from yuebing/common/limits.h.
#include "store_binding.h"

#include <pybind11/stl.h>
#include <sys/mman.h>

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "binding_util.h"
#include "range_reads.h"
#include "replica_binding.h"
#include "yuebing/common/host_port.h"
#include "yuebing/common/limits.h"
#include "yuebing/common/logging.h"
#include "yuebing/common/mutex.h"
#include "yuebing/common/status.h"
#include "yuebing/master/types.h"
#include "yuebing/store/client.h"
#include "yuebing/store/store_config.h"

namespace yuebing::python {
namespace {

namespace py = pybind11;
using store::Client;

// health_check() results, as Mooncake's.
constexpr int kHealthy = 0;
constexpr int kNotInitialized = 1;
constexpr int kMasterUnreachable = 2;

enum class SoftPinAction { kPreserve = 0, kEnable = 1, kDisable = 2 };

// Upstream's tag of what an object holds (values as upstream's). Upstream records it and never
// acts on it or returns it; yuebing accepts it and does not record it.
enum class ObjectDataType : uint8_t {
  kUnknown = 0,
  kKvCache = 1,
  kTensor = 2,
  kWeight = 3,
  kSample = 4,
  kActivation = 5,
  kGradient = 6,
  kOptimizerState = 7,
  kMetadata = 8,
  kGeneral = 9
};

// Python-side replication settings. Fields are plain and unvalidated so that assigning a bad
// value never raises (except soft_pin_ttl_ms, which takes None or 0..2^64-1 as upstream's does);
// the value is checked when used (INVALID_PARAMS).
struct ReplicateConfig {
  int64_t replica_num = 1;
  bool with_soft_pin = false;
  SoftPinAction soft_pin_action = SoftPinAction::kPreserve;
  // Only with soft_pin_action ENABLE (upstream's rule): the pin's lifetime from the put's end
  // (unset: the master's default_kv_soft_pin_ttl; 0: no pin; above its max_kv_soft_pin_ttl:
  // INVALID_PARAMS from the master).
  std::optional<uint64_t> soft_pin_ttl_ms;
  bool with_hard_pin = false;
  std::string preferred_segment;
  std::vector<std::string> preferred_segments;
  bool prefer_alloc_in_same_node = false;
  // Replicas on NVMe-oF segments and on shared file storage: yuebing has neither tier, so a
  // count above 0 is refused (INVALID_PARAMS) rather than silently written to memory.
  int64_t nof_replica_num = 0;
  int64_t dfs_replica_num = 0;
  std::vector<std::string> preferred_nof_segments;  // only with nof_replica_num
  ObjectDataType data_type = ObjectDataType::kUnknown;
  // Upstream's routing groups of the keys; accepted, not used.
  std::optional<std::vector<std::string>> group_ids;
};

std::string Describe(const ReplicateConfig& c) {
  return absl::StrCat(
      "ReplicateConfig(replica_num=", c.replica_num,
      ", with_soft_pin=", c.with_soft_pin ? "True" : "False",
      ", with_hard_pin=", c.with_hard_pin ? "True" : "False", ", preferred_segment='",
      c.preferred_segment, "'",
      ", prefer_alloc_in_same_node=", c.prefer_alloc_in_same_node ? "True" : "False",
      ", data_type=", static_cast<int>(c.data_type), ")");
}

absl::StatusOr<master::ReplicateConfig> ToMaster(const ReplicateConfig& c, const Client& client) {
  if (c.replica_num < 1 || c.replica_num > int64_t{limits::kMaxReplicas}) {
    return MakeError(ErrorCode::kInvalidParams,
                     absl::StrCat("replica_num must be 1..", limits::kMaxReplicas));
  }
  if (c.nof_replica_num != 0 || c.dfs_replica_num != 0) {
    return MakeError(ErrorCode::kInvalidParams,
                     "nof_replica_num and dfs_replica_num must be 0: yuebing has no NVMe-oF or "
                     "shared-file tier");
  }
  if (c.soft_pin_ttl_ms.has_value() && c.soft_pin_action != SoftPinAction::kEnable) {
    return MakeError(ErrorCode::kInvalidParams,
                     "soft_pin_ttl_ms needs soft_pin_action = SoftPinAction.ENABLE");
  }
  master::ReplicateConfig out;
  out.replica_num = static_cast<uint32_t>(c.replica_num);
  out.with_soft_pin = c.with_soft_pin || c.soft_pin_action == SoftPinAction::kEnable;
  out.soft_pin_ttl_ms = c.soft_pin_ttl_ms;
  out.with_hard_pin = c.with_hard_pin;
  out.preferred_segment = c.preferred_segment;
  out.preferred_segments = c.preferred_segments;
  if (out.preferred_segment.empty() && out.preferred_segments.empty() &&
      c.prefer_alloc_in_same_node) {
    out.preferred_segment = client.SegmentName();
  }
  return out;
}

// The bytes of one stored object, owned by Python (Mooncake's BufferHandle). Exposes the buffer
// protocol (1-D, unsigned bytes, writable).
class BufferHandle {
 public:
  explicit BufferHandle(std::string data) : data_(std::move(data)) {}
  uintptr_t ptr() { return reinterpret_cast<uintptr_t>(data_.data()); }
  size_t size() const { return data_.size(); }
  char* data() { return data_.data(); }

 private:
  std::string data_;
};

// Runs fn(*client) without the GIL and drops the client reference before taking the GIL back,
// so a client closed meanwhile is torn down off the GIL.
template <typename Fn>
auto Released(std::shared_ptr<Client> client, Fn&& fn) {
  py::gil_scoped_release release;
  auto result = fn(*client);
  client.reset();
  return result;
}

// Reads `keys` whole into new bytes objects, made (with the GIL) once the lookup gave their
// sizes, so each value is copied once, from the wire into its bytes object. An empty bytes object
// for a key that could not be read. Called with the GIL held; releases it meanwhile.
std::vector<py::bytes> ReadAsBytes(std::shared_ptr<Client> client,
                                   const std::vector<std::string>& keys) {
  std::vector<py::object> made(keys.size());
  auto allocate = [&made](const std::vector<absl::StatusOr<uint64_t>>& sizes) {
    py::gil_scoped_acquire gil;
    std::vector<Client::Buffer> buffers(sizes.size());
    for (size_t i = 0; i < sizes.size(); ++i) {
      if (!sizes[i].ok() || *sizes[i] > static_cast<uint64_t>(PY_SSIZE_T_MAX)) continue;
      PyObject* bytes = PyBytes_FromStringAndSize(nullptr, static_cast<Py_ssize_t>(*sizes[i]));
      if (bytes == nullptr) {  // no memory for it: that key reads as missing
        PyErr_Clear();
        continue;
      }
      made[i] = py::reinterpret_steal<py::object>(bytes);
      buffers[i] = Client::Buffer{PyBytes_AS_STRING(bytes), *sizes[i]};
    }
    return buffers;
  };
  const std::vector<absl::StatusOr<uint64_t>> read =
      Released(std::move(client), [&](Client& c) { return c.BatchGetAllocated(keys, allocate); });
  std::vector<py::bytes> out;
  out.reserve(keys.size());
  for (size_t i = 0; i < keys.size(); ++i) {
    if (read[i].ok() && made[i]) {
      out.push_back(py::reinterpret_borrow<py::bytes>(made[i]));
    } else {
      out.emplace_back();
    }
  }
  return out;
}

// The host part of "host[:port]" ("[v6]" keeps its brackets); text that does not parse is kept
// whole, for the engine to refuse with its own message.
std::string HostOnly(const std::string& hostname) {
  absl::StatusOr<HostPort> parsed = ParseHostPort(hostname, 0);
  return parsed.ok() ? parsed->HostToString() : hostname;
}

// setup()'s configuration. A store given a Mooncake TransferEngine still runs its own engine;
// that engine's name (host:port) is taken, so only the host is kept.
absl::StatusOr<store::ClientConfig> ToClientConfig(const store::StoreConfig& c, bool engine_given) {
  YB_ASSIGN_OR_RETURN(store::ClientConfig config, c.ToClientConfig());
  if (engine_given) config.local_hostname = HostOnly(config.local_hostname);
  return config;
}

// Mooncake's dict form of setup(): every non-None value as its str().
std::map<std::string, std::string> DictAsText(const py::dict& dict) {
  std::map<std::string, std::string> out;
  for (auto item : dict) {
    if (item.second.is_none()) continue;
    out[py::str(item.first).cast<std::string>()] = py::str(item.second).cast<std::string>();
  }
  return out;
}

void WarnNotReady(const char* method) {
  static std::atomic<bool> warned{false};
  if (!warned.exchange(true)) {
    YB_LOG_WARN(
        "yuebing: MooncakeDistributedStore.{}() called before setup() or after close(); "
        "returning INVALID_PARAMS (-600)",
        method);
  }
}

class DistributedStore {
 public:
  DistributedStore() = default;
  ~DistributedStore() {
    std::shared_ptr<Client> client;
    {
      yuebing::MutexLock lock(&mu_);
      client = std::move(client_);
    }
    if (client != nullptr) {
      py::gil_scoped_release release;
      client.reset();
    }
  }

  // --- lifecycle ---

  int Setup(const store::StoreConfig& options, bool engine_given) {
    absl::StatusOr<store::ClientConfig> config = ToClientConfig(options, engine_given);
    if (!config.ok()) {
      YB_LOG_ERROR("yuebing: setup failed: {}", config.status().message());
      return Code(config.status());
    }
    py::gil_scoped_release release;
    yuebing::MutexLock lifecycle(&lifecycle_mu_);
    if (Acquire() != nullptr) {
      YB_LOG_ERROR("yuebing: setup() called on a store that is already set up; close() it first");
      return kInvalidParams;
    }
    absl::StatusOr<std::unique_ptr<Client>> client = Client::Create(*config);
    if (!client.ok()) {
      YB_LOG_ERROR("yuebing: setup failed: {}", client.status().ToString());
      return Code(client.status());
    }
    yuebing::MutexLock lock(&mu_);
    client_ = std::shared_ptr<Client>(std::move(client).value());
    local_buffer_size_ = config->local_buffer_size;
    return 0;
  }

  // The local_buffer_size given to setup(); None before setup() and after close() (BufferPool
  // sizes its default budget from it).
  std::optional<uint64_t> LocalBufferSize() {
    yuebing::MutexLock lock(&mu_);
    if (client_ == nullptr) return std::nullopt;
    return local_buffer_size_;
  }

  int SetupFromDict(const py::dict& dict) {
    absl::StatusOr<store::StoreConfig> options =
        store::StoreConfig::FromSetupDict(DictAsText(dict));
    if (!options.ok()) {
      YB_LOG_ERROR("yuebing: setup failed: {}", options.status().message());
      return Code(options.status());
    }
    return Setup(*options, /*engine_given=*/false);
  }

  int Close() {
    py::gil_scoped_release release;
    yuebing::MutexLock lifecycle(&lifecycle_mu_);
    std::shared_ptr<Client> client;
    {
      yuebing::MutexLock lock(&mu_);
      client = std::move(client_);
    }
    client.reset();  // last reference: unmounts the segment and stops the engine
    registered_.Clear();
    return 0;
  }

  int HealthCheck() {
    std::shared_ptr<Client> client = Acquire();
    if (client == nullptr) return kNotInitialized;
    bool ok = Released(std::move(client), [](Client& c) { return c.HealthCheck().ok(); });
    return ok ? kHealthy : kMasterUnreachable;
  }

  std::string Hostname() {
    std::shared_ptr<Client> client = Acquire();
    return client == nullptr ? std::string() : client->SegmentName();
  }

  py::dict Stats() {
    py::dict out;
    std::shared_ptr<Client> client = Acquire();
    if (client == nullptr) return out;
    store::ClientStats s = client->Stats();
    out["puts"] = s.puts;
    out["gets"] = s.gets;
    out["hits"] = s.hits;
    out["misses"] = s.misses;
    out["checksum_failures"] = s.checksum_failures;
    out["lease_expired"] = s.lease_expired;
    out["replica_failovers"] = s.replica_failovers;
    out["disk_reads"] = s.disk_reads;
    return out;
  }

  // --- writes ---

  int Put(const std::string& key, py::handle value, const ReplicateConfig& rc, bool upsert) {
    ByteView view(value);
    return PutViews(key, {view.view()}, rc, upsert, upsert ? "upsert" : "put");
  }

  int PutParts(const std::string& key, const py::args& parts, const ReplicateConfig& rc,
               bool upsert) {
    std::vector<ByteView> views = ViewAll(parts);
    std::vector<absl::string_view> pieces;
    for (const ByteView& v : views) pieces.push_back(v.view());
    return PutViews(key, std::move(pieces), rc, upsert, upsert ? "upsert_parts" : "put_parts");
  }

  int PutFrom(const std::string& key, uintptr_t ptr, uint64_t size, const ReplicateConfig& rc,
              bool upsert) {
    if (ptr == 0 || size == 0) return kInvalidParams;
    return PutViews(key, {absl::string_view(static_cast<const char*>(AddressOf(ptr)), size)}, rc,
                    upsert, upsert ? "upsert_from" : "put_from");
  }

  int PutFromWithMetadata(const std::string& key, uintptr_t ptr, uintptr_t metadata_ptr,
                          uint64_t size, uint64_t metadata_size, const ReplicateConfig& rc) {
    if ((ptr == 0 && size > 0) || (metadata_ptr == 0 && metadata_size > 0)) return kInvalidParams;
    // Mooncake's layout: the metadata bytes, then the data bytes.
    std::vector<absl::string_view> pieces;
    if (metadata_size > 0) {
      pieces.emplace_back(static_cast<const char*>(AddressOf(metadata_ptr)), metadata_size);
    }
    if (size > 0) pieces.emplace_back(static_cast<const char*>(AddressOf(ptr)), size);
    return PutViews(key, std::move(pieces), rc, false, "put_from_with_metadata");
  }

  // put_batch / upsert_batch: 0 when every object was written, else the first error.
  int PutBatch(const std::vector<std::string>& keys, const py::sequence& values,
               const ReplicateConfig& rc, bool upsert) {
    if (keys.size() != values.size()) return kInvalidParams;
    std::vector<ByteView> views = ViewAll(values);
    std::vector<std::vector<absl::string_view>> parts;
    parts.reserve(views.size());
    for (const ByteView& v : views) parts.push_back({v.view()});
    for (int code : BatchPutParts(keys, std::move(parts), rc, upsert, "put_batch")) {
      if (code != 0) return code;
    }
    return 0;
  }

  std::vector<int> BatchPutFrom(const std::vector<std::string>& keys,
                                const std::vector<uintptr_t>& ptrs,
                                const std::vector<uint64_t>& sizes, const ReplicateConfig& rc,
                                bool upsert) {
    if (keys.size() != ptrs.size() || keys.size() != sizes.size()) {
      return std::vector<int>(keys.size(), kInvalidParams);
    }
    std::vector<std::vector<absl::string_view>> parts(keys.size());
    for (size_t i = 0; i < keys.size(); ++i) {
      if (ptrs[i] == 0 && sizes[i] > 0) return std::vector<int>(keys.size(), kInvalidParams);
      parts[i].emplace_back(static_cast<const char*>(AddressOf(ptrs[i])), sizes[i]);
    }
    return BatchPutParts(keys, std::move(parts), rc, upsert, "batch_put_from");
  }

  std::vector<int> BatchPutFromMulti(const std::vector<std::string>& keys,
                                     const std::vector<std::vector<uintptr_t>>& ptrs,
                                     const std::vector<std::vector<uint64_t>>& sizes,
                                     const ReplicateConfig& rc, bool upsert) {
    if (keys.size() != ptrs.size() || keys.size() != sizes.size()) {
      return std::vector<int>(keys.size(), kInvalidParams);
    }
    std::vector<std::vector<absl::string_view>> parts(keys.size());
    for (size_t i = 0; i < keys.size(); ++i) {
      if (ptrs[i].size() != sizes[i].size()) return std::vector<int>(keys.size(), kInvalidParams);
      for (size_t j = 0; j < ptrs[i].size(); ++j) {
        if (ptrs[i][j] == 0 && sizes[i][j] > 0) {
          return std::vector<int>(keys.size(), kInvalidParams);
        }
        parts[i].emplace_back(static_cast<const char*>(AddressOf(ptrs[i][j])), sizes[i][j]);
      }
    }
    return BatchPutParts(keys, std::move(parts), rc, upsert, "batch_put_from_multi_buffers");
  }

  // --- reads ---

  py::bytes Get(const std::string& key) {
    std::shared_ptr<Client> client = Acquire();
    if (client == nullptr) {
      WarnNotReady("get");
      return py::bytes();
    }
    return std::move(ReadAsBytes(std::move(client), {key})[0]);
  }

  py::list GetBatch(const std::vector<std::string>& keys) {
    py::list out;
    std::shared_ptr<Client> client = Acquire();
    if (client == nullptr) {
      WarnNotReady("get_batch");
      for (size_t i = 0; i < keys.size(); ++i) out.append(py::bytes());
      return out;
    }
    if (keys.empty()) return out;
    for (py::bytes& value : ReadAsBytes(std::move(client), keys)) out.append(std::move(value));
    return out;
  }

  py::object GetBuffer(const std::string& key) {
    std::shared_ptr<Client> client = Acquire();
    if (client == nullptr) {
      WarnNotReady("get_buffer");
      return py::none();
    }
    absl::StatusOr<std::string> value =
        Released(std::move(client), [&](Client& c) { return c.Get(key); });
    if (!value.ok()) return py::none();
    return py::cast(std::make_shared<BufferHandle>(std::move(value).value()));
  }

  py::list BatchGetBuffer(const std::vector<std::string>& keys) {
    py::list out;
    std::shared_ptr<Client> client = Acquire();
    if (client == nullptr) {
      WarnNotReady("batch_get_buffer");
      for (size_t i = 0; i < keys.size(); ++i) out.append(py::none());
      return out;
    }
    if (keys.empty()) return out;
    auto values = Released(std::move(client), [&](Client& c) { return c.BatchGet(keys); });
    for (auto& value : values) {
      if (value.ok()) {
        out.append(py::cast(std::make_shared<BufferHandle>(std::move(value).value())));
      } else {
        out.append(py::none());
      }
    }
    return out;
  }

  int64_t GetInto(const std::string& key, uintptr_t ptr, uint64_t size) {
    std::shared_ptr<Client> client = Acquire();
    if (client == nullptr) return NotReady("get_into");
    if (ptr == 0) return kInvalidParams;
    absl::StatusOr<uint64_t> read = Released(
        std::move(client), [&](Client& c) { return c.GetInto(key, AddressOf(ptr), size); });
    return read.ok() ? static_cast<int64_t>(*read) : Code(read.status());
  }

  std::vector<int64_t> BatchGetInto(const std::vector<std::string>& keys,
                                    const std::vector<uintptr_t>& ptrs,
                                    const std::vector<uint64_t>& sizes) {
    if (keys.size() != ptrs.size() || keys.size() != sizes.size()) {
      return std::vector<int64_t>(keys.size(), kInvalidParams);
    }
    std::vector<std::vector<Client::Buffer>> buffers(keys.size());
    for (size_t i = 0; i < keys.size(); ++i) {
      if (ptrs[i] == 0) return std::vector<int64_t>(keys.size(), kInvalidParams);
      buffers[i].push_back(Client::Buffer{AddressOf(ptrs[i]), sizes[i]});
    }
    return BatchRead(keys, std::move(buffers), "batch_get_into");
  }

  std::vector<int64_t> BatchGetIntoMulti(const std::vector<std::string>& keys,
                                         const std::vector<std::vector<uintptr_t>>& ptrs,
                                         const std::vector<std::vector<uint64_t>>& sizes) {
    if (keys.size() != ptrs.size() || keys.size() != sizes.size()) {
      return std::vector<int64_t>(keys.size(), kInvalidParams);
    }
    std::vector<std::vector<Client::Buffer>> buffers(keys.size());
    for (size_t i = 0; i < keys.size(); ++i) {
      if (ptrs[i].size() != sizes[i].size()) {
        return std::vector<int64_t>(keys.size(), kInvalidParams);
      }
      for (size_t j = 0; j < ptrs[i].size(); ++j) {
        if (ptrs[i][j] == 0) return std::vector<int64_t>(keys.size(), kInvalidParams);
        buffers[i].push_back(Client::Buffer{AddressOf(ptrs[i][j]), sizes[i][j]});
      }
    }
    return BatchRead(keys, std::move(buffers), "batch_get_into_multi_buffers");
  }

  // --- metadata ---

  int IsExist(const std::string& key) {
    std::shared_ptr<Client> client = Acquire();
    if (client == nullptr) return NotReady("is_exist");
    absl::StatusOr<bool> exists =
        Released(std::move(client), [&](Client& c) { return c.IsExist(key); });
    return exists.ok() ? (*exists ? 1 : 0) : Code(exists.status());
  }

  std::vector<int> BatchIsExist(const std::vector<std::string>& keys) {
    std::shared_ptr<Client> client = Acquire();
    if (client == nullptr) {
      WarnNotReady("batch_is_exist");
      return std::vector<int>(keys.size(), kInvalidParams);
    }
    if (keys.empty()) return {};
    auto exists = Released(std::move(client), [&](Client& c) { return c.BatchIsExist(keys); });
    std::vector<int> out;
    out.reserve(exists.size());
    for (const auto& e : exists) out.push_back(e.ok() ? (*e ? 1 : 0) : Code(e.status()));
    return out;
  }

  int64_t GetSize(const std::string& key) {
    std::shared_ptr<Client> client = Acquire();
    if (client == nullptr) return NotReady("get_size");
    absl::StatusOr<uint64_t> size =
        Released(std::move(client), [&](Client& c) { return c.GetSize(key); });
    return size.ok() ? static_cast<int64_t>(*size) : Code(size.status());
  }

  int Remove(const std::string& key, bool force) {
    std::shared_ptr<Client> client = Acquire();
    if (client == nullptr) return NotReady("remove");
    return Code(Released(std::move(client), [&](Client& c) { return c.Remove(key, force); }));
  }

  int64_t RemoveByRegex(const std::string& pattern, bool force) {
    std::shared_ptr<Client> client = Acquire();
    if (client == nullptr) return NotReady("remove_by_regex");
    absl::StatusOr<uint64_t> removed =
        Released(std::move(client), [&](Client& c) { return c.RemoveByRegex(pattern, force); });
    return removed.ok() ? static_cast<int64_t>(*removed) : Code(removed.status());
  }

  int64_t RemoveAll(bool force) {
    std::shared_ptr<Client> client = Acquire();
    if (client == nullptr) return NotReady("remove_all");
    absl::StatusOr<uint64_t> removed =
        Released(std::move(client), [&](Client& c) { return c.RemoveAll(force); });
    return removed.ok() ? static_cast<int64_t>(*removed) : Code(removed.status());
  }

  std::vector<int> BatchRemove(const std::vector<std::string>& keys, bool force) {
    std::shared_ptr<Client> client = Acquire();
    if (client == nullptr) {
      WarnNotReady("batch_remove");
      return std::vector<int>(keys.size(), kInvalidParams);
    }
    if (keys.empty()) return {};
    return Codes(
        Released(std::move(client), [&](Client& c) { return c.BatchRemove(keys, force); }));
  }

  // --- replicas ---
  // get_replica_desc: [] for a miss, an error, or a store not set up (as upstream).
  std::vector<ReplicaDescriptor> GetReplicaDesc(const std::string& key) {
    std::shared_ptr<Client> client = Acquire();
    if (client == nullptr) {
      WarnNotReady("get_replica_desc");
      return {};
    }
    auto found =
        Released(std::move(client), [&](Client& c) { return c.BatchQueryReplicas({key}); });
    return found[0].ok() ? DescribeReplicas(*found[0]) : std::vector<ReplicaDescriptor>{};
  }

  // batch_get_replica_desc: keys found only (a miss or an error leaves its key out).
  std::map<std::string, std::vector<ReplicaDescriptor>> BatchGetReplicaDesc(
      const std::vector<std::string>& keys) {
    std::map<std::string, std::vector<ReplicaDescriptor>> out;
    std::shared_ptr<Client> client = Acquire();
    if (client == nullptr) {
      WarnNotReady("batch_get_replica_desc");
      return out;
    }
    if (keys.empty()) return out;
    auto found = Released(std::move(client), [&](Client& c) { return c.BatchQueryReplicas(keys); });
    for (size_t i = 0; i < keys.size(); ++i) {
      if (found[i].ok()) out[keys[i]] = DescribeReplicas(*found[i]);
    }
    return out;
  }

  // --- copy and move tasks: (task id, 0) or ((0, 0), error); (response, 0) or (None, error) ---
  py::tuple CreateCopyTask(const std::string& key, const std::vector<std::string>& targets) {
    std::shared_ptr<Client> client = Acquire();
    if (client == nullptr) return TaskResult(NotReady("create_copy_task"));
    return TaskResult(
        Released(std::move(client), [&](Client& c) { return c.CreateCopyTask(key, targets); }));
  }
  py::tuple CreateMoveTask(const std::string& key, const std::string& source,
                           const std::string& target) {
    std::shared_ptr<Client> client = Acquire();
    if (client == nullptr) return TaskResult(NotReady("create_move_task"));
    return TaskResult(Released(std::move(client),
                               [&](Client& c) { return c.CreateMoveTask(key, source, target); }));
  }
  py::tuple QueryTask(const std::pair<uint64_t, uint64_t>& task_id) {
    std::shared_ptr<Client> client = Acquire();
    if (client == nullptr) return py::make_tuple(py::none(), NotReady("query_task"));
    const std::string client_id = client->Id();
    absl::StatusOr<store::TaskInfo> info = Released(std::move(client), [&](Client& c) {
      return c.QueryTask(store::TaskId{task_id.first, task_id.second});
    });
    if (!info.ok()) return py::make_tuple(py::none(), Code(info.status()));
    return py::make_tuple(QueryTaskResponse{*info, ClientIdAsPair(client_id)}, 0);
  }

  // batch_replica_clear: the keys whose replicas were dropped, in order.
  std::vector<std::string> BatchReplicaClear(const std::vector<std::string>& keys,
                                             const std::string& segment_name) {
    std::shared_ptr<Client> client = Acquire();
    if (client == nullptr) {
      WarnNotReady("batch_replica_clear");
      return {};
    }
    if (keys.empty()) return {};
    std::vector<absl::Status> cleared = Released(
        std::move(client), [&](Client& c) { return c.BatchReplicaClear(keys, segment_name); });
    std::vector<std::string> out;
    for (size_t i = 0; i < keys.size(); ++i) {
      if (cleared[i].ok()) out.push_back(keys[i]);
    }
    return out;
  }

  // --- memory ---

  // Mooncake reports every registration failure (overlap, unknown address) as INVALID_PARAMS.
  int RegisterBuffer(uintptr_t ptr, uint64_t size) {
    std::shared_ptr<Client> client = Acquire();
    if (client == nullptr) return NotReady("register_buffer");
    if (ptr == 0 || size == 0) return kInvalidParams;
    absl::Status status = Released(
        std::move(client), [&](Client& c) { return c.RegisterBuffer(AddressOf(ptr), size); });
    if (!status.ok()) {
      YB_LOG_WARN("yuebing: register_buffer failed: {}", status.ToString());
      return kInvalidParams;
    }
    registered_.Add(ptr, size);
    return 0;
  }

  int UnregisterBuffer(uintptr_t ptr) {
    std::shared_ptr<Client> client = Acquire();
    if (client == nullptr) return NotReady("unregister_buffer");
    absl::Status status =
        Released(std::move(client), [&](Client& c) { return c.UnregisterBuffer(AddressOf(ptr)); });
    if (!status.ok()) return kInvalidParams;
    registered_.Remove(ptr);
    return 0;
  }

  // --- read sessions (Client::StartReadSessions) ---

  std::vector<int> BatchGetSessionStart(const std::vector<std::string>& keys) {
    std::shared_ptr<Client> client = Acquire();
    if (client == nullptr) {
      WarnNotReady("batch_get_session_start");
      return std::vector<int>(keys.size(), kInvalidParams);
    }
    if (keys.empty()) return {};
    return Codes(Released(std::move(client), [&](Client& c) { return c.StartReadSessions(keys); }));
  }

  // batch_get_into_multi_buffer_ranges (range_reads.h).
  std::vector<int64_t> BatchGetIntoMultiBufferRanges(
      const std::vector<std::string>& keys, const std::vector<std::vector<uintptr_t>>& ptrs,
      const std::vector<std::vector<uint64_t>>& sizes,
      const std::vector<std::vector<uint64_t>>& src_offsets) {
    std::shared_ptr<Client> client = Acquire();
    if (client == nullptr) {
      WarnNotReady("batch_get_into_multi_buffer_ranges");
      return std::vector<int64_t>(keys.size(), kInvalidParams);
    }
    return Released(std::move(client), [&](Client& c) {
      return SessionRanges([&c](const auto& k, const auto& r) { return c.ReadSessionRanges(k, r); },
                           keys, ptrs, sizes, src_offsets);
    });
  }

  // 0, also for keys without a session (upstream's single return code).
  int BatchGetSessionEnd(const std::vector<std::string>& keys) {
    std::shared_ptr<Client> client = Acquire();
    if (client == nullptr) return NotReady("batch_get_session_end");
    Released(std::move(client), [&](Client& c) {
      c.EndReadSessions(keys);
      return 0;
    });
    return 0;
  }

  // --- put sessions (Client::StartPutSessions) ---

  std::vector<int> BatchPutSessionStart(const std::vector<std::string>& keys,
                                        const std::vector<uint64_t>& sizes,
                                        const ReplicateConfig& rc) {
    std::shared_ptr<Client> client = Acquire();
    if (client == nullptr) {
      WarnNotReady("batch_put_session_start");
      return std::vector<int>(keys.size(), kInvalidParams);
    }
    if (keys.empty()) return {};
    absl::StatusOr<master::ReplicateConfig> config = ToMaster(rc, *client);
    if (!config.ok()) return std::vector<int>(keys.size(), Code(config.status()));
    return Codes(Released(std::move(client),
                          [&](Client& c) { return c.StartPutSessions(keys, sizes, *config); }));
  }

  // batch_put_from_multi_buffer_ranges (range_reads.h).
  std::vector<int64_t> BatchPutFromMultiBufferRanges(
      const std::vector<std::string>& keys, const std::vector<std::vector<uintptr_t>>& ptrs,
      const std::vector<std::vector<uint64_t>>& sizes,
      const std::vector<std::vector<uint64_t>>& dst_offsets) {
    std::shared_ptr<Client> client = Acquire();
    if (client == nullptr) {
      WarnNotReady("batch_put_from_multi_buffer_ranges");
      return std::vector<int64_t>(keys.size(), kInvalidParams);
    }
    return Released(std::move(client), [&](Client& c) {
      return SessionRanges(
          [&c](const auto& k, const auto& r) { return c.WritePutSessionRanges(k, r); }, keys, ptrs,
          sizes, dst_offsets);
    });
  }

  // batch_put_session_end (end = true) and batch_put_session_revoke.
  std::vector<int> FinishPutSessions(const std::vector<std::string>& keys, bool end) {
    std::shared_ptr<Client> client = Acquire();
    if (client == nullptr) {
      WarnNotReady(end ? "batch_put_session_end" : "batch_put_session_revoke");
      return std::vector<int>(keys.size(), kInvalidParams);
    }
    if (keys.empty()) return {};
    return Codes(Released(std::move(client), [&](Client& c) {
      return end ? c.EndPutSessions(keys) : c.RevokePutSessions(keys);
    }));
  }

  // get_into_ranges (range_reads.h): every fragment -600 before setup().
  RangeResults GetIntoRanges(const std::vector<uintptr_t>& buffer_ptrs,
                             const std::vector<std::vector<std::string>>& all_keys,
                             const std::vector<std::vector<std::vector<uint64_t>>>& dst_offsets,
                             const std::vector<std::vector<std::vector<uint64_t>>>& src_offsets,
                             const std::vector<std::vector<std::vector<uint64_t>>>& sizes) {
    std::shared_ptr<Client> client = Acquire();
    if (client == nullptr) {
      WarnNotReady("get_into_ranges");
      return ReadRanges(nullptr, registered_, buffer_ptrs, all_keys, dst_offsets, src_offsets,
                        sizes);
    }
    return Released(std::move(client), [&](Client& c) {
      return ReadRanges(&c, registered_, buffer_ptrs, all_keys, dst_offsets, src_offsets, sizes);
    });
  }

 private:
  std::shared_ptr<Client> Acquire() {
    yuebing::MutexLock lock(&mu_);
    return client_;
  }

  static py::tuple TaskResult(const absl::StatusOr<store::TaskId>& id) {
    if (!id.ok()) return py::make_tuple(py::make_tuple(0, 0), Code(id.status()));
    return py::make_tuple(py::make_tuple(id->hi, id->lo), 0);
  }
  static py::tuple TaskResult(int code) { return py::make_tuple(py::make_tuple(0, 0), code); }

  static int NotReady(const char* method) {
    WarnNotReady(method);
    return kInvalidParams;
  }

  int PutViews(const std::string& key, std::vector<absl::string_view> pieces,
               const ReplicateConfig& rc, bool upsert, const char* method) {
    std::shared_ptr<Client> client = Acquire();
    if (client == nullptr) return NotReady(method);
    absl::StatusOr<master::ReplicateConfig> config = ToMaster(rc, *client);
    if (!config.ok()) return Code(config.status());
    return Code(Released(std::move(client), [&](Client& c) {
      return c.BatchPutParts({key}, {std::move(pieces)}, *config, upsert)[0];
    }));
  }

  std::vector<int> BatchPutParts(const std::vector<std::string>& keys,
                                 std::vector<std::vector<absl::string_view>> parts,
                                 const ReplicateConfig& rc, bool upsert, const char* method) {
    std::shared_ptr<Client> client = Acquire();
    if (client == nullptr) {
      WarnNotReady(method);
      return std::vector<int>(keys.size(), kInvalidParams);
    }
    if (keys.empty()) return {};
    absl::StatusOr<master::ReplicateConfig> config = ToMaster(rc, *client);
    if (!config.ok()) return std::vector<int>(keys.size(), Code(config.status()));
    return Codes(Released(std::move(client), [&](Client& c) {
      return c.BatchPutParts(keys, parts, *config, upsert);
    }));
  }

  std::vector<int64_t> BatchRead(const std::vector<std::string>& keys,
                                 std::vector<std::vector<Client::Buffer>> buffers,
                                 const char* method) {
    std::shared_ptr<Client> client = Acquire();
    if (client == nullptr) {
      WarnNotReady(method);
      return std::vector<int64_t>(keys.size(), kInvalidParams);
    }
    if (keys.empty()) return {};
    auto read =
        Released(std::move(client), [&](Client& c) { return c.BatchGetIntoParts(keys, buffers); });
    std::vector<int64_t> out;
    out.reserve(read.size());
    for (const auto& r : read) out.push_back(r.ok() ? static_cast<int64_t>(*r) : Code(r.status()));
    return out;
  }

  yuebing::Mutex lifecycle_mu_;  // serializes setup() and close(); never taken with the GIL held
  yuebing::Mutex mu_;            // guards client_; held only for pointer copies
  std::shared_ptr<Client> client_ ABSL_GUARDED_BY(mu_);
  uint64_t local_buffer_size_ ABSL_GUARDED_BY(mu_) = 0;
  RegisteredRegions registered_;  // what register_buffer registered (bounds get_into_ranges)
};

// Page-aligned host memory for callers that want memory from the store's allocator
// (Mooncake's MooncakeHostMemAllocator). Thread-safe.
class HostMemAllocator {
 public:
  ~HostMemAllocator() {
    yuebing::MutexLock lock(&mu_);
    for (auto& [addr, length] : regions_) munmap(reinterpret_cast<void*>(addr), length);
  }

  // Returns the address, or 0 on failure (size 0, no memory).
  uintptr_t Alloc(uint64_t size) {
    if (size == 0) return 0;
    void* p = mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) return 0;
    yuebing::MutexLock lock(&mu_);
    regions_[reinterpret_cast<uintptr_t>(p)] = size;
    return reinterpret_cast<uintptr_t>(p);
  }

  // 0, or -1 for an address this allocator did not return (nothing freed).
  int Free(uintptr_t addr) {
    uint64_t length = 0;
    {
      yuebing::MutexLock lock(&mu_);
      auto it = regions_.find(addr);
      if (it == regions_.end()) return -1;
      length = it->second;
      regions_.erase(it);
    }
    munmap(reinterpret_cast<void*>(addr), length);
    return 0;
  }

 private:
  yuebing::Mutex mu_;
  absl::flat_hash_map<uintptr_t, uint64_t> regions_ ABSL_GUARDED_BY(mu_);
};

}  // namespace

void BindStore(py::module_& m) {
  BindReplicaTypes(m);
  py::enum_<SoftPinAction>(m, "SoftPinAction")
      .value("PRESERVE", SoftPinAction::kPreserve)
      .value("ENABLE", SoftPinAction::kEnable)
      .value("DISABLE", SoftPinAction::kDisable);

  py::enum_<ObjectDataType>(m, "ObjectDataType")
      .value("UNKNOWN", ObjectDataType::kUnknown)
      .value("KVCACHE", ObjectDataType::kKvCache)
      .value("TENSOR", ObjectDataType::kTensor)
      .value("WEIGHT", ObjectDataType::kWeight)
      .value("SAMPLE", ObjectDataType::kSample)
      .value("ACTIVATION", ObjectDataType::kActivation)
      .value("GRADIENT", ObjectDataType::kGradient)
      .value("OPTIMIZER_STATE", ObjectDataType::kOptimizerState)
      .value("METADATA", ObjectDataType::kMetadata)
      .value("GENERAL", ObjectDataType::kGeneral);

  py::class_<ReplicateConfig>(m, "ReplicateConfig",
                              "Replication settings of a write (Mooncake's ReplicateConfig).")
      .def(py::init<>())
      .def_readwrite("replica_num", &ReplicateConfig::replica_num)
      .def_readwrite("with_soft_pin", &ReplicateConfig::with_soft_pin)
      .def_readwrite("soft_pin_action", &ReplicateConfig::soft_pin_action)
      .def_readwrite("soft_pin_ttl_ms", &ReplicateConfig::soft_pin_ttl_ms)
      .def_readwrite("with_hard_pin", &ReplicateConfig::with_hard_pin)
      .def_readwrite("preferred_segment", &ReplicateConfig::preferred_segment)
      .def_readwrite("preferred_segments", &ReplicateConfig::preferred_segments)
      .def_readwrite("prefer_alloc_in_same_node", &ReplicateConfig::prefer_alloc_in_same_node)
      .def_readwrite("nof_replica_num", &ReplicateConfig::nof_replica_num)
      .def_readwrite("dfs_replica_num", &ReplicateConfig::dfs_replica_num)
      .def_readwrite("preferred_nof_segments", &ReplicateConfig::preferred_nof_segments)
      .def_readwrite("data_type", &ReplicateConfig::data_type)
      .def_readwrite("group_ids", &ReplicateConfig::group_ids)
      .def("__str__", &Describe)
      .def("__repr__", &Describe);

  py::class_<BufferHandle, std::shared_ptr<BufferHandle>>(m, "BufferHandle", py::buffer_protocol(),
                                                          "Bytes of one object (buffer protocol).")
      .def("ptr", &BufferHandle::ptr)
      .def("size", &BufferHandle::size)
      .def("__len__", &BufferHandle::size)
      .def_buffer([](BufferHandle& b) {
        return py::buffer_info(b.data(), 1, py::format_descriptor<uint8_t>::format(), 1,
                               {static_cast<py::ssize_t>(b.size())}, {py::ssize_t{1}},
                               /*readonly=*/false);
      });

  py::class_<HostMemAllocator>(m, "MooncakeHostMemAllocator")
      .def(py::init<>())
      .def("alloc", &HostMemAllocator::Alloc, py::arg("size"))
      .def("free", &HostMemAllocator::Free, py::arg("ptr"));

  const ReplicateConfig kDefault{};
  using S = DistributedStore;
  py::class_<S>(m, "MooncakeDistributedStore")
      .def(py::init<>())
      .def(
          "setup",
          [](S& self, const std::string& local_hostname, const std::string& metadata_server,
             int64_t global_segment_size, int64_t local_buffer_size, const std::string& protocol,
             const std::string& rdma_devices, const std::string& master_server_addr,
             const py::object& engine, bool enable_ssd_offload, const std::string& ssd_offload_path,
             const std::string& tenant_id, bool enable_client_http_server, int client_http_port) {
            store::StoreConfig o;
            o.local_hostname = local_hostname;
            o.metadata_server = metadata_server;
            o.global_segment_size = global_segment_size;
            o.local_buffer_size = local_buffer_size;
            o.protocol = protocol;
            o.device_name = rdma_devices;
            o.master_server_address = master_server_addr;
            o.enable_ssd_offload = enable_ssd_offload;
            o.ssd_offload_path = ssd_offload_path;
            o.tenant_id = tenant_id;
            o.enable_client_http_server = enable_client_http_server;
            o.client_http_port = client_http_port;
            return self.Setup(o, /*engine_given=*/!engine.is_none());
          },
          py::arg("local_hostname"), py::arg("metadata_server"), py::arg("global_segment_size"),
          py::arg("local_buffer_size"), py::arg("protocol"), py::arg("rdma_devices"),
          py::arg("master_server_addr"), py::arg("engine") = py::none(),
          py::arg("enable_ssd_offload") = false, py::arg("ssd_offload_path") = "",
          py::arg("tenant_id") = "default", py::arg("enable_client_http_server") = false,
          py::arg("client_http_port") = 9300,
          "Connects to the master and starts the transfer engine. Returns 0 or an error code.")
      .def("setup", &S::SetupFromDict, py::arg("config"),
           "Dict form: local_hostname and metadata_server required; global_segment_size and "
           "local_buffer_size (default 16MB, units accepted), protocol ('tcp'), rdma_devices, "
           "master_server_addr ('127.0.0.1:50051').")
      .def("close", &S::Close)
      .def("health_check", &S::HealthCheck,
           "0 healthy, 1 not set up or closed, 2 master unreachable.")
      .def("get_hostname", &S::Hostname)
      .def("_local_buffer_size", &S::LocalBufferSize)
      .def("stats", &S::Stats, "yuebing extension: client counters (hits, misses, ...).")
      // writes
      .def(
          "put",
          [](S& self, const std::string& key, py::handle value, const ReplicateConfig& rc) {
            return self.Put(key, value, rc, false);
          },
          py::arg("key"), py::arg("value"), py::arg("config") = kDefault)
      .def(
          "upsert",
          [](S& self, const std::string& key, py::handle value, const ReplicateConfig& rc) {
            return self.Put(key, value, rc, true);
          },
          py::arg("key"), py::arg("value"), py::arg("config") = kDefault)
      .def(
          "put_parts",
          [](S& self, const std::string& key, const py::args& parts, const ReplicateConfig& rc) {
            return self.PutParts(key, parts, rc, false);
          },
          py::arg("key"), py::arg("config") = kDefault)
      .def(
          "upsert_parts",
          [](S& self, const std::string& key, const py::args& parts, const ReplicateConfig& rc) {
            return self.PutParts(key, parts, rc, true);
          },
          py::arg("key"), py::arg("config") = kDefault)
      .def(
          "put_batch",
          [](S& self, const std::vector<std::string>& keys, const py::sequence& values,
             const ReplicateConfig& rc) { return self.PutBatch(keys, values, rc, false); },
          py::arg("keys"), py::arg("values"), py::arg("config") = kDefault)
      .def(
          "upsert_batch",
          [](S& self, const std::vector<std::string>& keys, const py::sequence& values,
             const ReplicateConfig& rc) { return self.PutBatch(keys, values, rc, true); },
          py::arg("keys"), py::arg("values"), py::arg("config") = kDefault)
      .def(
          "put_from",
          [](S& self, const std::string& key, uintptr_t ptr, uint64_t size,
             const ReplicateConfig& rc) { return self.PutFrom(key, ptr, size, rc, false); },
          py::arg("key"), py::arg("buffer_ptr"), py::arg("size"), py::arg("config") = kDefault)
      .def(
          "upsert_from",
          [](S& self, const std::string& key, uintptr_t ptr, uint64_t size,
             const ReplicateConfig& rc) { return self.PutFrom(key, ptr, size, rc, true); },
          py::arg("key"), py::arg("buffer_ptr"), py::arg("size"), py::arg("config") = kDefault)
      .def("put_from_with_metadata", &S::PutFromWithMetadata, py::arg("key"), py::arg("buffer_ptr"),
           py::arg("metadata_buffer_ptr"), py::arg("size"), py::arg("metadata_size"),
           py::arg("config") = kDefault)
      .def(
          "batch_put_from",
          [](S& self, const std::vector<std::string>& keys, const std::vector<uintptr_t>& ptrs,
             const std::vector<uint64_t>& sizes,
             const ReplicateConfig& rc) { return self.BatchPutFrom(keys, ptrs, sizes, rc, false); },
          py::arg("keys"), py::arg("buffer_ptrs"), py::arg("sizes"), py::arg("config") = kDefault)
      .def(
          "batch_upsert_from",
          [](S& self, const std::vector<std::string>& keys, const std::vector<uintptr_t>& ptrs,
             const std::vector<uint64_t>& sizes,
             const ReplicateConfig& rc) { return self.BatchPutFrom(keys, ptrs, sizes, rc, true); },
          py::arg("keys"), py::arg("buffer_ptrs"), py::arg("sizes"), py::arg("config") = kDefault)
      .def(
          "batch_put_from_multi_buffers",
          [](S& self, const std::vector<std::string>& keys,
             const std::vector<std::vector<uintptr_t>>& ptrs,
             const std::vector<std::vector<uint64_t>>& sizes, const ReplicateConfig& rc) {
            return self.BatchPutFromMulti(keys, ptrs, sizes, rc, false);
          },
          py::arg("keys"), py::arg("all_buffer_ptrs"), py::arg("all_sizes"),
          py::arg("config") = kDefault)
      .def(
          "batch_upsert_from_multi_buffers",
          [](S& self, const std::vector<std::string>& keys,
             const std::vector<std::vector<uintptr_t>>& ptrs,
             const std::vector<std::vector<uint64_t>>& sizes, const ReplicateConfig& rc) {
            return self.BatchPutFromMulti(keys, ptrs, sizes, rc, true);
          },
          py::arg("keys"), py::arg("all_buffer_ptrs"), py::arg("all_sizes"),
          py::arg("config") = kDefault)
      // reads
      .def("get", &S::Get, py::arg("key"))
      .def("get_batch", &S::GetBatch, py::arg("keys"))
      .def("get_buffer", &S::GetBuffer, py::arg("key"))
      .def("batch_get_buffer", &S::BatchGetBuffer, py::arg("keys"))
      .def("get_into", &S::GetInto, py::arg("key"), py::arg("buffer_ptr"), py::arg("size"))
      .def("batch_get_session_start", &S::BatchGetSessionStart, py::arg("keys"),
           "Looks the keys up once and holds their read leases for "
           "batch_get_into_multi_buffer_ranges: 0 per key, or its error.")
      .def("batch_get_into_multi_buffer_ranges", &S::BatchGetIntoMultiBufferRanges, py::arg("keys"),
           py::arg("all_buffer_ptrs"), py::arg("all_sizes"), py::arg("all_src_offsets"),
           "Reads byte ranges of keys with read sessions: per key the bytes read or an error.")
      .def("batch_get_session_end", &S::BatchGetSessionEnd, py::arg("keys"),
           "Ends the keys' read sessions and releases their leases; 0.")
      .def("batch_put_session_start", &S::BatchPutSessionStart, py::arg("keys"), py::arg("sizes"),
           py::arg("config") = kDefault,
           "Reserves the objects (full sizes) for batch_put_from_multi_buffer_ranges: 0 per key, "
           "or its error.")
      .def("batch_put_from_multi_buffer_ranges", &S::BatchPutFromMultiBufferRanges, py::arg("keys"),
           py::arg("all_buffer_ptrs"), py::arg("all_sizes"), py::arg("all_dst_offsets"),
           "Writes byte ranges of keys with put sessions: per key the bytes written or an error.")
      .def(
          "batch_put_session_end",
          [](S& self, const std::vector<std::string>& keys) {
            return self.FinishPutSessions(keys, true);
          },
          py::arg("keys"),
          "Makes the objects readable once their ranges cover every byte: 0 per key, or its "
          "error (-600 when not covered: the session stays).")
      .def(
          "batch_put_session_revoke",
          [](S& self, const std::vector<std::string>& keys) {
            return self.FinishPutSessions(keys, false);
          },
          py::arg("keys"), "Abandons the puts and frees their space: 0 per key, or its error.")
      .def("get_into_ranges", &S::GetIntoRanges, py::arg("buffer_ptrs"), py::arg("all_keys"),
           py::arg("all_dst_offsets"), py::arg("all_src_offsets"), py::arg("all_sizes"),
           "Reads byte ranges of objects into registered buffers (Mooncake's get_into_ranges): "
           "results[i][j][k] is the bytes of fragment k of key all_keys[i][j] or a negative "
           "code.")
      .def("batch_get_into", &S::BatchGetInto, py::arg("keys"), py::arg("buffer_ptrs"),
           py::arg("sizes"))
      .def(
          "batch_get_into_multi_buffers",
          [](S& self, const std::vector<std::string>& keys,
             const std::vector<std::vector<uintptr_t>>& ptrs,
             const std::vector<std::vector<uint64_t>>& sizes,
             bool /*prefer_same_node*/) { return self.BatchGetIntoMulti(keys, ptrs, sizes); },
          py::arg("keys"), py::arg("all_buffer_ptrs"), py::arg("all_sizes"),
          py::arg("prefer_alloc_in_same_node") = false)
      // metadata
      .def("is_exist", &S::IsExist, py::arg("key"))
      .def("batch_is_exist", &S::BatchIsExist, py::arg("keys"))
      .def("get_size", &S::GetSize, py::arg("key"))
      .def("remove", &S::Remove, py::arg("key"), py::arg("force") = false)
      .def("remove_by_regex", &S::RemoveByRegex, py::arg("regex_pattern"), py::arg("force") = false)
      .def("remove_all", &S::RemoveAll, py::arg("force") = false)
      .def("batch_remove", &S::BatchRemove, py::arg("keys"), py::arg("force") = false)
      // replicas
      .def("get_replica_desc", &S::GetReplicaDesc, py::arg("key"),
           "Descriptors of the key's replicas; [] when it is missing.")
      .def("batch_get_replica_desc", &S::BatchGetReplicaDesc, py::arg("keys"),
           "{key: descriptors} for the keys found.")
      .def("create_copy_task", &S::CreateCopyTask, py::arg("key"), py::arg("targets"),
           "Copies the object to the target segments in the background: (task_id, 0) or "
           "((0, 0), error code).")
      .def("create_move_task", &S::CreateMoveTask, py::arg("key"), py::arg("source"),
           py::arg("target"),
           "Moves the object's replica on source to target in the background: (task_id, 0) or "
           "((0, 0), error code).")
      .def("query_task", &S::QueryTask, py::arg("task_id"),
           "(QueryTaskResponse, 0), or (None, error code): -1400 for an unknown task.")
      .def("batch_replica_clear", &S::BatchReplicaClear, py::arg("keys"),
           py::arg("segment_name") = "",
           "Drops the replicas (all, or those on segment_name) of objects nobody is reading; "
           "returns the keys cleared.")
      // memory
      .def("register_buffer", &S::RegisterBuffer, py::arg("buffer_ptr"), py::arg("size"))
      .def("unregister_buffer", &S::UnregisterBuffer, py::arg("buffer_ptr"));
}

}  // namespace yuebing::python
