// The master's admin HTTP endpoint (the --metrics_port server):
//   GET /metrics  Prometheus text (format 0.0.4), see RenderPrometheus() in master_metrics.h
//   GET /health   "OK"
//   GET /         a small HTML status page: summary and a table of segments (name, client, epoch,
//                 used/size, usage %) with totals
//   GET /metrics/summary  one line of text: role, state, objects, usage, hits/misses, term
//   GET /get_all_segments, /get_all_keys, /query_key, /batch_query_keys, /query_segment,
//       /get_segments_detail   upstream Mooncake's read-only pages, see admin_http_pages.h
//   GET /role       "leader" or "standby" (text); /ha_status "serving" or "standby"
//   GET /leader     {"present":true,"leader_address":"host:port"} when a leader is known (HA),
//                   with ,"view_version":term added when this master is that leader;
//                   {"present":false} otherwise (always without HA)
//   POST /api/v1/remove_all[?force=true|1]  MasterService::RemoveAll(force), answers
//                   {"success":true,"removed_count":N}; without force leased objects stay;
//                   403 when Options::allow_remove_all is false
//   POST /api/v1/drain_jobs, /api/v1/drain_jobs/cancel?job_id=;
//   GET /api/v1/drain_jobs/query?job_id=, /api/v1/segments/status?segment=   upstream's drain
//                   jobs, see admin_drain_pages.h; the POSTs answer 403 as remove_all does
// While an HA master is not the leader, the object and segment pages and remove_all answer 503
// {"success":false,"error_code":-1010,"error_message":"service plane is not active"}, as
// upstream's standby does.
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
    // Whether this master leads now (HA); nullptr means no HA: it always leads.
    std::function<bool()> is_leader;
    // The leader's "host:port" as this master knows it (HA), shown by /leader; empty: unknown.
    // nullptr (no HA): /leader says no leader is present, as upstream's master without HA.
    std::function<std::string()> leader_address;
    // Serve POST /api/v1/remove_all and the drain-job POSTs. The pages are unauthenticated, so a
    // master that requires a cluster secret on its RPCs turns them off (they then answer 403).
    bool allow_remove_all = true;
  };

  // Binds host:port (port 0 picks a free one) and starts serving before returning.
  // Errors: kInvalidArgument (no service or metrics), kUnavailable (cannot bind).
  static absl::StatusOr<std::unique_ptr<AdminHttpServer>> Start(const std::string& host,
                                                                uint16_t port,
                                                                MasterService* service,
                                                                const MasterMetrics* metrics,
                                                                Options options);
  static absl::StatusOr<std::unique_ptr<AdminHttpServer>> Start(const std::string& host,
                                                                uint16_t port,
                                                                MasterService* service,
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
