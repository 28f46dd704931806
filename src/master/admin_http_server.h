// The master's admin HTTP endpoint (the --metrics_port server):
//   GET /metrics  Prometheus text (format 0.0.4), see RenderPrometheus() in master_metrics.h
//   GET /health   "OK"
//   GET /         a small HTML status page: summary and a table of segments (name, client, epoch,
//                 used/size, usage %) with totals
// Other paths get 404. The port is bound without SO_REUSEPORT: a port already in use is an error.
//
// Thread safety: requests are served on the server's own bounded thread pool; the MasterService
// and MasterMetrics must outlive the server.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "master/master_metrics.h"
#include "yuebing/master/master_service.h"

namespace yuebing::master {

// The page served at "/", from a snapshot of the master's state. Exposed for tests.
std::string RenderStatusPage(const MasterStats& stats, const MasterMetrics& metrics, uint64_t term,
                             std::chrono::seconds uptime);

class AdminHttpServer {
 public:
  struct Options {
    // The leadership term shown on the pages; nullptr means a constant 0 (no HA).
    std::function<uint64_t()> term_provider;
  };

  // Binds host:port (port 0 picks a free one) and starts serving before returning.
  // Errors: kInvalidArgument (no service or metrics), kUnavailable (cannot bind).
  static absl::StatusOr<std::unique_ptr<AdminHttpServer>> Start(const std::string& host,
                                                                uint16_t port,
                                                                const MasterService* service,
                                                                const MasterMetrics* metrics,
                                                                Options options);
  static absl::StatusOr<std::unique_ptr<AdminHttpServer>> Start(const std::string& host,
                                                                uint16_t port,
                                                                const MasterService* service,
                                                                const MasterMetrics* metrics) {
    return Start(host, port, service, metrics, Options{});
  }

  ~AdminHttpServer();  // stops serving and joins its threads
  AdminHttpServer(const AdminHttpServer&) = delete;
  AdminHttpServer& operator=(const AdminHttpServer&) = delete;

  uint16_t port() const;

 private:
  class Impl;
  explicit AdminHttpServer(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace yuebing::master
