// yuebing-bench master-rpc: the latency of one control-plane round trip, as a store client pays
// it: a single-key IsExist (one BatchExist RPC, no lease, no transfer) against a running master,
// in a loop on one thread for --duration seconds (default 5). The figure to compare with a raw
// TCP ping-pong of a small message on the same machine (bench/run_master_rpc_bench.sh does both).
#include <chrono>
#include <memory>
#include <string>

#include "absl/flags/declare.h"
#include "absl/flags/flag.h"
#include "absl/strings/str_cat.h"
#include "bench_flags.h"
#include "latency_stats.h"
#include "report.h"
#include "subcommands.h"
#include "yuebing/common/status.h"
#include "yuebing/store/client.h"

ABSL_DECLARE_FLAG(std::string, master_server_address);

namespace yuebing::bench {

absl::Status RunMasterRpcBench() {
  store::ClientConfig config;
  config.master_server_address = absl::GetFlag(FLAGS_master_server_address);
  config.global_segment_size = 0;  // a pure client: nothing mounted
  YB_ASSIGN_OR_RETURN(std::unique_ptr<store::Client> client, store::Client::Create(config));
  YB_ASSIGN_OR_RETURN(const bool json, ReportJson());
  const std::string key = "master-rpc-bench-absent-key";
  using Clock = std::chrono::steady_clock;
  // Warm-up: connection set-up and the first calls' allocations stay out of the figures.
  for (int i = 0; i < 200; ++i) YB_RETURN_IF_ERROR(client->IsExist(key).status());
  LatencyRecorder latency;
  const auto start = Clock::now();
  const auto deadline = start + std::chrono::seconds(DurationSeconds(5));
  while (Clock::now() < deadline) {
    const auto before = Clock::now();
    absl::StatusOr<bool> exists = client->IsExist(key);
    const auto after = Clock::now();
    if (!exists.ok()) return exists.status();
    if (*exists) return absl::InternalError(absl::StrCat("'", key, "' should not exist"));
    latency.Record(static_cast<uint64_t>(
        std::chrono::duration_cast<std::chrono::nanoseconds>(after - before).count()));
  }
  const double seconds = std::chrono::duration<double>(Clock::now() - start).count();
  Report report;
  report.Add("test", "master_rpc");
  report.Add("rpc", "BatchExist (1 key)");
  report.Add("calls_per_s", static_cast<double>(latency.count()) / seconds);
  report.AddLatency("rpc", latency.Summarize());
  report.Print(json);
  return absl::OkStatus();
}

}  // namespace yuebing::bench
