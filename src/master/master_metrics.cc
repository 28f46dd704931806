#include "master/master_metrics.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace yuebing::master {
namespace {

constexpr std::array<const char*, kRpcOpCount> kRpcOpNames = {"MountSegment",
                                                              "UnmountSegment",
                                                              "Ping",
                                                              "BatchPutStart",
                                                              "BatchPutEnd",
                                                              "BatchPutRevoke",
                                                              "BatchGetReplicaList",
                                                              "BatchExist",
                                                              "BatchRemove",
                                                              "GetSize",
                                                              "RemoveByRegex",
                                                              "RemoveAll",
                                                              "SyncDiskTier",
                                                              "ReleaseLeases",
                                                              "PullJournal",
                                                              "RestoreObjects",
                                                              "BatchReplicaClear",
                                                              "ReplicaCopyStart",
                                                              "ReplicaCopyEnd",
                                                              "FetchDrainWork",
                                                              "ReportDrainWork"};

constexpr const char* kPrefix = "yuebing_master_";

void Header(std::string* out, const char* name, const char* type, const char* help) {
  absl::StrAppend(out, "# HELP ", kPrefix, name, " ", help, "\n# TYPE ", kPrefix, name, " ", type,
                  "\n");
}

void Scalar(std::string* out, const char* name, const char* type, const char* help,
            uint64_t value) {
  Header(out, name, type, help);
  absl::StrAppend(out, kPrefix, name, " ", value, "\n");
}

std::string Seconds(uint64_t ns) { return absl::StrFormat("%.9f", static_cast<double>(ns) / 1e9); }

void AppendSegments(std::string* out, const MasterStats& stats) {
  Header(out, "segment_used_bytes", "gauge", "Bytes allocated in the segment.");
  for (const SegmentUsage& usage : stats.segments) {
    absl::StrAppend(out, kPrefix, "segment_used_bytes{segment=\"",
                    EscapeLabelValue(usage.segment.name), "\"} ", usage.used_bytes, "\n");
  }
  Header(out, "segment_capacity_bytes", "gauge", "Size of the segment.");
  for (const SegmentUsage& usage : stats.segments) {
    absl::StrAppend(out, kPrefix, "segment_capacity_bytes{segment=\"",
                    EscapeLabelValue(usage.segment.name), "\"} ", usage.segment.size, "\n");
  }
}

// Appends one line per RPC of the counter selected by `field`.
template <typename Field>
void RpcCounter(std::string* out, const std::array<MasterMetrics::RpcSnapshot, kRpcOpCount>& rpcs,
                const char* name, const char* help, Field field) {
  Header(out, name, "counter", help);
  for (size_t i = 0; i < kRpcOpCount; ++i) {
    absl::StrAppend(out, kPrefix, name, "{rpc=\"", kRpcOpNames[i], "\"} ", field(rpcs[i]), "\n");
  }
}

void AppendLatency(std::string* out,
                   const std::array<MasterMetrics::RpcSnapshot, kRpcOpCount>& rpcs) {
  Header(out, "rpc_latency_seconds", "histogram", "Time to serve an RPC inside the master.");
  for (size_t i = 0; i < kRpcOpCount; ++i) {
    const MasterMetrics::RpcSnapshot& rpc = rpcs[i];
    uint64_t cumulative = 0;
    for (size_t b = 0; b <= MasterMetrics::kLatencyBuckets; ++b) {
      cumulative += rpc.buckets[b];
      const std::string le =
          b < MasterMetrics::kLatencyBuckets
              ? absl::StrCat(static_cast<double>(MasterMetrics::kLatencyBoundsNs[b]) / 1e9)
              : std::string("+Inf");
      absl::StrAppend(out, kPrefix, "rpc_latency_seconds_bucket{rpc=\"", kRpcOpNames[i], "\",le=\"",
                      le, "\"} ", cumulative, "\n");
    }
    absl::StrAppend(out, kPrefix, "rpc_latency_seconds_sum{rpc=\"", kRpcOpNames[i], "\"} ",
                    Seconds(rpc.latency_sum_ns), "\n");
    absl::StrAppend(out, kPrefix, "rpc_latency_seconds_count{rpc=\"", kRpcOpNames[i], "\"} ",
                    cumulative, "\n");
  }
}

}  // namespace

const char* RpcOpName(RpcOp op) {
  const auto index = static_cast<size_t>(op);
  return index < kRpcOpCount ? kRpcOpNames[index] : "Unknown";
}

void MasterMetrics::RecordRpc(RpcOp op, bool ok, uint64_t keys, uint64_t key_errors,
                              std::chrono::nanoseconds latency) {
  const auto index = static_cast<size_t>(op);
  if (index >= kRpcOpCount) return;
  RpcCounters& rpc = rpcs_[index];
  const int64_t ns = std::max<int64_t>(0, latency.count());
  const size_t bucket =
      static_cast<size_t>(std::lower_bound(kLatencyBoundsNs.begin(), kLatencyBoundsNs.end(), ns) -
                          kLatencyBoundsNs.begin());
  rpc.requests.fetch_add(1, std::memory_order_relaxed);
  if (!ok) rpc.failed.fetch_add(1, std::memory_order_relaxed);
  rpc.keys.fetch_add(keys, std::memory_order_relaxed);
  rpc.key_errors.fetch_add(key_errors, std::memory_order_relaxed);
  rpc.latency_sum_ns.fetch_add(static_cast<uint64_t>(ns), std::memory_order_relaxed);
  rpc.buckets[bucket].fetch_add(1, std::memory_order_relaxed);
}

void MasterMetrics::RecordLookups(uint64_t hits, uint64_t misses) {
  hits_.fetch_add(hits, std::memory_order_relaxed);
  misses_.fetch_add(misses, std::memory_order_relaxed);
}

MasterMetrics::RpcSnapshot MasterMetrics::Rpc(RpcOp op) const {
  RpcSnapshot snapshot;
  const auto index = static_cast<size_t>(op);
  if (index >= kRpcOpCount) return snapshot;
  const RpcCounters& rpc = rpcs_[index];
  snapshot.requests = rpc.requests.load(std::memory_order_relaxed);
  snapshot.failed = rpc.failed.load(std::memory_order_relaxed);
  snapshot.keys = rpc.keys.load(std::memory_order_relaxed);
  snapshot.key_errors = rpc.key_errors.load(std::memory_order_relaxed);
  snapshot.latency_sum_ns = rpc.latency_sum_ns.load(std::memory_order_relaxed);
  for (size_t b = 0; b < snapshot.buckets.size(); ++b) {
    snapshot.buckets[b] = rpc.buckets[b].load(std::memory_order_relaxed);
  }
  return snapshot;
}

std::string EscapeLabelValue(const std::string& value) {
  std::string out;
  out.reserve(value.size());
  for (char c : value) {
    if (c == '\\') {
      out += "\\\\";
    } else if (c == '"') {
      out += "\\\"";
    } else if (c == '\n') {
      out += "\\n";
    } else {
      out.push_back(c);
    }
  }
  return out;
}

std::string RenderPrometheus(const MasterStats& stats, const MasterMetrics& metrics,
                             uint64_t term) {
  std::array<MasterMetrics::RpcSnapshot, kRpcOpCount> rpcs;
  for (size_t i = 0; i < kRpcOpCount; ++i) rpcs[i] = metrics.Rpc(static_cast<RpcOp>(i));

  std::string out;
  out.reserve(8192 + stats.segments.size() * 160);
  Scalar(&out, "term", "gauge", "Leadership term of this master (0 without HA).", term);
  Scalar(&out, "objects", "gauge", "Objects in the index, complete and in progress.",
         stats.objects);
  Scalar(&out, "used_bytes", "gauge", "Bytes allocated in all segments.", stats.used_bytes);
  Scalar(&out, "condemned_bytes", "gauge",
         "Of used_bytes: objects an eviction pass chose that stay readable until a put needs "
         "their memory (lazy eviction).",
         stats.condemned_bytes);
  Scalar(&out, "capacity_bytes", "gauge", "Total size of all mounted segments.",
         stats.capacity_bytes);
  Scalar(&out, "segments", "gauge", "Mounted segments.", stats.segments.size());
  Scalar(&out, "clients", "gauge", "Live clients.", stats.clients);
  Scalar(&out, "hits_total", "counter", "GetReplicaList lookups that found a complete object.",
         metrics.hits());
  Scalar(&out, "misses_total", "counter", "GetReplicaList lookups that found no object.",
         metrics.misses());
  Scalar(&out, "manifest_lag_puts_total", "counter",
         "PutEnds answered before the stores keeping manifests acknowledged them (wait bound "
         "passed).",
         metrics.manifest_lags());
  Scalar(&out, "fast_rpc_frames_total", "counter",
         "Calls answered on the fast path (also counted per rpc in rpc_requests_total).",
         metrics.fast_rpc_frames());
  Scalar(&out, "fast_rpc_connections", "gauge", "Open connections of the fast path.",
         static_cast<uint64_t>(std::max<int64_t>(0, metrics.fast_rpc_connections())));
  Scalar(&out, "evicted_objects_total", "counter", "Objects evicted since start.",
         stats.evicted_objects);
  Scalar(&out, "evictions_total", "counter", "Eviction passes run since start.", stats.evictions);
  Scalar(&out, "disk_objects", "gauge", "Objects held only by a store's disk tier.",
         stats.disk_objects);
  Scalar(&out, "spilled_objects_total", "counter",
         "Objects moved from memory to a disk tier since start.", stats.spilled_objects);
  Scalar(&out, "promoted_objects_total", "counter",
         "Disk-only objects brought back to memory since start (promotion on hit).",
         stats.promoted_objects);
  AppendSegments(&out, stats);
  RpcCounter(&out, rpcs, "rpc_requests_total", "RPCs served.",
             [](const MasterMetrics::RpcSnapshot& r) { return r.requests; });
  RpcCounter(&out, rpcs, "rpc_failures_total",
             "RPCs whose reply status was not OK (for batches: refused as a whole).",
             [](const MasterMetrics::RpcSnapshot& r) { return r.failed; });
  RpcCounter(&out, rpcs, "rpc_keys_total", "Keys carried by batch RPCs.",
             [](const MasterMetrics::RpcSnapshot& r) { return r.keys; });
  RpcCounter(&out, rpcs, "rpc_key_errors_total", "Per-key results that were not OK.",
             [](const MasterMetrics::RpcSnapshot& r) { return r.key_errors; });
  AppendLatency(&out, rpcs);
  return out;
}

}  // namespace yuebing::master
