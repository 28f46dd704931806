// yuebing-bench: benchmarks of the transfer engine and the baselines it is measured against.
//   yuebing-bench transfer --mode=target|initiator [...]
//   yuebing-bench socket   --mode=server|client [--pingpong] [...]
//   yuebing-bench memcpy   [--block_size=1MB --duration=5]
// Exit status: 0 on success, 1 when the run failed (verification mismatch included), 2 on usage.
#include <cstdio>
#include <string>
#include <vector>

#include "absl/flags/parse.h"
#include "absl/flags/usage.h"
#include "spdlog/sinks/stdout_color_sinks.h"
#include "spdlog/spdlog.h"
#include "subcommands.h"

namespace {

constexpr char kUsage[] =
    "usage: yuebing-bench <transfer|socket|memcpy|store|replay|spill|churn|master-rpc> [--flags]\n"
    "  transfer  transfer engine throughput/latency (--mode=target|initiator)\n"
    "  socket    raw loopback TCP baseline (--mode=server|client [--pingpong])\n"
    "  memcpy    single-thread memcpy baseline\n"
    "  store     store put/get/exist against a cluster (--master_server_address)\n"
    "  replay    trace replay against a cluster: hit rate vs an ideal LRU (--trace)\n"
    "  spill     disk tier spill + read-back throughput (--spill_bytes, --block_size)\n"
    "  churn     put/get/remove of fresh keys in a loop (--block_size, --batch_size, --duration)\n"
    "  master-rpc one-key IsExist round trips to a running master (--duration)\n"
    "Run `yuebing-bench transfer --helpfull` for every flag.";

}  // namespace

int main(int argc, char** argv) {
  absl::SetProgramUsageMessage(kUsage);
  // Engine logs go to stderr: stdout carries only READY lines and reports, for scripts.
  spdlog::set_default_logger(spdlog::stderr_color_mt("yuebing-bench"));
  if (argc < 2 || argv[1][0] == '-') {
    std::fprintf(stderr, "%s\n", kUsage);
    return 2;
  }
  const std::string command = argv[1];
  std::vector<char*> args{argv[0]};
  args.insert(args.end(), argv + 2, argv + argc);
  std::vector<char*> rest = absl::ParseCommandLine(static_cast<int>(args.size()), args.data());
  if (rest.size() > 1) {
    std::fprintf(stderr, "unexpected argument: %s\n%s\n", rest[1], kUsage);
    return 2;
  }
  absl::Status status;
  if (command == "transfer") {
    status = yuebing::bench::RunTransferBench();
  } else if (command == "socket") {
    status = yuebing::bench::RunSocketBench();
  } else if (command == "memcpy") {
    status = yuebing::bench::RunMemcpyBench();
  } else if (command == "store") {
    status = yuebing::bench::RunStoreBench();
  } else if (command == "replay") {
    status = yuebing::bench::RunReplayBench();
  } else if (command == "spill") {
    status = yuebing::bench::RunSpillBench();
  } else if (command == "churn") {
    status = yuebing::bench::RunChurnBench();
  } else if (command == "master-rpc") {
    status = yuebing::bench::RunMasterRpcBench();
  } else {
    std::fprintf(stderr, "unknown subcommand: %s\n%s\n", command.c_str(), kUsage);
    return 2;
  }
  if (!status.ok()) {
    std::fprintf(stderr, "yuebing-bench %s: %s\n", command.c_str(), status.ToString().c_str());
    return 1;
  }
  return 0;
}
