// yb_fault_writer: a store client process for the fault suite. Puts one checker value and exits.
//   yb_fault_writer <master host:port> <key> <version> <size> <seed>
// Prints "put ok" or "put failed <status>" and exits 0 / 1 (2 for bad arguments). Run with
// YUEBING_TEST_FAULT_POINT=<point> (src/store/fault_point.h) it kills itself mid-put.
#include <chrono>
#include <cstdio>
#include <string>

#include "absl/strings/numbers.h"
#include "fault/checker.h"
#include "yuebing/store/client.h"

int main(int argc, char** argv) {
  uint64_t version = 0, size = 0, seed = 0;
  if (argc != 6 || !absl::SimpleAtoi(argv[3], &version) || !absl::SimpleAtoi(argv[4], &size) ||
      !absl::SimpleAtoi(argv[5], &seed)) {
    std::fprintf(stderr, "usage: yb_fault_writer <master> <key> <version> <size> <seed>\n");
    return 2;
  }
  yuebing::store::ClientConfig config;
  config.master_server_address = argv[1];
  config.rpc_timeout = std::chrono::milliseconds(1000);
  config.transfer_timeout = std::chrono::milliseconds(1000);
  auto client = yuebing::store::Client::Create(config);
  if (!client.ok()) {
    std::printf("put failed %s\n", client.status().ToString().c_str());
    return 1;
  }
  const std::string key = argv[2];
  absl::Status status = (*client)->Put(key, yuebing::fault::MakeValue(seed, key, version, size));
  std::printf("put %s %s\n", status.ok() ? "ok" : "failed", status.ToString().c_str());
  std::fflush(stdout);
  return status.ok() ? 0 : 1;
}
