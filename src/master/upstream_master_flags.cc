#include "master/upstream_master_flags.h"

#include <optional>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"

namespace yuebing::master {
namespace {

// kEtcdOnly: accepted when its value is "etcd" (the only HA backend here), refused otherwise.
enum class Action { kDrop, kRename, kRefuse, kEtcdOnly };

struct UpstreamFlag {
  const char* name;
  bool is_bool;
  Action action;
  const char* detail;  // kDrop/kRefuse: why; kRename: the yuebing flag
};

// Flags of upstream's mooncake_master (and glog's, which it links) that yuebing-master does not
// define. docs/compatibility.md section 6.2 lists each with its reason.
constexpr UpstreamFlag kUpstreamFlags[] = {
    {"port", false, Action::kRename, "rpc_port"},
    {"ha_backend_connstring", false, Action::kRename, "etcd_endpoints"},
    {"ha_backend_type", false, Action::kEtcdOnly, "the only HA backend is etcd (--etcd_endpoints)"},
    {"config_path", false, Action::kRefuse,
     "configuration files are not read by yuebing-master; pass the settings as flags"},
    {"max_threads", false, Action::kDrop, "RPCs run on gRPC's callback pool"},
    {"rpc_interface", false, Action::kDrop, "bind with --rpc_address"},
    {"rpc_conn_timeout_seconds", false, Action::kDrop, "gRPC manages its connections"},
    {"rpc_enable_tcp_no_delay", true, Action::kDrop, "gRPC sets TCP_NODELAY"},
    {"metrics_host", false, Action::kDrop, "the metrics server binds to --rpc_address"},
    {"enable_metric_reporting", true, Action::kDrop, "metrics are served at /metrics, not logged"},
    {"enable_gc", true, Action::kDrop, "leases and eviction free space; there is no GC pass"},
    {"enable_oplog", true, Action::kDrop, "HA uses leader election only"},
    {"oplog_poll_interval_ms", false, Action::kDrop, "no op log"},
    {"oplog_batch_max_entries", false, Action::kDrop, "no op log"},
    {"batch_oplog_retry_timeout_sec", false, Action::kDrop, "no op log"},
    {"enable_snapshot", true, Action::kDrop, "no metadata snapshots"},
    {"enable_snapshot_restore", true, Action::kDrop, "no metadata snapshots"},
    {"snapshot_interval_seconds", false, Action::kDrop, "no metadata snapshots"},
    {"snapshot_child_timeout_seconds", false, Action::kDrop, "no metadata snapshots"},
    {"snapshot_retention_count", false, Action::kDrop, "no metadata snapshots"},
    {"snapshot_backup_dir", false, Action::kDrop, "no metadata snapshots"},
    {"snapshot_object_store_type", false, Action::kDrop, "no metadata snapshots"},
    {"snapshot_catalog_store_type", false, Action::kDrop, "no metadata snapshots"},
    {"snapshot_catalog_store_connstring", false, Action::kDrop, "no metadata snapshots"},
    {"snapshot_payload_store_type", false, Action::kDrop, "no metadata snapshots"},
    {"snapshot_payload_backend_type", false, Action::kDrop, "no metadata snapshots"},
    {"snapshot_catalog_backend_type", false, Action::kDrop, "no metadata snapshots"},
    {"snapshot_catalog_backend_connstring", false, Action::kDrop, "no metadata snapshots"},
    {"enable_offload", true, Action::kDrop, "stores started with --ssd_path spill on eviction"},
    {"offload_on_evict", true, Action::kDrop, "stores started with --ssd_path spill on eviction"},
    {"offload_force_evict", true, Action::kDrop, "the disk tier decides per store"},
    {"offloading_queue_limit", false, Action::kDrop, "the disk tier bounds its own queue"},
    {"offload_cap_ratio", false, Action::kDrop, "the disk tier is sized by --ssd_capacity"},
    {"root_fs_dir", false, Action::kDrop, "no shared-file-system tier; use a store's --ssd_path"},
    {"global_file_segment_size", false, Action::kDrop, "no shared-file-system tier"},
    {"enable_disk_eviction", true, Action::kDrop, "no shared-file-system tier"},
    {"quota_bytes", false, Action::kDrop, "no shared-file-system tier"},
    {"nof_eviction_ratio", false, Action::kDrop, "no NVMe-oF tier"},
    {"nof_eviction_high_watermark_ratio", false, Action::kDrop, "no NVMe-oF tier"},
    {"nof_heartbeat_interval_sec", false, Action::kDrop, "no NVMe-oF tier"},
    {"nof_heartbeat_probe_timeout_ms", false, Action::kDrop, "no NVMe-oF tier"},
    {"nof_heartbeat_failures_threshold", false, Action::kDrop, "no NVMe-oF tier"},
    {"dynamic_replication_mode", false, Action::kDrop, "no hot-key replication"},
    {"dynamic_replication_heat_window_seconds", false, Action::kDrop, "no hot-key replication"},
    {"dynamic_replication_admission_qps_threshold", false, Action::kDrop, "no hot-key replication"},
    {"dynamic_replication_max_memory_replicas", false, Action::kDrop, "no hot-key replication"},
    {"enable_kv_events", true, Action::kDrop, "no KV-event publisher"},
    {"kv_events_bind_endpoint", false, Action::kDrop, "no KV-event publisher"},
    {"kv_events_backend_id", false, Action::kDrop, "no KV-event publisher"},
    {"kv_events_emit_legacy_compat", true, Action::kDrop, "no KV-event publisher"},
    {"kv_events_emit_object_key", true, Action::kDrop, "no KV-event publisher"},
    {"kv_events_queue_capacity", false, Action::kDrop, "no KV-event publisher"},
    {"kv_events_model_name", false, Action::kDrop, "no KV-event publisher"},
    {"kv_events_tenant_id", false, Action::kDrop, "no KV-event publisher"},
    {"kv_events_additional_salt", false, Action::kDrop, "no KV-event publisher"},
    // Defined by upstream's store library (its master links it): the mmap buffer arena.
    {"use_mmap_arena_allocator", true, Action::kDrop, "the master allocates no buffers"},
    {"mmap_arena_pool_size", false, Action::kDrop, "the master allocates no buffers"},
    // glog's flags: logging is set with YUEBING_LOG_LEVEL.
    {"v", false, Action::kDrop, "set YUEBING_LOG_LEVEL=debug instead"},
    {"vmodule", false, Action::kDrop, "set YUEBING_LOG_LEVEL instead"},
    {"minloglevel", false, Action::kDrop, "set YUEBING_LOG_LEVEL instead"},
    {"stderrthreshold", false, Action::kDrop, "logs go to stderr"},
    {"log_dir", false, Action::kDrop, "logs go to stderr"},
    {"logtostderr", true, Action::kDrop, "logs go to stderr"},
    {"alsologtostderr", true, Action::kDrop, "logs go to stderr"},
    {"colorlogtostderr", true, Action::kDrop, "logs go to stderr"},
    {"logbufsecs", false, Action::kDrop, "logs go to stderr"},
    {"max_log_size", false, Action::kDrop, "logs go to stderr"},
};

struct Argument {
  std::string name;                  // without dashes and without a "no" prefix
  std::optional<std::string> value;  // after '='
  bool negated = false;              // --noname
};

// Splits "--name=value" / "-name" ...; nullopt for positional arguments and "--".
std::optional<Argument> SplitFlag(absl::string_view arg) {
  if (arg.size() < 2 || arg[0] != '-' || arg == "--") return std::nullopt;
  arg.remove_prefix(arg[1] == '-' ? 2 : 1);
  Argument out;
  const size_t eq = arg.find('=');
  out.name = std::string(arg.substr(0, eq));
  if (eq != absl::string_view::npos) out.value = std::string(arg.substr(eq + 1));
  return out;
}

const UpstreamFlag* FindUpstream(Argument* arg) {
  for (const UpstreamFlag& flag : kUpstreamFlags) {
    if (arg->name == flag.name) return &flag;
  }
  if (absl::StartsWith(arg->name, "no") && !arg->value.has_value()) {
    for (const UpstreamFlag& flag : kUpstreamFlags) {
      if (flag.is_bool && arg->name.substr(2) == flag.name) {
        arg->name = flag.name;
        arg->negated = true;
        return &flag;
      }
    }
  }
  return nullptr;
}

bool Given(const std::vector<std::string>& argv, absl::string_view name) {
  for (size_t i = 1; i < argv.size(); ++i) {
    std::optional<Argument> arg = SplitFlag(argv[i]);
    if (arg.has_value() && arg->name == name) return true;
  }
  return false;
}

}  // namespace

absl::StatusOr<TranslatedFlags> TranslateUpstreamMasterFlags(const std::vector<std::string>& argv) {
  TranslatedFlags out;
  if (argv.empty()) return out;
  out.argv.push_back(argv[0]);
  for (size_t i = 1; i < argv.size(); ++i) {
    if (argv[i] == "--") {  // everything after is positional
      out.argv.insert(out.argv.end(), argv.begin() + static_cast<ptrdiff_t>(i), argv.end());
      break;
    }
    std::optional<Argument> arg = SplitFlag(argv[i]);
    const UpstreamFlag* flag = arg.has_value() ? FindUpstream(&*arg) : nullptr;
    if (flag == nullptr) {
      out.argv.push_back(argv[i]);
      continue;
    }
    std::string value = arg->value.value_or(flag->is_bool ? (arg->negated ? "false" : "true") : "");
    if (!flag->is_bool && !arg->value.has_value()) {  // "--name value"
      if (i + 1 >= argv.size()) {
        return absl::InvalidArgumentError(absl::StrCat("flag --", flag->name, " needs a value"));
      }
      value = argv[++i];
    }
    const std::string shown = absl::StrCat("--", flag->name, "=", value);
    switch (flag->action) {
      case Action::kRefuse:
        return absl::InvalidArgumentError(absl::StrCat(shown, ": ", flag->detail));
      case Action::kEtcdOnly:
        if (value != "etcd")
          return absl::InvalidArgumentError(absl::StrCat(shown, ": ", flag->detail));
        break;
      case Action::kDrop:
        out.warnings.push_back(
            absl::StrCat(shown, " (mooncake_master flag) is accepted and ignored: ", flag->detail));
        break;
      case Action::kRename:
        if (Given(argv, flag->detail)) {
          out.warnings.push_back(absl::StrCat(shown, " (mooncake_master flag) is ignored: --",
                                              flag->detail, " is given"));
        } else {
          out.argv.push_back(absl::StrCat("--", flag->detail, "=", value));
          out.warnings.push_back(
              absl::StrCat(shown, " (mooncake_master flag) read as --", flag->detail, "=", value));
        }
        break;
    }
  }
  return out;
}

}  // namespace yuebing::master
