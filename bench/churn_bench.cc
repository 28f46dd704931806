// yuebing-bench churn: one client putting, reading back and removing batches of fresh keys in a
// loop against a running cluster, so that no object stays live between iterations. It is the load
// of the master memory soak (tests/soak/master_churn_soak.sh): the master's memory must stay flat
// however many objects have been written and removed.
// Each iteration: BatchPut of --batch_size fresh keys of --block_size bytes, BatchGet of them
// (every byte checked), BatchRemove of them (--churn_force); puts prefer
// --churn_preferred_segment when given. Runs for --duration seconds (default 10) and prints one
// progress line a second on stderr ("churn: N objects") and a report on stdout. Fails on wrong
// bytes, and on any failed call unless --churn_tolerate_failures.
#include <chrono>
#include <cstdio>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/strings/str_cat.h"
#include "bench_flags.h"
#include "report.h"
#include "subcommands.h"
#include "transfer_verify.h"
#include "yuebing/common/config.h"
#include "yuebing/common/status.h"
#include "yuebing/store/client.h"

ABSL_DECLARE_FLAG(std::string, master_server_address);
ABSL_DECLARE_FLAG(std::string, store_segment_size);
ABSL_FLAG(bool, churn_force, false,
          "churn: remove with force (a plain remove works once the get has released its lease)");
ABSL_FLAG(std::string, churn_preferred_segment, "",
          "churn: segment (\"host:port\") the puts should prefer (empty: the master's choice)");
ABSL_FLAG(bool, churn_tolerate_failures, false,
          "churn: failed puts, gets and removes are counted but do not fail the run (wrong bytes "
          "still do); for clients of a store that is being killed");

namespace yuebing::bench {

absl::Status RunChurnBench() {
  store::ClientConfig config;
  config.master_server_address = absl::GetFlag(FLAGS_master_server_address);
  YB_ASSIGN_OR_RETURN(config.global_segment_size,
                      ParseSize(absl::GetFlag(FLAGS_store_segment_size)));
  YB_ASSIGN_OR_RETURN(std::unique_ptr<store::Client> client, store::Client::Create(config));
  YB_ASSIGN_OR_RETURN(const uint64_t size, BlockSizeFlag());
  YB_ASSIGN_OR_RETURN(const bool json, ReportJson());
  const int batch = std::max(1, absl::GetFlag(FLAGS_batch_size));
  const bool force = absl::GetFlag(FLAGS_churn_force);
  master::ReplicateConfig placement;
  placement.preferred_segment = absl::GetFlag(FLAGS_churn_preferred_segment);
  const std::string value = PatternValue(size * 31, size);
  const std::string run = absl::StrCat(std::chrono::steady_clock::now().time_since_epoch().count());

  using Clock = std::chrono::steady_clock;
  const auto start = Clock::now();
  const auto deadline = start + std::chrono::seconds(DurationSeconds(10));
  auto next_progress = start + std::chrono::seconds(1);
  uint64_t written = 0, put_failures = 0, get_failures = 0, mismatches = 0, remove_failures = 0;
  absl::Status first_failure;
  auto count = [&first_failure](const absl::Status& s, uint64_t& failures) {
    if (s.ok()) return;
    if (failures++ == 0 && first_failure.ok()) first_failure = s;
  };
  std::vector<std::string> keys(batch);
  const std::vector<absl::string_view> values(batch, value);
  while (Clock::now() < deadline) {
    for (int k = 0; k < batch; ++k) keys[k] = absl::StrCat("churn-", run, "-", written + k);
    for (const absl::Status& s : client->BatchPut(keys, values, placement)) {
      count(s, put_failures);
    }
    for (const absl::StatusOr<std::string>& got : client->BatchGet(keys)) {
      if (!got.ok()) {
        count(got.status(), get_failures);
      } else if (*got != value) {
        ++mismatches;
      }
    }
    for (const absl::Status& s : client->BatchRemove(keys, force)) count(s, remove_failures);
    written += batch;
    if (Clock::now() >= next_progress) {
      std::fprintf(stderr, "churn: %llu objects\n", static_cast<unsigned long long>(written));
      next_progress += std::chrono::seconds(1);
    }
  }
  const double seconds = std::chrono::duration<double>(Clock::now() - start).count();
  Report report;
  report.Add("test", "churn");
  report.Add("value_size", size);
  report.Add("batch_size", static_cast<uint64_t>(batch));
  report.Add("objects_written", written);
  report.Add("objects_per_s", written / seconds);
  report.Add("put_failures", put_failures);
  report.Add("get_failures", get_failures);
  report.Add("get_mismatches", mismatches);
  report.Add("remove_failures", remove_failures);
  report.Print(json);
  if (mismatches > 0) {
    return absl::DataLossError(absl::StrCat(mismatches, " gets returned wrong bytes"));
  }
  if (put_failures + get_failures + remove_failures > 0 &&
      !absl::GetFlag(FLAGS_churn_tolerate_failures)) {
    return absl::InternalError(
        absl::StrCat(put_failures, " puts, ", get_failures, " gets and ", remove_failures,
                     " removes failed; the first: ", first_failure.ToString()));
  }
  return absl::OkStatus();
}

}  // namespace yuebing::bench
