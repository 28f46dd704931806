// yb_test_target: a transfer engine target in its own process, for multi-process tests.
// Usage: yb_test_target [--metadata=CONN] [--size=BYTES] [--shm]
// The cluster secret comes from the environment ($YUEBING_CLUSTER_SECRET[_FILE]).
// Registers one buffer (shm-backed with --shm), prints "READY <segment> <addr> <length>" and
// serves until SIGTERM/SIGINT.
#include <signal.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "yuebing/common/cluster_auth.h"
#include "yuebing/common/stop_signals.h"
#include "yuebing/transport/transfer_engine.h"

int main(int argc, char** argv) {
  yuebing::transport::TransferEngineOptions options;
  size_t size = 64 << 20;
  bool shm = false;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg.rfind("--metadata=", 0) == 0) options.metadata_conn = arg.substr(11);
    if (arg.rfind("--size=", 0) == 0) size = std::stoull(arg.substr(7));
    if (arg == "--shm") shm = true;
  }
  auto secret = yuebing::LoadClusterSecret();
  if (!secret.ok()) {
    std::fprintf(stderr, "secret: %s\n", secret.status().ToString().c_str());
    return 1;
  }
  options.cluster_secret = *secret;
  const sigset_t signals = yuebing::BlockStopSignals();
  auto engine = yuebing::transport::TransferEngine::Create(options);
  if (!engine.ok()) {
    std::fprintf(stderr, "engine: %s\n", engine.status().ToString().c_str());
    return 1;
  }
  void* buffer = nullptr;
  if (shm) {
    auto allocated = (*engine)->AllocateSharedMemory(size);
    if (!allocated.ok()) return 2;
    buffer = *allocated;
  } else {
    buffer = std::aligned_alloc(4096, size);
    if (!(*engine)->RegisterLocalMemory(buffer, size).ok()) return 2;
  }
  std::memset(buffer, 0, size);
  std::printf("READY %s %lu %zu\n", (*engine)->LocalSegmentName().c_str(),
              reinterpret_cast<unsigned long>(buffer), size);
  std::fflush(stdout);
  yuebing::WaitForStopSignal(signals);
  return 0;
}
