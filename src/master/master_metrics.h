// Counters of the master's RPC layer (requests, failures, keys, latency histograms per RPC; lookup
// hits and misses) and the Prometheus text rendering of them together with MasterService::Stats().
//
// Thread safety: every method is thread-safe. Counters are relaxed atomics: a snapshot taken while
// RPCs run may mix values from slightly different instants, but each counter only grows.
#pragma once

#include <array>
#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <string>

#include "yuebing/master/types.h"

namespace yuebing::master {

// One entry per RPC of yuebing.rpc.MasterService.
enum class RpcOp : int {
  kMountSegment,
  kUnmountSegment,
  kPing,
  kBatchPutStart,
  kBatchPutEnd,
  kBatchPutRevoke,
  kBatchGetReplicaList,
  kBatchExist,
  kBatchRemove,
  kGetSize,
  kRemoveByRegex,
  kRemoveAll,
  kSyncDiskTier,
  kReleaseLeases,
  kPullJournal,
  kRestoreObjects,
  kBatchReplicaClear,
  kReplicaCopyStart,
  kReplicaCopyEnd,
  kFetchDrainWork,
  kReportDrainWork,
};
inline constexpr size_t kRpcOpCount = 21;

// The RPC's name in master.proto, e.g. "BatchPutStart".
const char* RpcOpName(RpcOp op);

class MasterMetrics {
 public:
  // Upper bounds of the latency histogram buckets; one more bucket (+Inf) follows them.
  static constexpr size_t kLatencyBuckets = 15;
  static constexpr std::array<int64_t, kLatencyBuckets> kLatencyBoundsNs = {
      50'000,      100'000,     250'000,     500'000,       1'000'000,
      2'500'000,   5'000'000,   10'000'000,  25'000'000,    50'000'000,
      100'000'000, 250'000'000, 500'000'000, 1'000'000'000, 2'500'000'000};

  struct RpcSnapshot {
    uint64_t requests = 0;
    uint64_t failed = 0;      // requests whose reply status (whole-request) was not OK
    uint64_t keys = 0;        // keys carried by batch requests
    uint64_t key_errors = 0;  // per-key results that were not OK (misses included)
    uint64_t latency_sum_ns = 0;
    std::array<uint64_t, kLatencyBuckets + 1> buckets{};  // per bucket, not cumulative
  };

  MasterMetrics() = default;
  MasterMetrics(const MasterMetrics&) = delete;
  MasterMetrics& operator=(const MasterMetrics&) = delete;

  // Records one served RPC. Negative latencies count as zero.
  void RecordRpc(RpcOp op, bool ok, uint64_t keys, uint64_t key_errors,
                 std::chrono::nanoseconds latency);
  // Records GetReplicaList outcomes: found (hits) and not found (misses).
  void RecordLookups(uint64_t hits, uint64_t misses);
  // Records a PutEnd answered before the stores keeping manifests of its objects acknowledged
  // them (they lagged past the wait bound: a master crash now could lose those puts).
  void RecordManifestLag() { manifest_lags_.fetch_add(1, std::memory_order_relaxed); }
  // The fast path (master/fast_rpc_server.h): frames answered, and connections open now.
  void RecordFastRpcFrame() { fast_rpc_frames_.fetch_add(1, std::memory_order_relaxed); }
  void AddFastRpcConnections(int64_t delta) {
    fast_rpc_connections_.fetch_add(delta, std::memory_order_relaxed);
  }

  RpcSnapshot Rpc(RpcOp op) const;
  uint64_t hits() const { return hits_.load(std::memory_order_relaxed); }
  uint64_t misses() const { return misses_.load(std::memory_order_relaxed); }
  uint64_t manifest_lags() const { return manifest_lags_.load(std::memory_order_relaxed); }
  uint64_t fast_rpc_frames() const { return fast_rpc_frames_.load(std::memory_order_relaxed); }
  int64_t fast_rpc_connections() const {
    return fast_rpc_connections_.load(std::memory_order_relaxed);
  }

 private:
  struct RpcCounters {
    std::atomic<uint64_t> requests{0};
    std::atomic<uint64_t> failed{0};
    std::atomic<uint64_t> keys{0};
    std::atomic<uint64_t> key_errors{0};
    std::atomic<uint64_t> latency_sum_ns{0};
    std::array<std::atomic<uint64_t>, kLatencyBuckets + 1> buckets{};
  };

  std::array<RpcCounters, kRpcOpCount> rpcs_;
  std::atomic<uint64_t> hits_{0};
  std::atomic<uint64_t> misses_{0};
  std::atomic<uint64_t> manifest_lags_{0};
  std::atomic<uint64_t> fast_rpc_frames_{0};
  std::atomic<int64_t> fast_rpc_connections_{0};
};

// The Prometheus text exposition (format 0.0.4) of the master's state and counters: objects,
// bytes used/capacity overall and per segment (label segment="name"), clients, segments, hits,
// misses, evictions, the leadership term, and per-RPC counters and latency histograms (label
// rpc="Name"). Metric names start with "yuebing_master_".
std::string RenderPrometheus(const MasterStats& stats, const MasterMetrics& metrics, uint64_t term);

// Escapes a Prometheus label value (backslash, double quote, newline).
std::string EscapeLabelValue(const std::string& value);

}  // namespace yuebing::master
