// Entry points of yuebing-bench's subcommands. Each reads its flags (bench_flags.h), runs, prints
// its report on stdout and returns OK, or the error that stopped it (printed by main).
#pragma once

#include "absl/status/status.h"

namespace yuebing::bench {

// Transfer engine throughput/latency: --mode=target|initiator (transfer_bench.cc).
absl::Status RunTransferBench();
// Raw single-stream TCP on loopback: --mode=server|client [--pingpong] (socket_baseline.cc).
absl::Status RunSocketBench();
// Single-thread memcpy between two large buffers (memcpy_baseline.cc).
absl::Status RunMemcpyBench();
// Store client batch put/get and batched Exist against a running cluster (store_bench.cc).
absl::Status RunStoreBench();
// Trace replay against a running cluster: hit rate vs an ideal LRU (replay_bench.cc).
absl::Status RunReplayBench();
// Disk tier spill + read-back throughput against a running cluster (spill_bench.cc).
absl::Status RunSpillBench();
// Put/get/remove of fresh keys in a loop against a running cluster (churn_bench.cc).
absl::Status RunChurnBench();
// Latency of one control-plane round trip (single-key IsExist) to a running master
// (master_rpc_bench.cc).
absl::Status RunMasterRpcBench();

}  // namespace yuebing::bench
