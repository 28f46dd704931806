#include "master/admin_http_server.h"

#include <httplib.h>
#include <sys/socket.h>

#include <algorithm>
#include <atomic>
#include <thread>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "common/http_bind.h"
#include "master/admin_drain_pages.h"
#include "master/admin_http_pages.h"
#include "master/admin_tenant_pages.h"
#include "yuebing/common/config.h"
#include "yuebing/common/error_code.h"
#include "yuebing/common/logging.h"

namespace yuebing::master {
namespace {

using SteadyClock = std::chrono::steady_clock;

constexpr auto kStartupTimeout = std::chrono::seconds(5);
// Bounds how long the destructor may wait for an idle keep-alive connection to be dropped.
constexpr time_t kKeepAliveTimeoutSec = 2;
// Only POST /api/v1/drain_jobs has a body (segment names); remove_all takes its flag in the query.
constexpr size_t kMaxBodyBytes = 64 << 10;

// The answer of upstream's standby master to the object and segment pages.
void SendStandby(httplib::Response& res) {
  res.status = 503;
  res.set_content(absl::StrCat("{\"success\":false,\"error_code\":",
                               static_cast<int32_t>(ErrorCode::kUnavailableInCurrentMode),
                               ",\"error_message\":\"service plane is not active\"}"),
                  kAdminJsonType);
}

std::string EscapeHtml(const std::string& text) {
  std::string out;
  out.reserve(text.size());
  for (char c : text) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      case '\'':
        out += "&#39;";
        break;
      default:
        out.push_back(c);
    }
  }
  return out;
}

std::string Percent(uint64_t used, uint64_t total) {
  if (total == 0) return "-";
  return absl::StrFormat("%.1f%%", 100.0 * static_cast<double>(used) / static_cast<double>(total));
}

std::string Uptime(std::chrono::seconds uptime) {
  const int64_t s = std::max<int64_t>(0, uptime.count());
  return absl::StrFormat("%dd %02dh %02dm %02ds", s / 86400, s / 3600 % 24, s / 60 % 60, s % 60);
}

void AppendSummary(std::string* out, const MasterStats& stats, const MasterMetrics& metrics,
                   uint64_t term, std::chrono::seconds uptime) {
  const uint64_t lookups = metrics.hits() + metrics.misses();
  absl::StrAppend(out, "<table class=\"summary\">\n");
  auto row = [out](absl::string_view name, const std::string& value) {
    absl::StrAppend(out, "<tr><th>", name, "</th><td>", value, "</td></tr>\n");
  };
  row("term", absl::StrCat(term));
  row("uptime", Uptime(uptime));
  row("clients", absl::StrCat(stats.clients));
  row("segments", absl::StrCat(stats.segments.size()));
  row("objects", absl::StrCat(stats.objects));
  row("used", absl::StrCat(FormatSize(stats.used_bytes), " / ", FormatSize(stats.capacity_bytes),
                           " (", Percent(stats.used_bytes, stats.capacity_bytes), "), ",
                           FormatSize(stats.condemned_bytes), " of it evictable at once"));
  row("lookups", absl::StrCat(metrics.hits(), " hits, ", metrics.misses(), " misses (hit rate ",
                              Percent(metrics.hits(), lookups), ")"));
  row("evictions", absl::StrCat(stats.evicted_objects, " objects in ", stats.evictions, " passes"));
  absl::StrAppend(out, "</table>\n");
}

void AppendSegments(std::string* out, const MasterStats& stats) {
  std::vector<const SegmentUsage*> segments;
  segments.reserve(stats.segments.size());
  for (const SegmentUsage& usage : stats.segments) segments.push_back(&usage);
  std::sort(segments.begin(), segments.end(), [](const SegmentUsage* a, const SegmentUsage* b) {
    return a->segment.name < b->segment.name;
  });
  absl::StrAppend(out,
                  "<h2>Segments</h2>\n<table class=\"segments\">\n<tr><th>name</th><th>client</th>"
                  "<th>epoch</th><th>used / size</th><th>usage</th></tr>\n");
  uint64_t used = 0;
  uint64_t size = 0;
  for (const SegmentUsage* usage : segments) {
    used += usage->used_bytes;
    size += usage->segment.size;
    absl::StrAppend(out, "<tr><td>", EscapeHtml(usage->segment.name), "</td><td>",
                    EscapeHtml(usage->client_id), "</td><td>", usage->epoch, "</td><td>",
                    FormatSize(usage->used_bytes), " / ", FormatSize(usage->segment.size),
                    "</td><td>", Percent(usage->used_bytes, usage->segment.size), "</td></tr>\n");
  }
  absl::StrAppend(out, "<tr class=\"total\"><th>total (", segments.size(),
                  ")</th><td></td><td></td><td>", FormatSize(used), " / ", FormatSize(size),
                  "</td><td>", Percent(used, size), "</td></tr>\n</table>\n");
}

}  // namespace

std::string RenderStatusPage(const MasterStats& stats, const MasterMetrics& metrics, uint64_t term,
                             std::chrono::seconds uptime) {
  std::string out;
  out.reserve(2048 + stats.segments.size() * 200);
  absl::StrAppend(&out,
                  "<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\">"
                  "<title>yuebing-master</title>\n<style>body{font-family:sans-serif}"
                  "table{border-collapse:collapse}th,td{border:1px solid #ccc;padding:2px 8px;"
                  "text-align:left}</style></head>\n<body>\n<h1>yuebing-master</h1>\n");
  AppendSummary(&out, stats, metrics, term, uptime);
  AppendSegments(&out, stats);
  absl::StrAppend(&out,
                  "<p><a href=\"/metrics\">/metrics</a> &middot; <a href=\"/health\">/health</a>"
                  "</p>\n</body></html>\n");
  return out;
}

class AdminHttpServer::Impl {
 public:
  Impl(MasterService* service, const MasterMetrics* metrics, Options options)
      : service_(service), metrics_(metrics), options_(std::move(options)) {}

  ~Impl() {
    server_.stop();
    if (thread_.joinable()) thread_.join();
  }

  absl::Status Serve(const std::string& host, uint16_t port);
  uint16_t port() const { return port_; }

 private:
  uint64_t Term() const { return options_.term_provider ? options_.term_provider() : 0; }
  bool Leading() const { return !options_.is_leader || options_.is_leader(); }
  void Routes();
  void DrainRoutes();   // /api/v1/drain_jobs[/query|/cancel], /api/v1/segments/status
  void TenantRoutes();  // /api/v1/tenant_quotas
  // Registers GET `path` serving `page(request)`, or 503 while a standby.
  void DataPage(const std::string& path, std::function<AdminPage(const httplib::Request&)> page);
  // A route that changes state ("PUT", "DELETE", else POST): 403 on a master with a cluster
  // secret (`what` names it in the body), 503 on a standby, else `page`.
  void MutatingPage(const std::string& method, const std::string& path, const char* what,
                    std::function<AdminPage(const httplib::Request&)> page);
  std::string Summary() const;

  MasterService* const service_;
  const MasterMetrics* const metrics_;
  const Options options_;
  const SteadyClock::time_point started_ = SteadyClock::now();
  httplib::Server server_;
  std::thread thread_;
  std::atomic<bool> listen_returned_{false};
  uint16_t port_ = 0;
};

void AdminHttpServer::Impl::Routes() {
  server_.Get("/metrics", [this](const httplib::Request&, httplib::Response& res) {
    res.set_content(RenderPrometheus(service_->Stats(), *metrics_, Term()) +
                        (Leading() ? TenantQuotaMetrics(*service_) : std::string()),
                    "text/plain; version=0.0.4; charset=utf-8");
  });
  server_.Get("/health", [](const httplib::Request&, httplib::Response& res) {
    res.set_content("OK", "text/plain");
  });
  server_.Get("/", [this](const httplib::Request&, httplib::Response& res) {
    const auto uptime =
        std::chrono::duration_cast<std::chrono::seconds>(SteadyClock::now() - started_);
    res.set_content(RenderStatusPage(service_->Stats(), *metrics_, Term(), uptime),
                    "text/html; charset=utf-8");
  });
  server_.Get("/metrics/summary", [this](const httplib::Request&, httplib::Response& res) {
    res.set_content(Summary(), kAdminTextType);
  });
  server_.Get("/role", [this](const httplib::Request&, httplib::Response& res) {
    res.set_content(Leading() ? "leader" : "standby", "text/plain; charset=utf-8");
  });
  server_.Get("/ha_status", [this](const httplib::Request&, httplib::Response& res) {
    res.set_content(Leading() ? "serving" : "standby", "text/plain; charset=utf-8");
  });
  server_.Get("/leader", [this](const httplib::Request&, httplib::Response& res) {
    const std::string leader = options_.leader_address ? options_.leader_address() : "";
    std::string body = "{\"present\":false}";
    if (!leader.empty()) {
      body = "{\"present\":true,\"leader_address\":";
      AppendJsonString(&body, leader);
      // Only the leader knows its term (the leadership key's creation revision).
      if (Leading()) absl::StrAppend(&body, ",\"view_version\":", Term());
      body.push_back('}');
    }
    res.set_content(body, kAdminJsonType);
  });
  DataPage("/get_all_segments",
           [this](const httplib::Request&) { return AllSegmentsPage(*service_); });
  DataPage("/get_all_keys", [this](const httplib::Request& req) {
    return AllKeysPage(*service_, kMaxListedKeys, req.get_param_value("tenant_id"));
  });
  DataPage("/query_key", [this](const httplib::Request& req) {
    return QueryKeyPage(*service_, req.get_param_value("key"), req.get_param_value("tenant_id"));
  });
  DataPage("/batch_query_keys", [this](const httplib::Request& req) {
    return BatchQueryKeysPage(*service_, req.get_param_value("keys"),
                              req.get_param_value("tenant_id"));
  });
  DataPage("/query_segment", [this](const httplib::Request& req) {
    return QuerySegmentPage(*service_, req.get_param_value("segment"));
  });
  DataPage("/get_segments_detail",
           [this](const httplib::Request&) { return SegmentsDetailPage(*service_); });
  server_.Post("/api/v1/remove_all", [this](const httplib::Request& req, httplib::Response& res) {
    if (!options_.allow_remove_all) {
      res.status = 403;
      res.set_content(
          "{\"success\":false,\"error\":\"remove_all over HTTP is off on a master that "
          "requires a cluster secret; use the authenticated RPC\"}",
          kAdminJsonType);
      return;
    }
    if (!Leading()) return SendStandby(res);
    const std::string force = req.get_param_value("force");
    // tenant_id: that tenant's objects only; absent or empty: every tenant's (as upstream).
    const uint64_t removed =
        service_->RemoveAll(force == "true" || force == "1", req.get_param_value("tenant_id"));
    res.set_content(absl::StrCat("{\"success\":true,\"removed_count\":", removed, "}"),
                    kAdminJsonType);
  });
  DrainRoutes();
  TenantRoutes();
}

void AdminHttpServer::Impl::TenantRoutes() {
  DataPage("/api/v1/tenant_quotas", [this](const httplib::Request& req) {
    return GetTenantQuotasPage(*service_, req.get_param_value("tenant_id"));
  });
  MutatingPage("PUT", "/api/v1/tenant_quotas", "tenant quota changes",
               [this](const httplib::Request& req) {
                 return PutTenantQuotaPage(*service_, req.get_param_value("tenant_id"), req.body);
               });
  MutatingPage("DELETE", "/api/v1/tenant_quotas", "tenant quota changes",
               [this](const httplib::Request& req) {
                 return DeleteTenantQuotaPage(*service_, req.get_param_value("tenant_id"));
               });
}

void AdminHttpServer::Impl::DrainRoutes() {
  MutatingPage("POST", "/api/v1/drain_jobs", "drain jobs", [this](const httplib::Request& req) {
    return CreateDrainJobPage(*service_, req.body);
  });
  MutatingPage("POST", "/api/v1/drain_jobs/cancel", "drain jobs",
               [this](const httplib::Request& req) {
                 return CancelDrainJobPage(*service_, req.get_param_value("job_id"));
               });
  DataPage("/api/v1/drain_jobs/query", [this](const httplib::Request& req) {
    return QueryDrainJobPage(*service_, req.get_param_value("job_id"));
  });
  DataPage("/api/v1/segments/status", [this](const httplib::Request& req) {
    return SegmentStatusPage(*service_, req.get_param_value("segment"));
  });
}

void AdminHttpServer::Impl::MutatingPage(const std::string& method, const std::string& path,
                                         const char* what,
                                         std::function<AdminPage(const httplib::Request&)> page) {
  auto handler = [this, what, page = std::move(page)](const httplib::Request& req,
                                                      httplib::Response& res) {
    // The port is unauthenticated: refused, as remove_all, on a master whose RPCs need a
    // cluster secret.
    if (!options_.allow_remove_all) {
      res.status = 403;
      res.set_content(absl::StrCat("{\"success\":false,\"error\":\"", what,
                                   " over HTTP are off on a master that requires a cluster "
                                   "secret\"}"),
                      kAdminJsonType);
      return;
    }
    if (!Leading()) return SendStandby(res);
    AdminPage answer = page(req);
    res.status = answer.status;
    res.set_content(std::move(answer.body), answer.content_type);
  };
  if (method == "PUT") {
    server_.Put(path, std::move(handler));
  } else if (method == "DELETE") {
    server_.Delete(path, std::move(handler));
  } else {
    server_.Post(path, std::move(handler));
  }
}

void AdminHttpServer::Impl::DataPage(const std::string& path,
                                     std::function<AdminPage(const httplib::Request&)> page) {
  server_.Get(path,
              [this, page = std::move(page)](const httplib::Request& req, httplib::Response& res) {
                if (!Leading()) return SendStandby(res);
                AdminPage answer = page(req);
                res.status = answer.status;
                if (answer.truncated) res.set_header("X-Yuebing-Keys-Truncated", "true");
                res.set_content(std::move(answer.body), answer.content_type);
              });
}

std::string AdminHttpServer::Impl::Summary() const {
  const MasterStats stats = service_->Stats();
  const bool leading = Leading();
  return absl::StrFormat(
      "role=%s, state=%s, service_ready=%s, master={objects=%d, segments=%d, clients=%d, "
      "used_bytes=%d, capacity_bytes=%d, hits=%d, misses=%d, evicted_objects=%d}, term=%d",
      leading ? "leader" : "standby", leading ? "serving" : "standby", leading ? "true" : "false",
      stats.objects, stats.segments.size(), stats.clients, stats.used_bytes, stats.capacity_bytes,
      metrics_->hits(), metrics_->misses(), stats.evicted_objects, Term());
}

absl::Status AdminHttpServer::Impl::Serve(const std::string& host, uint16_t port) {
  Routes();
  server_.set_payload_max_length(kMaxBodyBytes);
  server_.set_keep_alive_timeout(kKeepAliveTimeoutSec);
  absl::StatusOr<uint16_t> bound = BindHttpServer(server_, host, port);
  if (!bound.ok()) return bound.status();
  port_ = *bound;
  thread_ = std::thread([this] {
    server_.listen_after_bind();
    listen_returned_.store(true);
  });
  const auto deadline = SteadyClock::now() + kStartupTimeout;
  while (!server_.is_running()) {
    if (listen_returned_.load() || SteadyClock::now() > deadline) {
      return absl::InternalError(
          absl::StrCat("admin HTTP server on ", host, ":", port_, " did not start serving"));
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  YB_LOG_DEBUG("master admin HTTP serving on {}:{}", host, port_);
  return absl::OkStatus();
}

AdminHttpServer::AdminHttpServer(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

AdminHttpServer::~AdminHttpServer() = default;

uint16_t AdminHttpServer::port() const { return impl_->port(); }

absl::StatusOr<std::unique_ptr<AdminHttpServer>> AdminHttpServer::Start(
    const std::string& host, uint16_t port, MasterService* service, const MasterMetrics* metrics,
    Options options) {
  if (service == nullptr || metrics == nullptr) {
    return absl::InvalidArgumentError("admin HTTP server needs a MasterService and MasterMetrics");
  }
  auto impl = std::make_unique<Impl>(service, metrics, std::move(options));
  if (auto status = impl->Serve(host, port); !status.ok()) return status;
  return std::unique_ptr<AdminHttpServer>(new AdminHttpServer(std::move(impl)));
}

}  // namespace yuebing::master
