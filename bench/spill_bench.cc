// yuebing-bench spill: disk tier throughput against a running cluster whose store(s) have a
// disk tier (--ssd_path) and less memory than the data written. Puts --spill_bytes of
// --block_size values one at a time (a put refused for lack of memory is retried until spills
// free some: the put rate past the memory capacity is the spill rate), then reads every object
// back, checking its bytes, and reports how many reads the disk tier served.
#include <chrono>
#include <cstring>
#include <string>
#include <thread>

#include "absl/flags/flag.h"
#include "absl/strings/str_cat.h"
#include "bench_flags.h"
#include "report.h"
#include "subcommands.h"
#include "transfer_verify.h"
#include "yuebing/common/config.h"
#include "yuebing/common/error_code.h"
#include "yuebing/common/status.h"
#include "yuebing/store/client.h"

ABSL_FLAG(std::string, spill_bytes, "1GB", "spill: bytes written (make it exceed the memory)");
ABSL_DECLARE_FLAG(std::string, master_server_address);

namespace yuebing::bench {
namespace {

using Clock = std::chrono::steady_clock;

}  // namespace

absl::Status RunSpillBench() {
  store::ClientConfig config;
  config.master_server_address = absl::GetFlag(FLAGS_master_server_address);
  YB_ASSIGN_OR_RETURN(std::unique_ptr<store::Client> client, store::Client::Create(config));
  YB_ASSIGN_OR_RETURN(const uint64_t block, ParseSize(absl::GetFlag(FLAGS_block_size)));
  YB_ASSIGN_OR_RETURN(const uint64_t total, ParseSize(absl::GetFlag(FLAGS_spill_bytes)));
  if (block == 0 || total < block) {
    return MakeError(ErrorCode::kInvalidParams, "need 0 < --block_size <= --spill_bytes");
  }
  const uint64_t objects = total / block;
  const std::string run = absl::StrCat(Clock::now().time_since_epoch().count());
  std::string value;
  uint64_t retries = 0;
  double put_seconds = 0;
  for (uint64_t i = 0; i < objects; ++i) {
    value = PatternValue(i, block);
    const auto deadline = Clock::now() + std::chrono::seconds(60);
    const auto start = Clock::now();
    while (true) {
      absl::Status status = client->Put(absl::StrCat("spill-", run, "-", i), value);
      if (status.ok()) break;
      if (ToErrorCode(status) != ErrorCode::kNoAvailableHandle || Clock::now() > deadline) {
        return status;
      }
      ++retries;
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    put_seconds += std::chrono::duration<double>(Clock::now() - start).count();
  }
  double get_seconds = 0;
  uint64_t misses = 0, mismatches = 0;
  for (uint64_t i = 0; i < objects; ++i) {
    const auto start = Clock::now();
    absl::StatusOr<std::string> got = client->Get(absl::StrCat("spill-", run, "-", i));
    get_seconds += std::chrono::duration<double>(Clock::now() - start).count();
    if (!got.ok()) {
      ++misses;
    } else if (*got != PatternValue(i, block)) {
      ++mismatches;
    }
  }
  const store::ClientStats stats = client->Stats();
  Report report;
  report.Add("test", "spill");
  report.Add("block_bytes", block);
  report.Add("objects", objects);
  report.Add("put_gbps", put_seconds > 0 ? objects * block / put_seconds / 1e9 : 0.0);
  report.Add("put_retries", retries);
  report.Add("get_gbps", get_seconds > 0 ? (objects - misses) * block / get_seconds / 1e9 : 0.0);
  report.Add("disk_reads", stats.disk_reads);
  report.Add("misses", misses);
  report.Add("mismatches", mismatches);
  report.Print(absl::GetFlag(FLAGS_report) == "json");
  if (mismatches > 0) return MakeError(ErrorCode::kInternalError, "read back other bytes");
  return absl::OkStatus();
}

}  // namespace yuebing::bench
