// The admin HTTP server's Mooncake-compatible pages, over real HTTP on 127.0.0.1 against a real
// MasterService: object and segment queries (lease-free), HA pages, summary and remove_all.
#include "master/admin_http_pages.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <httplib.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "master/admin_http_server.h"
#include "master/master_metrics.h"
#include "yuebing/common/clock.h"
#include "yuebing/common/error_code.h"
#include "yuebing/master/master_service.h"

namespace yuebing::master {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;
using ::testing::UnorderedElementsAre;

constexpr const char* kHost = "127.0.0.1";
constexpr const char* kText = "text/plain; version=0.0.4";
constexpr const char* kJson = "application/json; charset=utf-8";

class AdminHttpPagesTest : public ::testing::Test {
 protected:
  void SetUp() override {
    service_ = std::make_unique<MasterService>(MasterOptions{}, clock_);
    AdminHttpServer::Options options;
    options.term_provider = [] { return uint64_t{7}; };
    options.is_leader = [this] { return leading_.load(); };
    options.leader_address = [this] {
      if (leading_) return std::string("10.0.0.1:50051");
      return std::string(other_leader_known_ ? "10.0.0.2:50051" : "");
    };
    auto server = AdminHttpServer::Start(kHost, 0, service_.get(), &metrics_, options);
    ASSERT_TRUE(server.ok()) << server.status();
    server_ = std::move(server).value();
    // Two segments of two clients; "seg-b" is mounted first so that listings show sorting.
    ASSERT_TRUE(service_->MountSegment("client-2", Segment{"seg-b:2", 0x20000, 1 << 20}).ok());
    ASSERT_TRUE(service_->MountSegment("client-1", Segment{"seg-a:1", 0x10000, 1 << 20}).ok());
  }

  struct Answer {
    int status = 0;
    std::string content_type;
    std::string body;
    std::string truncated;
  };

  Answer Request(const std::string& method, const std::string& path) {
    httplib::Client client(kHost, server_->port());
    client.set_connection_timeout(std::chrono::seconds(2));
    client.set_read_timeout(std::chrono::seconds(5));
    auto res = method == "POST" ? client.Post(path) : client.Get(path);
    EXPECT_TRUE(res) << "no response for " << method << " " << path;
    if (!res) return {};
    return Answer{res->status, res->get_header_value("Content-Type"), res->body,
                  res->get_header_value("X-Yuebing-Keys-Truncated")};
  }
  Answer Get(const std::string& path) { return Request("GET", path); }

  // Puts a complete object on `segment` and returns its replica.
  Replica PutObject(const std::string& key, uint64_t size, const std::string& segment) {
    ReplicateConfig config;
    config.preferred_segment = segment;
    auto replicas = service_->PutStart("client-1", key, size, config);
    EXPECT_TRUE(replicas.ok()) << replicas.status();
    if (!replicas.ok() || replicas->empty()) return {};
    EXPECT_EQ((*replicas)[0].segment_name, segment);
    EXPECT_TRUE(service_->PutEnd("client-1", key, 0).ok());
    return (*replicas)[0];
  }

  static std::string Descriptor(const Replica& replica) {
    return absl::StrCat("{\"size_\":", replica.size, ",\"buffer_address_\":", replica.address,
                        ",\"protocol_\":\"\",\"transport_endpoint_\":\"", replica.segment_name,
                        "\"}");
  }

  FakeClock clock_;
  MasterMetrics metrics_;
  std::atomic<bool> leading_{true};
  std::atomic<bool> other_leader_known_{false};  // while standing by
  std::unique_ptr<MasterService> service_;
  std::unique_ptr<AdminHttpServer> server_;
};

TEST_F(AdminHttpPagesTest, AllSegmentsListsNamesSorted) {
  const Answer answer = Get("/get_all_segments");
  EXPECT_EQ(answer.status, 200);
  EXPECT_EQ(answer.content_type, kText);
  EXPECT_EQ(answer.body, "seg-a:1\nseg-b:2\n");
}

TEST_F(AdminHttpPagesTest, AllKeysListsCompleteObjectsOnly) {
  EXPECT_EQ(Get("/get_all_keys").body, "");
  PutObject("k1", 100, "seg-a:1");
  PutObject("k2", 200, "seg-b:2");
  ASSERT_TRUE(service_->PutStart("client-1", "unfinished", 64, ReplicateConfig{}).ok());
  const Answer answer = Get("/get_all_keys");
  EXPECT_EQ(answer.status, 200);
  EXPECT_EQ(answer.content_type, kText);
  EXPECT_EQ(answer.truncated, "");
  std::vector<std::string> lines = absl::StrSplit(answer.body, '\n');
  EXPECT_THAT(lines, UnorderedElementsAre("k1", "k2", ""));  // every line ends with '\n'
}

TEST_F(AdminHttpPagesTest, AllKeysIsCappedWithAFlag) {
  PutObject("k1", 100, "seg-a:1");
  PutObject("k2", 100, "seg-a:1");
  PutObject("k3", 100, "seg-a:1");
  const AdminPage page = AllKeysPage(*service_, 2);
  EXPECT_TRUE(page.truncated);
  EXPECT_EQ(std::count(page.body.begin(), page.body.end(), '\n'), 2);
  EXPECT_FALSE(AllKeysPage(*service_, 3).truncated);
  bool truncated = true;
  EXPECT_EQ(service_->ListKeys(3, &truncated).size(), 3u);
  EXPECT_FALSE(truncated);
  EXPECT_TRUE(service_->ListKeys(0).empty());
}

TEST_F(AdminHttpPagesTest, QueryKeyDescribesMemoryReplicasWithoutALease) {
  const Replica replica = PutObject("k1", 100, "seg-b:2");
  const Answer answer = Get("/query_key?key=k1");
  EXPECT_EQ(answer.status, 200);
  EXPECT_EQ(answer.content_type, kJson);
  EXPECT_EQ(answer.body, absl::StrCat("{\"success\":true,\"data\":[", Descriptor(replica), "]}"));
  // No read lease was granted: a plain Remove succeeds (GetReplicaList's lease would refuse it).
  EXPECT_TRUE(service_->Remove("k1").ok());
}

TEST_F(AdminHttpPagesTest, QueryKeyErrorsAre404WithTheCode) {
  Answer answer = Get("/query_key?key=absent");
  EXPECT_EQ(answer.status, 404);
  EXPECT_EQ(answer.content_type, kJson);
  EXPECT_EQ(answer.body,
            "{\"success\":false,\"error_code\":-704,\"error_message\":\"OBJECT_NOT_FOUND\"}");
  answer = Get("/query_key");
  EXPECT_EQ(answer.status, 404);
  EXPECT_EQ(answer.body,
            "{\"success\":false,\"error_code\":-600,\"error_message\":\"INVALID_PARAMS\"}");
  // An unfinished put is not visible.
  ASSERT_TRUE(service_->PutStart("client-1", "unfinished", 64, ReplicateConfig{}).ok());
  EXPECT_EQ(Get("/query_key?key=unfinished").status, 404);
}

TEST_F(AdminHttpPagesTest, BatchQueryKeysAnswersPerKey) {
  const Replica a = PutObject("a", 64, "seg-a:1");
  const Replica b = PutObject("b b", 128, "seg-b:2");
  const Answer answer = Get("/batch_query_keys?keys=missing,b%20b,a,a");
  EXPECT_EQ(answer.status, 200);
  EXPECT_EQ(answer.content_type, kJson);
  EXPECT_EQ(answer.body,
            absl::StrCat("{\"success\":true,\"data\":{\"a\":{\"ok\":true,\"values\":[",
                         Descriptor(a), "]},\"b b\":{\"ok\":true,\"values\":[", Descriptor(b),
                         "]},\"missing\":{\"ok\":false,\"error\":"
                         "\"OBJECT_NOT_FOUND\"}}}"));
  EXPECT_TRUE(service_->Remove("a").ok());  // no lease
}

TEST_F(AdminHttpPagesTest, BatchQueryKeysWithoutKeysIs400) {
  for (const char* path : {"/batch_query_keys", "/batch_query_keys?keys="}) {
    const Answer answer = Get(path);
    EXPECT_EQ(answer.status, 400) << path;
    EXPECT_THAT(answer.body, HasSubstr("\"success\":false,\"error\":\"No keys provided"));
  }
}

TEST_F(AdminHttpPagesTest, SegmentPages) {
  PutObject("k1", 1000, "seg-a:1");
  const uint64_t used = service_->Stats().used_bytes;
  ASSERT_GE(used, 1000u);
  Answer answer = Get("/query_segment?segment=seg-a:1");
  EXPECT_EQ(answer.status, 200);
  EXPECT_EQ(answer.body,
            absl::StrCat("seg-a:1\nUsed(bytes): ", used, "\nCapacity(bytes): 1048576\n"));
  EXPECT_EQ(Get("/query_segment?segment=nope").status, 500);

  answer = Get("/get_segments_detail");
  EXPECT_EQ(answer.status, 200);
  EXPECT_EQ(answer.content_type, kJson);
  EXPECT_THAT(answer.body, HasSubstr("{\"total_segments\":2,\"segments\":[{\"segment_name\":"
                                     "\"seg-a:1\","));
  EXPECT_THAT(answer.body, HasSubstr("\"client_id\":\"client-1\",\"base_address\":\"0x10000\","
                                     "\"size_bytes\":1048576,\"size_human\":\"0.00097656"));
  EXPECT_THAT(answer.body, HasSubstr(" GiB\",\"te_endpoint\":\"seg-a:1\",\"protocol\":\"\","
                                     "\"status\":\"OK\","));
  EXPECT_THAT(answer.body, HasSubstr(absl::StrCat("\"allocator_used_bytes\":", used,
                                                  ",\"allocator_capacity_bytes\":1048576,")));
  EXPECT_THAT(answer.body, HasSubstr("{\"segment_name\":\"seg-b:2\""));
  EXPECT_THAT(answer.body, HasSubstr("\"allocator_used_bytes\":0,\"allocator_capacity_bytes\":"
                                     "1048576,\"allocator_usage_percent\":0}]}"));
}

TEST_F(AdminHttpPagesTest, SummaryAndHaPages) {
  PutObject("k1", 100, "seg-a:1");
  metrics_.RecordLookups(4, 1);
  Answer answer = Get("/metrics/summary");
  EXPECT_EQ(answer.status, 200);
  EXPECT_THAT(answer.body, HasSubstr("role=leader, state=serving, service_ready=true, "
                                     "master={objects=1, segments=2, clients=2, "));
  EXPECT_THAT(answer.body, HasSubstr("capacity_bytes=2097152, hits=4, misses=1, "));
  EXPECT_THAT(answer.body, HasSubstr("term=7"));
  EXPECT_EQ(Get("/role").body, "leader");
  EXPECT_EQ(Get("/ha_status").body, "serving");
  answer = Get("/leader");
  EXPECT_EQ(answer.content_type, kJson);
  EXPECT_EQ(answer.body,
            "{\"present\":true,\"leader_address\":\"10.0.0.1:50051\",\"view_version\":7}");

  leading_ = false;
  EXPECT_EQ(Get("/role").body, "standby");
  EXPECT_EQ(Get("/ha_status").body, "standby");
  EXPECT_EQ(Get("/leader").body, "{\"present\":false}");
  other_leader_known_ = true;
  EXPECT_EQ(Get("/leader").body, "{\"present\":true,\"leader_address\":\"10.0.0.2:50051\"}");
  EXPECT_THAT(Get("/metrics/summary").body, HasSubstr("role=standby, state=standby"));
  for (const char* path :
       {"/get_all_segments", "/get_all_keys", "/query_key?key=k1", "/batch_query_keys?keys=k1",
        "/query_segment?segment=seg-a:1", "/get_segments_detail"}) {
    answer = Get(path);
    EXPECT_EQ(answer.status, 503) << path;
    EXPECT_EQ(answer.body,
              "{\"success\":false,\"error_code\":-1011,\"error_message\":\"service plane is not "
              "active\"}")
        << path;
  }
  EXPECT_EQ(Request("POST", "/api/v1/remove_all?force=true").status, 503);
  EXPECT_TRUE(service_->Exist("k1"));
}

TEST_F(AdminHttpPagesTest, RemoveAllKeepsLeasedObjectsUnlessForced) {
  PutObject("leased", 100, "seg-a:1");
  PutObject("free", 100, "seg-b:2");
  ASSERT_TRUE(service_->GetReplicaList("leased").ok());  // a read lease (the clock is frozen)
  EXPECT_EQ(Get("/api/v1/remove_all").status, 404);      // POST only, as upstream
  Answer answer = Request("POST", "/api/v1/remove_all");
  EXPECT_EQ(answer.status, 200);
  EXPECT_EQ(answer.content_type, kJson);
  EXPECT_EQ(answer.body, "{\"success\":true,\"removed_count\":1}");
  EXPECT_TRUE(service_->Exist("leased"));
  EXPECT_FALSE(service_->Exist("free"));
  answer = Request("POST", "/api/v1/remove_all?force=1");
  EXPECT_EQ(answer.body, "{\"success\":true,\"removed_count\":1}");
  EXPECT_FALSE(service_->Exist("leased"));
}

TEST_F(AdminHttpPagesTest, RemoveAllCanBeTurnedOff) {
  PutObject("k1", 100, "seg-a:1");
  AdminHttpServer::Options options;
  options.allow_remove_all = false;
  auto locked = AdminHttpServer::Start(kHost, 0, service_.get(), &metrics_, options);
  ASSERT_TRUE(locked.ok()) << locked.status();
  httplib::Client client(kHost, (*locked)->port());
  auto res = client.Post("/api/v1/remove_all?force=true");
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 403);
  EXPECT_THAT(res->body, HasSubstr("\"success\":false"));
  EXPECT_TRUE(service_->Exist("k1"));
  // The read-only pages stay.
  res = client.Get("/get_all_keys");
  ASSERT_TRUE(res);
  EXPECT_EQ(res->body, "k1\n");
}

}  // namespace
}  // namespace yuebing::master
