#include "yuebing/common/http_metadata_server.h"

#include <gtest/gtest.h>
#include <httplib.h>

#include <atomic>
#include <chrono>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "common/http_metadata_server_internal.h"

namespace yuebing {
namespace {

constexpr const char* kHost = "127.0.0.1";

std::string PercentEncode(absl::string_view text) {
  std::string out;
  for (unsigned char c : text) {
    if (absl::ascii_isalnum(c) || c == '-' || c == '_' || c == '.' || c == '~') {
      out.push_back(static_cast<char>(c));
    } else {
      absl::StrAppendFormat(&out, "%%%02X", c);
    }
  }
  return out;
}

std::string PathFor(absl::string_view key) { return "/metadata?key=" + PercentEncode(key); }

class HttpMetadataServerTest : public ::testing::Test {
 protected:
  void SetUp() override { StartWith(internal::HttpMetadataServerLimits{}); }

  void StartWith(const internal::HttpMetadataServerLimits& limits) {
    server_.reset();
    auto server = internal::StartHttpMetadataServer(kHost, 0, limits);
    ASSERT_TRUE(server.ok()) << server.status();
    server_ = std::move(server).value();
    ASSERT_NE(server_->port(), 0);
  }

  std::unique_ptr<httplib::Client> NewClient() const {
    auto client = std::make_unique<httplib::Client>(kHost, server_->port());
    client->set_url_encode(false);
    client->set_connection_timeout(std::chrono::seconds(2));
    client->set_read_timeout(std::chrono::seconds(5));
    client->set_write_timeout(std::chrono::seconds(5));
    return client;
  }

  // Returns the HTTP status of the request, or -1 when no response came back.
  int Put(absl::string_view key, const std::string& value) {
    auto res = NewClient()->Put(PathFor(key), value, "application/octet-stream");
    return res ? res->status : -1;
  }
  int Get(absl::string_view key, std::string* value = nullptr) {
    auto res = NewClient()->Get(PathFor(key));
    if (res && value != nullptr) *value = res->body;
    return res ? res->status : -1;
  }
  int Delete(absl::string_view key) {
    auto res = NewClient()->Delete(PathFor(key));
    return res ? res->status : -1;
  }

  std::unique_ptr<HttpMetadataServer> server_;
};

TEST_F(HttpMetadataServerTest, Health) {
  auto res = NewClient()->Get("/health");
  ASSERT_TRUE(res) << httplib::to_string(res.error());
  EXPECT_EQ(res->status, 200);
  EXPECT_EQ(res->body, "OK");
}

TEST_F(HttpMetadataServerTest, PutGetOverwriteDelete) {
  std::string value;
  EXPECT_EQ(Get("segment/a", &value), 404);
  EXPECT_EQ(Put("segment/a", "v1"), 200);
  EXPECT_EQ(server_->KeyCount(), 1u);
  EXPECT_EQ(Get("segment/a", &value), 200);
  EXPECT_EQ(value, "v1");
  EXPECT_EQ(Put("segment/a", "v2"), 200);
  EXPECT_EQ(server_->KeyCount(), 1u);
  EXPECT_EQ(Get("segment/a", &value), 200);
  EXPECT_EQ(value, "v2");
  EXPECT_EQ(Delete("segment/a"), 200);
  EXPECT_EQ(server_->KeyCount(), 0u);
  EXPECT_EQ(Get("segment/a"), 404);
  EXPECT_EQ(Delete("segment/a"), 404);
}

TEST_F(HttpMetadataServerTest, EmptyValueIsStored) {
  std::string value = "sentinel";
  EXPECT_EQ(Put("empty", ""), 200);
  EXPECT_EQ(Get("empty", &value), 200);
  EXPECT_EQ(value, "");
}

TEST_F(HttpMetadataServerTest, BinaryValuesAndSpecialKeys) {
  std::string binary;
  for (int i = 0; i < 1024; ++i) binary.push_back(static_cast<char>(i % 256));
  const std::vector<std::string> keys = {"a b/c?d=e&f", "plus+sign", "percent%20", "\xe6\x9c\x88",
                                         std::string("nul\0byte", 8)};
  for (const std::string& key : keys) {
    EXPECT_EQ(Put(key, binary + key), 200) << key;
  }
  EXPECT_EQ(server_->KeyCount(), keys.size());
  for (const std::string& key : keys) {
    std::string value;
    EXPECT_EQ(Get(key, &value), 200) << key;
    EXPECT_EQ(value, binary + key) << key;
  }
  // "percent%20" must not have been decoded twice into "percent ".
  EXPECT_EQ(Get("percent "), 404);
}

TEST_F(HttpMetadataServerTest, MissingOrEmptyKeyIsBadRequest) {
  auto client = NewClient();
  auto res = client->Get("/metadata");
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 400);
  res = client->Put("/metadata?key=", "x", "application/octet-stream");
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 400);
  res = client->Delete("/metadata?other=1");
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 400);
  EXPECT_EQ(server_->KeyCount(), 0u);
}

TEST_F(HttpMetadataServerTest, KeysAreStrippedAndBlankKeysRefusedAsUpstream) {
  auto client = NewClient();
  auto res = client->Put("/metadata?key=%20%20valid%20%20", "value", "application/octet-stream");
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 200);
  EXPECT_EQ(res->body, "metadata updated");
  std::string value;
  EXPECT_EQ(Get("valid", &value), 200);
  EXPECT_EQ(value, "value");
  res = client->Put("/metadata?key=%20%20%20", "x", "application/octet-stream");
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 400);
  EXPECT_EQ(res->body, "metadata key is required");
  EXPECT_EQ(res->get_header_value("Content-Type"), "application/json");
  EXPECT_EQ(server_->KeyCount(), 1u);
  res = client->Get("/metadata?key=absent");
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 404);
  EXPECT_EQ(res->body, "metadata not found");
  EXPECT_EQ(res->get_header_value("Content-Type"), "application/json");
}

TEST_F(HttpMetadataServerTest, AnRpcMetaKeyIsRegisteredOnce) {
  auto client = NewClient();
  const std::string path = PathFor("mooncake/rpc_meta/10.0.0.1:1234");
  auto res = client->Put(path, "first", "application/json");
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 200);
  res = client->Put(path, "first", "application/json");  // the same registration again
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 200);
  EXPECT_EQ(res->body, "metadata unchanged");
  res = client->Put(path, "another engine", "application/json");
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 400);
  EXPECT_EQ(res->body, "Duplicate rpc_meta key not allowed");
  std::string value;
  EXPECT_EQ(Get("mooncake/rpc_meta/10.0.0.1:1234", &value), 200);
  EXPECT_EQ(value, "first");
  EXPECT_EQ(Put("yuebing/segment/x", "v1"), 200);  // other keys are overwritten as before
  EXPECT_EQ(Put("yuebing/segment/x", "v2"), 200);
}

TEST_F(HttpMetadataServerTest, KeyLimit) {
  const std::string longest(HttpMetadataServer::kMaxKeyBytes, 'k');
  EXPECT_EQ(Put(longest, "v"), 200);
  const std::string too_long(HttpMetadataServer::kMaxKeyBytes + 1, 'k');
  EXPECT_EQ(Put(too_long, "v"), 414);
  EXPECT_EQ(Get(too_long), 414);
  EXPECT_EQ(server_->KeyCount(), 1u);
}

TEST_F(HttpMetadataServerTest, ValueLimitRefusesAndKeepsOldValue) {
  const std::string largest(HttpMetadataServer::kMaxValueBytes, 'x');
  EXPECT_EQ(Put("big", largest), 200);
  std::string value;
  EXPECT_EQ(Get("big", &value), 200);
  EXPECT_EQ(value.size(), largest.size());

  EXPECT_EQ(Put("big", largest + "y"), 413);
  EXPECT_EQ(Put("other", largest + "y"), 413);
  EXPECT_EQ(server_->KeyCount(), 1u);
  EXPECT_EQ(Get("big", &value), 200);
  EXPECT_EQ(value, largest);
}

TEST_F(HttpMetadataServerTest, SmallLimitsAreEnforced) {
  StartWith({.max_key_bytes = 8, .max_value_bytes = 16, .max_keys = 2});
  EXPECT_EQ(Put("k1", "v"), 200);
  EXPECT_EQ(Put("k2", "v"), 200);
  EXPECT_EQ(Put("k3", "v"), 507);
  EXPECT_EQ(Get("k3"), 404);
  EXPECT_EQ(Put("k1", "overwrite ok"), 200);  // replacing does not add a key
  EXPECT_EQ(Put("k1", std::string(17, 'v')), 413);
  EXPECT_EQ(Put("123456789", "v"), 414);
  EXPECT_EQ(server_->KeyCount(), 2u);
  std::string value;
  EXPECT_EQ(Get("k1", &value), 200);
  EXPECT_EQ(value, "overwrite ok");
  EXPECT_EQ(Delete("k2"), 200);
  EXPECT_EQ(Put("k3", "v"), 200);
}

TEST_F(HttpMetadataServerTest, ZeroLimitsAreRejected) {
  auto server = internal::StartHttpMetadataServer(kHost, 0, {.max_keys = 0});
  EXPECT_EQ(server.status().code(), absl::StatusCode::kInvalidArgument);
}

TEST_F(HttpMetadataServerTest, ConcurrentClients) {
  constexpr int kThreads = 8;
  constexpr int kKeysPerThread = 50;
  std::atomic<int> failures{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([this, t, &failures] {
      auto client = NewClient();  // one keep-alive connection per thread
      for (int i = 0; i < kKeysPerThread; ++i) {
        const std::string key = absl::StrCat("t", t, "/k", i);
        const std::string value = absl::StrCat("value-", t, "-", i);
        auto put = client->Put(PathFor(key), value, "application/octet-stream");
        auto get = client->Get(PathFor(key));
        if (!put || put->status != 200 || !get || get->status != 200 || get->body != value) {
          failures.fetch_add(1);
        }
        // Every thread also reads one shared key that another thread rewrites.
        auto shared = client->Put(PathFor("shared"), value, "application/octet-stream");
        if (!shared || shared->status != 200) failures.fetch_add(1);
      }
    });
  }
  for (std::thread& thread : threads) thread.join();
  EXPECT_EQ(failures.load(), 0);
  EXPECT_EQ(server_->KeyCount(), static_cast<size_t>(kThreads * kKeysPerThread + 1));
}

TEST_F(HttpMetadataServerTest, BindConflictIsUnavailable) {
  auto second = HttpMetadataServer::Start(kHost, server_->port());
  EXPECT_EQ(second.status().code(), absl::StatusCode::kUnavailable) << second.status();
  auto bad_host = HttpMetadataServer::Start("203.0.113.77", 0);  // not a local address
  EXPECT_EQ(bad_host.status().code(), absl::StatusCode::kUnavailable) << bad_host.status();
}

TEST_F(HttpMetadataServerTest, DestructorStopsServing) {
  EXPECT_EQ(Put("k", "v"), 200);
  const uint16_t port = server_->port();
  const auto start = std::chrono::steady_clock::now();
  server_.reset();
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(4));
  httplib::Client client(kHost, port);
  client.set_connection_timeout(std::chrono::seconds(1));
  auto res = client.Get("/health");
  EXPECT_FALSE(res);
}

TEST_F(HttpMetadataServerTest, FixedPortCanBeReusedAfterStop) {
  const uint16_t port = server_->port();
  server_.reset();
  auto again = HttpMetadataServer::Start(kHost, port);
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_EQ((*again)->port(), port);
}

}  // namespace
}  // namespace yuebing
