// yuebing-bench store: batch put/get throughput and latency of the store client against a running
// cluster (yuebing-master + stores), for each value size; then batched Exist throughput.
// Every get is checked against the bytes that were put (--verify, default on here).
#include <chrono>
#include <cstring>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
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

namespace yuebing::bench {
namespace {

using Clock = std::chrono::steady_clock;

struct PhaseResult {
  uint64_t ops = 0;
  uint64_t bytes = 0;
  uint64_t failures = 0;
  uint64_t mismatches = 0;
  double seconds = 0;  // time spent inside the timed calls (checks of the bytes excluded)
  LatencyRecorder latency;
};

void AddPhase(Report& report, const std::string& name, const PhaseResult& r) {
  report.Add(name + "_ops", r.ops);
  report.Add(name + "_failures", r.failures);
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
  YB_ASSIGN_OR_RETURN(std::unique_ptr<store::Client> client, store::Client::Create(config));
  YB_ASSIGN_OR_RETURN(uint64_t bytes_per_size,
                      ParseSize(absl::GetFlag(FLAGS_store_bytes_per_size)));
  const int batch = std::max(1, absl::GetFlag(FLAGS_batch_size));
  const bool json = absl::GetFlag(FLAGS_report) == "json";
  master::ReplicateConfig replicate;
  replicate.replica_num = std::max(1, absl::GetFlag(FLAGS_replica_num));
  for (absl::string_view text : absl::StrSplit(absl::GetFlag(FLAGS_value_sizes), ',')) {
    YB_ASSIGN_OR_RETURN(uint64_t size, ParseSize(text));
    const uint64_t objects = std::max<uint64_t>(batch, bytes_per_size / size);
    std::string run = absl::StrCat(Clock::now().time_since_epoch().count());
    // Values: a few distinct patterns reused across keys (key -> pattern index is known).
    std::vector<std::string> patterns;
    for (int p = 0; p < 4; ++p) patterns.push_back(PatternValue(size * 31 + p, size));
    PhaseResult put, get;
    std::vector<std::string> keys;
    for (uint64_t first = 0; first < objects; first += batch) {
      std::vector<std::string> batch_keys;
      std::vector<absl::string_view> values;
      for (uint64_t i = first; i < std::min<uint64_t>(objects, first + batch); ++i) {
        batch_keys.push_back(absl::StrCat("bench-", run, "-", size, "-", i));
        values.push_back(patterns[i % patterns.size()]);
      }
      auto t0 = Clock::now();
      std::vector<absl::Status> results = client->BatchPut(batch_keys, values, replicate);
      put.latency.Record(
          std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now() - t0).count());
      put.seconds += std::chrono::duration<double>(Clock::now() - t0).count();
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
      get.latency.Record(
          std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now() - t0).count());
      get.seconds += std::chrono::duration<double>(Clock::now() - t0).count();
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
  // Batched Exist: metadata-only throughput.
  const int exist_batch = std::max(1, absl::GetFlag(FLAGS_exist_batch));
  std::vector<std::string> probe;
  for (int i = 0; i < exist_batch; ++i) probe.push_back(absl::StrCat("exist-probe-", i));
  PhaseResult exist;
  const int seconds = absl::GetFlag(FLAGS_duration) > 0 ? absl::GetFlag(FLAGS_duration) : 3;
  const auto deadline = Clock::now() + std::chrono::seconds(seconds);
  auto start = Clock::now();
  while (Clock::now() < deadline) {
    auto t0 = Clock::now();
    auto results = client->BatchIsExist(probe);
    exist.latency.Record(
        std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now() - t0).count());
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
  report.AddLatency("exist_call", exist.latency.Summarize());
  report.Print(json);
  return absl::OkStatus();
}

}  // namespace yuebing::bench
