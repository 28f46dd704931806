// yuebing-bench store: batch put/get throughput and latency of the store client against a running
// cluster (yuebing-master + stores), for each value size; then batched Exist throughput
// (--store_phases picks either or both). Every get is checked against the bytes that were put.
// bench/many_clients_bench.py runs several of these at once against one store server.
#include <chrono>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "bench_flags.h"
#include "latency_stats.h"
#include "report.h"
#include "subcommands.h"
#include "transfer_verify.h"
#include "yuebing/common/config.h"
#include "yuebing/common/status.h"
#include "yuebing/store/client.h"

ABSL_FLAG(std::string, master_server_address, "127.0.0.1:50051", "store: yuebing-master address");
ABSL_FLAG(std::string, value_sizes, "4KB,64KB,1MB,4MB", "store: comma-separated value sizes");
ABSL_FLAG(int32_t, replica_num, 1, "store: replicas per object");
ABSL_FLAG(std::string, store_segment_size, "0",
          "store: memory this benchmark client contributes itself (0: none)");
ABSL_FLAG(int32_t, exist_batch, 256, "store: keys per batched Exist call");
ABSL_FLAG(std::string, store_bytes_per_size, "256MB",
          "store: data written per value size (bounded by the cluster's capacity)");
ABSL_FLAG(std::string, store_phases, "data,exist",
          "store: what to run: data (put/get per value size), exist (batched Exist), or both");
ABSL_FLAG(bool, store_shm, true,
          "store: same-host shared memory to stores on this host (false: TCP only)");
ABSL_FLAG(double, start_at, 0,
          "store: wall clock (Unix seconds) at which to start the first call, after connecting; "
          "several processes given the same time start together (0: at once)");
ABSL_FLAG(bool, store_warmup, true,
          "store: put, read back and remove one untimed batch of each size first (connections to "
          "the stores, shared-memory mappings)");
ABSL_FLAG(std::string, key_tag, "",
          "store: part of every key (several processes at once need distinct tags)");

namespace yuebing::bench {
namespace {

using Clock = std::chrono::steady_clock;

struct PhaseResult {
  uint64_t ops = 0;
  uint64_t bytes = 0;
  uint64_t failures = 0;
  uint64_t mismatches = 0;
  double seconds = 0;  // time spent inside the timed calls (checks of the bytes excluded)
  // Wall clock (Unix seconds) at the start of the first call and the end of the last one: runs
  // of several processes at once are summed over the union of their windows.
  double wall_start = 0;
  double wall_end = 0;
  LatencyRecorder latency;

  // Records one call that started at `t0` (steady clock) and just ended.
  void RecordCall(Clock::time_point t0) {
    const auto now = Clock::now();
    latency.Record(std::chrono::duration_cast<std::chrono::nanoseconds>(now - t0).count());
    const double call = std::chrono::duration<double>(now - t0).count();
    seconds += call;
    const double end =
        std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
    if (wall_start == 0) wall_start = end - call;
    wall_end = end;
  }
};

void AddPhase(Report& report, const std::string& name, const PhaseResult& r) {
  report.Add(name + "_ops", r.ops);
  report.Add(name + "_failures", r.failures);
  report.Add(name + "_bytes", r.bytes);
  report.Add(name + "_seconds", r.seconds);
  report.Add(name + "_wall_start", r.wall_start);
  report.Add(name + "_wall_end", r.wall_end);
  report.Add(name + "_gbps", r.seconds > 0 ? r.bytes / r.seconds / 1e9 : 0.0);
  report.Add(name + "_ops_per_s", r.seconds > 0 ? r.ops / r.seconds : 0.0);
  report.AddLatency(name + "_batch", r.latency.Summarize());
}

}  // namespace

absl::Status RunStoreBench() {
  store::ClientConfig config;
  config.master_server_address = absl::GetFlag(FLAGS_master_server_address);
  YB_ASSIGN_OR_RETURN(config.global_segment_size,
                      ParseSize(absl::GetFlag(FLAGS_store_segment_size)));
  config.enable_shm = absl::GetFlag(FLAGS_store_shm);
  const std::string phases = absl::GetFlag(FLAGS_store_phases);
  const bool run_data = absl::StrContains(phases, "data");
  const bool run_exist = absl::StrContains(phases, "exist");
  if (!run_data && !run_exist) {
    return absl::InvalidArgumentError("--store_phases must name data, exist or both");
  }
  const std::string tag = absl::GetFlag(FLAGS_key_tag);
  YB_ASSIGN_OR_RETURN(std::unique_ptr<store::Client> client, store::Client::Create(config));
  if (const double start_at = absl::GetFlag(FLAGS_start_at); start_at > 0) {
    const double now =
        std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
    if (start_at > now) std::this_thread::sleep_for(std::chrono::duration<double>(start_at - now));
  }
  YB_ASSIGN_OR_RETURN(uint64_t bytes_per_size,
                      ParseSize(absl::GetFlag(FLAGS_store_bytes_per_size)));
  const int batch = std::max(1, absl::GetFlag(FLAGS_batch_size));
  const bool json = absl::GetFlag(FLAGS_report) == "json";
  master::ReplicateConfig replicate;
  replicate.replica_num = std::max(1, absl::GetFlag(FLAGS_replica_num));
  for (absl::string_view text : absl::StrSplit(absl::GetFlag(FLAGS_value_sizes), ',')) {
    if (!run_data) break;
    YB_ASSIGN_OR_RETURN(uint64_t size, ParseSize(text));
    const uint64_t objects = std::max<uint64_t>(batch, bytes_per_size / size);
    std::string run = absl::StrCat(Clock::now().time_since_epoch().count());
    // Values: a few distinct patterns reused across keys (key -> pattern index is known).
    std::vector<std::string> patterns;
    for (int p = 0; p < 4; ++p) patterns.push_back(PatternValue(size * 31 + p, size));
    if (absl::GetFlag(FLAGS_store_warmup)) {
      std::vector<std::string> warm_keys;
      for (int i = 0; i < batch; ++i) {
        warm_keys.push_back(absl::StrCat("bench-warmup-", tag, run, "-", size, "-", i));
      }
      std::vector<absl::string_view> warm_values(warm_keys.size(), patterns[0]);
      for (const absl::Status& status : client->BatchPut(warm_keys, warm_values, replicate)) {
        YB_RETURN_IF_ERROR(status);
      }
      for (const auto& value : client->BatchGet(warm_keys)) YB_RETURN_IF_ERROR(value.status());
      (void)client->BatchRemove(warm_keys, /*force=*/true);
    }
    PhaseResult put, get;
    std::vector<std::string> keys;
    for (uint64_t first = 0; first < objects; first += batch) {
      std::vector<std::string> batch_keys;
      std::vector<absl::string_view> values;
      for (uint64_t i = first; i < std::min<uint64_t>(objects, first + batch); ++i) {
        batch_keys.push_back(absl::StrCat("bench-", tag, run, "-", size, "-", i));
        values.push_back(patterns[i % patterns.size()]);
      }
      auto t0 = Clock::now();
      std::vector<absl::Status> results = client->BatchPut(batch_keys, values, replicate);
      put.RecordCall(t0);
      for (size_t k = 0; k < results.size(); ++k) {
        put.ops++;
        if (results[k].ok()) {
          put.bytes += size;
        } else {
          put.failures++;
        }
      }
      keys.insert(keys.end(), batch_keys.begin(), batch_keys.end());
    }
    std::vector<std::string> buffers(batch, std::string(size, '\0'));
    for (uint64_t first = 0; first < keys.size(); first += batch) {
      std::vector<std::string> batch_keys(
          keys.begin() + first, keys.begin() + std::min<uint64_t>(keys.size(), first + batch));
      std::vector<store::Client::Buffer> dests;
      for (size_t k = 0; k < batch_keys.size(); ++k) dests.push_back({buffers[k].data(), size});
      auto t0 = Clock::now();
      auto results = client->BatchGetInto(batch_keys, dests);
      get.RecordCall(t0);
      for (size_t k = 0; k < results.size(); ++k) {
        get.ops++;
        if (!results[k].ok()) {
          get.failures++;
          continue;
        }
        get.bytes += *results[k];
        if (buffers[k] != patterns[(first + k) % patterns.size()]) get.mismatches++;
      }
    }
    Report report;
    report.Add("test", "store");
    report.Add("value_size", size);
    report.Add("batch_size", static_cast<uint64_t>(batch));
    report.Add("replica_num", static_cast<uint64_t>(replicate.replica_num));
    AddPhase(report, "put", put);
    AddPhase(report, "get", get);
    report.Add("get_mismatches", get.mismatches);
    report.Print(json);
    if (get.mismatches > 0) {
      return absl::DataLossError(absl::StrCat(get.mismatches, " gets returned wrong bytes"));
    }
    // Free the space for the next size.
    for (uint64_t first = 0; first < keys.size(); first += 256) {
      std::vector<std::string> batch_keys(
          keys.begin() + first, keys.begin() + std::min<uint64_t>(keys.size(), first + 256));
      (void)client->BatchRemove(batch_keys, /*force=*/true);
    }
  }
  if (!run_exist) return absl::OkStatus();
  // Batched Exist: metadata-only throughput.
  const int exist_batch = std::max(1, absl::GetFlag(FLAGS_exist_batch));
  std::vector<std::string> probe;
  for (int i = 0; i < exist_batch; ++i) probe.push_back(absl::StrCat("exist-probe-", tag, i));
  PhaseResult exist;
  const int seconds = absl::GetFlag(FLAGS_duration) > 0 ? absl::GetFlag(FLAGS_duration) : 3;
  const auto deadline = Clock::now() + std::chrono::seconds(seconds);
  auto start = Clock::now();
  while (Clock::now() < deadline) {
    auto t0 = Clock::now();
    auto results = client->BatchIsExist(probe);
    exist.RecordCall(t0);
    for (const auto& r : results) {
      exist.ops++;
      if (!r.ok()) exist.failures++;
    }
  }
  exist.seconds = std::chrono::duration<double>(Clock::now() - start).count();
  Report report;
  report.Add("test", "store_exist");
  report.Add("keys_per_call", static_cast<uint64_t>(exist_batch));
  report.Add("exist_ops", exist.ops);
  report.Add("exist_failures", exist.failures);
  report.Add("exist_ops_per_s", exist.ops / exist.seconds);
  report.Add("exist_wall_start", exist.wall_start);
  report.Add("exist_wall_end", exist.wall_end);
  report.AddLatency("exist_call", exist.latency.Summarize());
  report.Print(json);
  return absl::OkStatus();
}

}  // namespace yuebing::bench
