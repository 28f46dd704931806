// The admin HTTP server and the renderings it serves: Prometheus text, health, status page.
#include "master/admin_http_server.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <httplib.h>

#include <chrono>
#include <memory>
#include <string>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "master/master_metrics.h"
#include "yuebing/common/clock.h"
#include "yuebing/master/master_service.h"

namespace yuebing::master {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

constexpr const char* kHost = "127.0.0.1";

class AdminHttpServerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    service_ = std::make_unique<MasterService>(MasterOptions{}, clock_);
    AdminHttpServer::Options options;
    options.term_provider = [] { return uint64_t{3}; };
    auto server = AdminHttpServer::Start(kHost, 0, service_.get(), &metrics_, options);
    ASSERT_TRUE(server.ok()) << server.status();
    server_ = std::move(server).value();
    ASSERT_NE(server_->port(), 0);
  }

  // Returns the body of GET path, failing the test unless the status is `want_status`.
  std::string Get(const std::string& path, int want_status = 200,
                  std::string* content_type = nullptr) {
    httplib::Client client(kHost, server_->port());
    client.set_connection_timeout(std::chrono::seconds(2));
    client.set_read_timeout(std::chrono::seconds(5));
    auto res = client.Get(path);
    EXPECT_TRUE(res) << "no response for " << path;
    if (!res) return "";
    EXPECT_EQ(res->status, want_status) << path;
    if (content_type != nullptr) *content_type = res->get_header_value("Content-Type");
    return res->body;
  }

  void PutObject(const std::string& key, uint64_t size) {
    auto replicas = service_->PutStart("client-1", key, size, ReplicateConfig{});
    ASSERT_TRUE(replicas.ok()) << replicas.status();
    ASSERT_TRUE(service_->PutEnd("client-1", key, 0).ok());
  }

  FakeClock clock_;
  MasterMetrics metrics_;
  std::unique_ptr<MasterService> service_;
  std::unique_ptr<AdminHttpServer> server_;
};

TEST_F(AdminHttpServerTest, HealthIsOk) { EXPECT_EQ(Get("/health"), "OK"); }

TEST_F(AdminHttpServerTest, MetricsReflectTheMaster) {
  std::string content_type;
  std::string before = Get("/metrics", 200, &content_type);
  EXPECT_THAT(content_type, HasSubstr("text/plain"));
  EXPECT_THAT(before, HasSubstr("\nyuebing_master_objects 0\n"));
  EXPECT_THAT(before, HasSubstr("yuebing_master_term 3\n"));
  EXPECT_THAT(before, HasSubstr("# TYPE yuebing_master_rpc_latency_seconds histogram\n"));
  EXPECT_THAT(before,
              HasSubstr("yuebing_master_rpc_requests_total{rpc=\"BatchGetReplicaList\"} 0\n"));

  ASSERT_TRUE(service_->MountSegment("client-1", Segment{"node-a:1234", 4096, 1 << 20}).ok());
  PutObject("object", 1000);
  metrics_.RecordLookups(5, 2);
  metrics_.RecordRpc(RpcOp::kBatchGetReplicaList, true, 7, 2, std::chrono::microseconds(300));

  const std::string after = Get("/metrics");
  EXPECT_THAT(after, HasSubstr("\nyuebing_master_objects 1\n"));
  EXPECT_THAT(after, HasSubstr("\nyuebing_master_capacity_bytes 1048576\n"));
  EXPECT_THAT(after, Not(HasSubstr("\nyuebing_master_used_bytes 0\n")));
  EXPECT_THAT(after, HasSubstr("yuebing_master_segment_capacity_bytes{segment=\"node-a:1234\"} "
                               "1048576\n"));
  EXPECT_THAT(after, HasSubstr("yuebing_master_segment_used_bytes{segment=\"node-a:1234\"} "));
  EXPECT_THAT(after, HasSubstr("\nyuebing_master_hits_total 5\n"));
  EXPECT_THAT(after, HasSubstr("\nyuebing_master_misses_total 2\n"));
  EXPECT_THAT(after, HasSubstr("\nyuebing_master_clients 1\n"));
  EXPECT_THAT(after,
              HasSubstr("yuebing_master_rpc_requests_total{rpc=\"BatchGetReplicaList\"} 1\n"));
  EXPECT_THAT(after, HasSubstr("yuebing_master_rpc_keys_total{rpc=\"BatchGetReplicaList\"} 7\n"));
  // 300 us falls in the 0.0005 s bucket, not in the 0.00025 s one.
  EXPECT_THAT(after, HasSubstr("yuebing_master_rpc_latency_seconds_bucket{rpc=\""
                               "BatchGetReplicaList\",le=\"0.00025\"} 0\n"));
  EXPECT_THAT(after, HasSubstr("yuebing_master_rpc_latency_seconds_bucket{rpc=\""
                               "BatchGetReplicaList\",le=\"0.0005\"} 1\n"));
  EXPECT_THAT(after, HasSubstr("yuebing_master_rpc_latency_seconds_bucket{rpc=\""
                               "BatchGetReplicaList\",le=\"+Inf\"} 1\n"));
  EXPECT_THAT(after, HasSubstr("yuebing_master_rpc_latency_seconds_count{rpc=\""
                               "BatchGetReplicaList\"} 1\n"));
  EXPECT_THAT(after, HasSubstr("yuebing_master_rpc_latency_seconds_sum{rpc=\""
                               "BatchGetReplicaList\"} 0.000300000\n"));
}

TEST_F(AdminHttpServerTest, StatusPageListsSegmentsAndEscapesNames) {
  ASSERT_TRUE(service_->MountSegment("client-1", Segment{"node-a:1234", 0x1000, 1 << 20}).ok());
  ASSERT_TRUE(service_->MountSegment("client<2>", Segment{"<b>evil</b>", 0x1000, 1 << 20}).ok());
  PutObject("object", 4096);
  std::string content_type;
  const std::string page = Get("/", 200, &content_type);
  EXPECT_THAT(content_type, HasSubstr("text/html"));
  EXPECT_THAT(page, HasSubstr("<title>yuebing-master</title>"));
  EXPECT_THAT(page, HasSubstr("node-a:1234"));
  EXPECT_THAT(page, HasSubstr("client-1"));
  EXPECT_THAT(page, HasSubstr("&lt;b&gt;evil&lt;/b&gt;"));
  EXPECT_THAT(page, HasSubstr("client&lt;2&gt;"));
  EXPECT_THAT(page, Not(HasSubstr("<b>evil</b>")));
  EXPECT_THAT(page, HasSubstr("total (2)"));
  EXPECT_THAT(page, HasSubstr("2.00 MiB"));
}

TEST_F(AdminHttpServerTest, UnknownPathsAre404) {
  Get("/nope", 404);
  Get("/metrics/extra", 404);
}

TEST_F(AdminHttpServerTest, PortInUseIsAnError) {
  auto second = AdminHttpServer::Start(kHost, server_->port(), service_.get(), &metrics_);
  ASSERT_FALSE(second.ok());
  EXPECT_EQ(second.status().code(), absl::StatusCode::kUnavailable) << second.status();
  EXPECT_EQ(Get("/health"), "OK");
  EXPECT_FALSE(AdminHttpServer::Start(kHost, 0, nullptr, &metrics_).ok());
  EXPECT_FALSE(AdminHttpServer::Start(kHost, 0, service_.get(), nullptr).ok());
}

TEST(MasterMetricsTest, RenderingEscapesLabelsAndKeepsHistogramsCumulative) {
  MasterStats stats;
  SegmentUsage usage;
  usage.segment.name = "a\"b\\c\nd";
  usage.segment.size = 10;
  usage.used_bytes = 4;
  stats.segments.push_back(usage);
  MasterMetrics metrics;
  metrics.RecordRpc(RpcOp::kPing, true, 0, 0, std::chrono::nanoseconds(-5));
  metrics.RecordRpc(RpcOp::kPing, false, 0, 0, std::chrono::seconds(100));
  const std::string text = RenderPrometheus(stats, metrics, 0);
  EXPECT_THAT(text,
              HasSubstr("yuebing_master_segment_used_bytes{segment=\"a\\\"b\\\\c\\nd\"} 4\n"));
  EXPECT_THAT(text, HasSubstr("yuebing_master_rpc_latency_seconds_bucket{rpc=\"Ping\",le=\"5e-05\"}"
                              " 1\n"));
  EXPECT_THAT(text,
              HasSubstr("yuebing_master_rpc_latency_seconds_bucket{rpc=\"Ping\",le=\"2.5\"} 1\n"));
  EXPECT_THAT(text,
              HasSubstr("yuebing_master_rpc_latency_seconds_bucket{rpc=\"Ping\",le=\"+Inf\"} 2\n"));
  EXPECT_THAT(text, HasSubstr("yuebing_master_rpc_failures_total{rpc=\"Ping\"} 1\n"));
  // Every sample line belongs to a declared metric.
  for (absl::string_view line : absl::StrSplit(text, '\n')) {
    if (line.empty() || absl::StartsWith(line, "#")) continue;
    EXPECT_TRUE(absl::StartsWith(line, "yuebing_master_")) << line;
  }
  EXPECT_STREQ(RpcOpName(RpcOp::kRemoveAll), "RemoveAll");
}

TEST(MasterMetricsTest, StatusPageRendersWithoutSegments) {
  MasterMetrics metrics;
  const std::string page = RenderStatusPage(MasterStats{}, metrics, 0, std::chrono::seconds(90061));
  EXPECT_THAT(page, HasSubstr("1d 01h 01m 01s"));
  EXPECT_THAT(page, HasSubstr("total (0)"));
}

}  // namespace
}  // namespace yuebing::master
