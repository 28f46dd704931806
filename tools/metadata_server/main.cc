// yuebing-metadata-server: serves the transfer engine's metadata over HTTP
// (GET/PUT/DELETE /metadata?key=K, GET /health) until SIGINT or SIGTERM, then exits 0.
// Exit codes: 0 after a signal, 1 when it cannot serve, 2 for bad flags.
#include <signal.h>

#include <cstdint>
#include <cstdio>
#include <string>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/flags/usage.h"
#include "yuebing/common/http_metadata_server.h"
#include "yuebing/common/logging.h"
#include "yuebing/common/stop_signals.h"

ABSL_FLAG(std::string, host, "0.0.0.0", "Address to listen on.");
ABSL_FLAG(int32_t, port, 8080, "TCP port to listen on (0 picks a free one).");

namespace {}  // namespace

int main(int argc, char** argv) {
  absl::SetProgramUsageMessage(
      "Serves the yuebing transfer engine metadata over HTTP.\n"
      "Usage: yuebing-metadata-server [--host=0.0.0.0] [--port=8080]");
  absl::ParseCommandLine(argc, argv);
  yuebing::InitLogging();

  const std::string host = absl::GetFlag(FLAGS_host);
  const int32_t port = absl::GetFlag(FLAGS_port);
  if (port < 0 || port > 65535) {
    std::fprintf(stderr, "yuebing-metadata-server: --port must be 0..65535, got %d\n", port);
    return 2;
  }
  if (host.empty()) {
    std::fprintf(stderr, "yuebing-metadata-server: --host must not be empty\n");
    return 2;
  }

  const sigset_t stop_signals = yuebing::BlockStopSignals();
  auto server = yuebing::HttpMetadataServer::Start(host, static_cast<uint16_t>(port));
  if (!server.ok()) {
    std::fprintf(stderr, "yuebing-metadata-server: %s\n", server.status().ToString().c_str());
    return 1;
  }
  std::printf("yuebing-metadata-server listening on %s:%u\n", host.c_str(),
              static_cast<unsigned>((*server)->port()));
  std::fflush(stdout);

  const int signal_number = yuebing::WaitForStopSignal(stop_signals);
  YB_LOG_INFO("yuebing-metadata-server: signal {}, stopping with {} keys", signal_number,
              (*server)->KeyCount());
  server->reset();
  return 0;
}
