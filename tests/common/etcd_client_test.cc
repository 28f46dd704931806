// EtcdClient against a real etcd (tests/support/etcd_process.h): endpoint parsing, reads of
// absent keys, create-if-absent, leases (keep-alive, revoke deleting the key, expiry) and the
// deadline when no endpoint answers.
#include "common/etcd_client.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <chrono>
#include <fstream>
#include <iterator>
#include <thread>
#include <vector>

#include "support/child_process.h"
#include "support/etcd_process.h"

namespace yuebing {
namespace {

using std::chrono::milliseconds;
using test_support::WaitStopped;
using ::testing::HasSubstr;

TEST(EtcdClientParseTest, AcceptsMooncakeStyleListsAndRejectsJunk) {
  auto parsed = EtcdClient::ParseEndpoints("10.0.0.1:2379; http://etcd-b:2380/,[::1]:7");
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  ASSERT_EQ(parsed->size(), 3u);
  EXPECT_EQ((*parsed)[0].host, "10.0.0.1");
  EXPECT_EQ((*parsed)[1].host, "etcd-b");
  EXPECT_EQ((*parsed)[1].port, 2380);
  EXPECT_EQ((*parsed)[2].host, "::1");
  EXPECT_EQ((*parsed)[2].port, 7);
  auto defaulted = EtcdClient::ParseEndpoints("etcd-host");
  ASSERT_TRUE(defaulted.ok());
  EXPECT_EQ((*defaulted)[0].port, 2379);
  for (const char* bad :
       {"", ";", "host:0", "host:99999", "host:", ":2379", "https://h:1", "a b:1", "[::1"}) {
    auto result = EtcdClient::ParseEndpoints(bad);
    EXPECT_FALSE(result.ok()) << bad;
    EXPECT_EQ(result.status().code(), absl::StatusCode::kInvalidArgument) << bad;
  }
}

TEST(EtcdClientParseTest, OneSeparatorRuleAndTheSharedHostPortGrammar) {
  auto parsed = EtcdClient::ParseEndpoints("a:1,b;[::1] ; ::2");
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  EXPECT_EQ(*parsed, (std::vector<HostPort>{{"a", 1}, {"b", 2379}, {"::1", 2379}, {"::2", 2379}}));
  auto client = EtcdClient::Create("a:1;[::1]:7", milliseconds(100));
  ASSERT_TRUE(client.ok()) << client.status();
  EXPECT_EQ((*client)->Describe(), "etcd://a:1,[::1]:7");
  for (const char* bad : {"a:1,,b:2", "a:1;", " , ", "[::1]:", "fe80::1:2379:", "[localhost]"}) {
    EXPECT_EQ(EtcdClient::ParseEndpoints(bad).status().code(), absl::StatusCode::kInvalidArgument)
        << bad;
  }
}

class EtcdClientTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto etcd = test_support::EtcdProcess::Start();
    ASSERT_TRUE(etcd.ok()) << etcd.status();
    etcd_ = std::move(etcd).value();
    auto client = EtcdClient::Create(etcd_->endpoint(), milliseconds(3000));
    ASSERT_TRUE(client.ok()) << client.status();
    client_ = std::move(client).value();
  }

  std::unique_ptr<test_support::EtcdProcess> etcd_;
  std::unique_ptr<EtcdClient> client_;
};

TEST_F(EtcdClientTest, CreateIfAbsentWinsOnceAndLeasesOwnTheKey) {
  const std::string key = "yuebing/test/leader";
  auto absent = client_->Get(key);
  ASSERT_TRUE(absent.ok()) << absent.status();
  EXPECT_FALSE(absent->has_value());

  auto lease = client_->GrantLease(5);
  ASSERT_TRUE(lease.ok()) << lease.status();
  auto first = client_->CreateIfAbsent(key, "host-a:1", *lease);
  ASSERT_TRUE(first.ok()) << first.status();
  EXPECT_TRUE(first->created);
  EXPECT_GT(first->current.create_revision, 0);

  auto second = client_->CreateIfAbsent(key, "host-b:2", 0);
  ASSERT_TRUE(second.ok()) << second.status();
  EXPECT_FALSE(second->created);
  EXPECT_EQ(second->current.value, "host-a:1");
  EXPECT_EQ(second->current.create_revision, first->current.create_revision);
  EXPECT_EQ(second->current.lease, *lease);

  auto ttl = client_->KeepAlive(*lease, milliseconds(2000));
  ASSERT_TRUE(ttl.ok()) << ttl.status();
  EXPECT_EQ(*ttl, 5);

  // Revoking the lease deletes the key; the next creation gets a higher revision.
  ASSERT_TRUE(client_->RevokeLease(*lease, milliseconds(2000)).ok());
  EXPECT_TRUE(client_->RevokeLease(*lease, milliseconds(2000)).ok());  // already gone: fine
  auto gone = client_->Get(key);
  ASSERT_TRUE(gone.ok());
  EXPECT_FALSE(gone->has_value());
  auto expired = client_->KeepAlive(*lease, milliseconds(2000));
  EXPECT_EQ(expired.status().code(), absl::StatusCode::kNotFound) << expired.status();
  auto third = client_->CreateIfAbsent(key, "host-b:2", 0);
  ASSERT_TRUE(third.ok());
  EXPECT_TRUE(third->created);
  EXPECT_GT(third->current.create_revision, first->current.create_revision);
  ASSERT_TRUE(client_->Delete(key).ok());
  EXPECT_FALSE(client_->GrantLease(0).ok());
}

TEST_F(EtcdClientTest, PutGetDeleteRoundTripBinaryValues) {
  const std::string key = "yuebing/test/plain";
  const std::string value("bin\0\xff value", 11);
  ASSERT_TRUE(client_->Put(key, value).ok());
  auto got = client_->Get(key);
  ASSERT_TRUE(got.ok()) << got.status();
  ASSERT_TRUE(got->has_value());
  EXPECT_EQ((*got)->value, value);
  EXPECT_EQ((*got)->lease, 0);
  ASSERT_TRUE(client_->Put(key, "").ok());
  got = client_->Get(key);
  ASSERT_TRUE(got.ok() && got->has_value());
  EXPECT_EQ((*got)->value, "");
  ASSERT_TRUE(client_->Delete(key).ok());
  got = client_->Get(key);
  ASSERT_TRUE(got.ok());
  EXPECT_FALSE(got->has_value());
  EXPECT_EQ(client_->Put("", "v").code(), absl::StatusCode::kInvalidArgument);
}

TEST_F(EtcdClientTest, AnExpiredLeaseTakesItsKeyAway) {
  auto lease = client_->GrantLease(2);
  ASSERT_TRUE(lease.ok()) << lease.status();
  ASSERT_TRUE(client_->CreateIfAbsent("yuebing/test/short", "x", *lease).ok());
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(15);
  bool gone = false;
  while (!gone && std::chrono::steady_clock::now() < deadline) {
    auto kv = client_->Get("yuebing/test/short");
    ASSERT_TRUE(kv.ok());
    gone = !kv->has_value();
    if (!gone) std::this_thread::sleep_for(milliseconds(100));
  }
  EXPECT_TRUE(gone);
}

TEST_F(EtcdClientTest, CallsKeepTheirDeadlineWhenEtcdIsStopped) {
  etcd_->Pause();
  ASSERT_TRUE(WaitStopped(etcd_->pid()));
  const auto start = std::chrono::steady_clock::now();
  auto kv = client_->Get("any", milliseconds(300));
  const auto took = std::chrono::steady_clock::now() - start;
  etcd_->Resume();
  EXPECT_FALSE(kv.ok());
  EXPECT_EQ(kv.status().code(), absl::StatusCode::kDeadlineExceeded) << kv.status();
  EXPECT_LT(took, std::chrono::seconds(3));  // bounded by the 300 ms budget, with slack for load
  auto down = EtcdClient::Create("127.0.0.1:1", milliseconds(500));
  ASSERT_TRUE(down.ok());
  auto refused = (*down)->Get("any");
  EXPECT_FALSE(refused.ok());
  EXPECT_THAT(refused.status().message(), HasSubstr("127.0.0.1:1"));
}

}  // namespace
}  // namespace yuebing
