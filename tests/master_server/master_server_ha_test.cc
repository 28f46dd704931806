// master::MasterServer in process: endpoints on free ports, clean Stop(), and high availability
// with two servers in one process against a real etcd: one leads and one stands by (-1010), the
// standby takes over when the leader stops, and a leader whose key disappears reports the lost
// leadership through Wait() (no signal) while the standby takes over.
#include <gmock/gmock.h>
#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>
#include <httplib.h>
#include <unistd.h>

#include <chrono>
#include <memory>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "common/etcd_client.h"
#include "master.grpc.pb.h"
#include "master/leader_election.h"
#include "master/master_server.h"
#include "support/etcd_process.h"
#include "support/local_master_options.h"
#include "yuebing/common/error_code.h"

namespace yuebing::master {
namespace {

using test_support::LocalMasterOptions;

namespace rpc = ::yuebing::rpc;
using std::chrono::milliseconds;
using std::chrono::seconds;
using ::testing::HasSubstr;
using SteadyClock = std::chrono::steady_clock;
using End = MasterServer::End;

const std::string kClient = "0123456789abcdef0123456789abcdef";

struct PingResult {
  bool reached = false;
  int32_t code = 0;
  std::string message;
  uint64_t term = 0;
};

PingResult Ping(const MasterServer& server) {
  auto stub = rpc::MasterService::NewStub(grpc::CreateChannel(
      absl::StrCat("127.0.0.1:", server.rpc_port()), grpc::InsecureChannelCredentials()));
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() + milliseconds(1000));
  rpc::PingRequest request;
  request.set_client_id(kClient);
  rpc::PingReply reply;
  PingResult result;
  if (!stub->Ping(&context, request, &reply).ok()) return result;
  result.reached = true;
  result.code = reply.status().code();
  result.message = reply.status().message();
  result.term = reply.term();
  return result;
}

void ExpectRefuses(const MasterServer& server) {
  PingResult ping = Ping(server);
  ASSERT_TRUE(ping.reached);
  EXPECT_EQ(ping.code, static_cast<int32_t>(ErrorCode::kUnavailableInCurrentStatus));
  EXPECT_THAT(ping.message, HasSubstr("not the leader"));
}

TEST(MasterServerTest, ServesOnFreePortsAndStops) {
  MasterServer::Options options = LocalMasterOptions();
  options.http_metadata_server = true;
  options.metadata_host = "127.0.0.1";
  options.metadata_port = 0;
  auto server = MasterServer::Start(options);
  ASSERT_TRUE(server.ok()) << server.status();
  MasterServer& s = **server;
  EXPECT_NE(s.rpc_port(), 0);
  EXPECT_NE(s.metrics_port(), 0);
  EXPECT_NE(s.metadata_port(), 0);
  EXPECT_NE(s.fast_rpc_port(), 0);
  EXPECT_EQ(s.Endpoints(), absl::StrCat("rpc 127.0.0.1:", s.rpc_port(), " metrics ",
                                        s.metrics_port(), " metadata http://127.0.0.1:",
                                        s.metadata_port(), "/metadata fast ", s.fast_rpc_port()));
  EXPECT_TRUE(s.IsLeader());
  EXPECT_EQ(s.term(), 0u);
  PingResult ping = Ping(s);
  ASSERT_TRUE(ping.reached);
  EXPECT_EQ(ping.code, 0);
  EXPECT_EQ(s.Wait(absl::ZeroDuration()), End::kRunning);
  s.Stop();
  EXPECT_EQ(s.Wait(absl::ZeroDuration()), End::kStopped);
  EXPECT_FALSE(Ping(s).reached);
  s.Stop();  // idempotent
}

TEST(MasterServerTest, PortInUseIsUnavailable) {
  auto first = MasterServer::Start(LocalMasterOptions());
  ASSERT_TRUE(first.ok()) << first.status();
  MasterServer::Options options = LocalMasterOptions();
  options.metrics_port = (*first)->metrics_port();
  auto second = MasterServer::Start(options);
  ASSERT_FALSE(second.ok());
  EXPECT_EQ(second.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_THAT(second.status().message(), HasSubstr("metrics server"));
}

TEST(MasterServerTest, BadEtcdEndpointsAreInvalidArgument) {
  MasterServer::Options options = LocalMasterOptions();
  options.ha = true;
  options.etcd_endpoints = "not an endpoint";
  auto server = MasterServer::Start(options);
  ASSERT_FALSE(server.ok());
  EXPECT_EQ(server.status().code(), absl::StatusCode::kInvalidArgument);
}

// The body of GET `path` on the server's admin port, with its status.
std::pair<int, std::string> AdminGet(const MasterServer& s, const std::string& path) {
  httplib::Client client("127.0.0.1", s.metrics_port());
  client.set_connection_timeout(std::chrono::seconds(2));
  client.set_read_timeout(std::chrono::seconds(5));
  auto res = client.Get(path);
  if (!res) return {0, ""};
  return {res->status, res->body};
}

class MasterServerHaTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto etcd = test_support::EtcdProcess::Start();
    ASSERT_TRUE(etcd.ok()) << etcd.status();
    etcd_ = std::move(etcd).value();
    cluster_id_ = absl::StrCat("inproc-ha-", getpid());
    auto client = EtcdClient::Create(etcd_->endpoint(), milliseconds(2000));
    ASSERT_TRUE(client.ok()) << client.status();
    etcd_client_ = std::move(client).value();
  }

  std::unique_ptr<MasterServer> StartServer() {
    MasterServer::Options options = LocalMasterOptions();
    options.ha = true;
    options.etcd_endpoints = etcd_->endpoint();
    options.cluster_id = cluster_id_;
    options.lease_ttl = seconds(2);
    auto server = MasterServer::Start(options);
    EXPECT_TRUE(server.ok()) << server.status();
    if (!server.ok()) return nullptr;
    EXPECT_THAT((*server)->Endpoints(),
                HasSubstr(absl::StrCat(" ha ", LeaderElection::LeaderKey(cluster_id_),
                                       " as 127.0.0.1:", (*server)->rpc_port())));
    return std::move(server).value();
  }

  // Waits until one of `servers` (skipping nullptr) leads, answers a Ping and is named by etcd;
  // returns its index or -1.
  int WaitForLeader(const std::vector<MasterServer*>& servers, SteadyClock::duration timeout) {
    const auto deadline = SteadyClock::now() + timeout;
    while (SteadyClock::now() < deadline) {
      auto kv = etcd_client_->Get(LeaderElection::LeaderKey(cluster_id_));
      for (size_t i = 0; kv.ok() && kv->has_value() && i < servers.size(); ++i) {
        MasterServer* s = servers[i];
        if (s == nullptr || !s->IsLeader() || s->advertise_address() != (*kv)->value) continue;
        PingResult ping = Ping(*s);
        if (ping.reached && ping.code == 0) {
          EXPECT_EQ(ping.term, s->term());
          EXPECT_EQ(ping.term, static_cast<uint64_t>((*kv)->create_revision));
          return static_cast<int>(i);
        }
      }
      std::this_thread::sleep_for(milliseconds(50));
    }
    return -1;
  }

  std::unique_ptr<test_support::EtcdProcess> etcd_;
  std::unique_ptr<EtcdClient> etcd_client_;
  std::string cluster_id_;
};

TEST_F(MasterServerHaTest, OneLeadsOneStandsByAndTheStandbyTakesOverAfterStop) {
  std::unique_ptr<MasterServer> servers[2] = {StartServer(), StartServer()};
  ASSERT_TRUE(servers[0] != nullptr && servers[1] != nullptr);
  const int leader = WaitForLeader({servers[0].get(), servers[1].get()}, seconds(20));
  ASSERT_GE(leader, 0) << "no leader elected";
  MasterServer& first = *servers[leader];
  MasterServer& standby = *servers[1 - leader];
  const uint64_t term1 = first.term();
  EXPECT_GT(term1, 0u);
  EXPECT_FALSE(standby.IsLeader());
  EXPECT_EQ(standby.term(), 0u);
  ExpectRefuses(standby);
  // The admin pages tell the roles apart.
  EXPECT_EQ(AdminGet(first, "/role"), std::make_pair(200, std::string("leader")));
  EXPECT_EQ(AdminGet(first, "/ha_status"), std::make_pair(200, std::string("serving")));
  EXPECT_EQ(AdminGet(first, "/leader"),
            std::make_pair(
                200, absl::StrCat("{\"present\":true,\"leader_address\":\"",
                                  first.advertise_address(), "\",\"view_version\":", term1, "}")));
  EXPECT_EQ(AdminGet(first, "/get_all_segments"), std::make_pair(200, std::string()));
  EXPECT_EQ(AdminGet(standby, "/role"), std::make_pair(200, std::string("standby")));
  EXPECT_EQ(AdminGet(standby, "/ha_status"), std::make_pair(200, std::string("standby")));
  // The standby learns the leader's address by polling etcd.
  const auto deadline = SteadyClock::now() + seconds(10);
  while (AdminGet(standby, "/leader").second == "{\"present\":false}" &&
         SteadyClock::now() < deadline) {
    std::this_thread::sleep_for(milliseconds(50));
  }
  EXPECT_EQ(AdminGet(standby, "/leader"),
            std::make_pair(200, absl::StrCat("{\"present\":true,\"leader_address\":\"",
                                             first.advertise_address(), "\"}")));
  EXPECT_EQ(AdminGet(standby, "/get_all_segments").first, 503);

  first.Stop();
  EXPECT_EQ(first.Wait(absl::ZeroDuration()), End::kStopped);
  EXPECT_FALSE(first.IsLeader());
  const int next = WaitForLeader({nullptr, &standby}, seconds(15));
  ASSERT_EQ(next, 1) << "the standby did not take over";
  EXPECT_GT(standby.term(), term1);
  EXPECT_EQ(standby.Wait(absl::ZeroDuration()), End::kRunning);
}

TEST_F(MasterServerHaTest, DeletedLeaderKeyReportsLeadershipLostWithoutASignal) {
  std::unique_ptr<MasterServer> servers[2] = {StartServer(), StartServer()};
  ASSERT_TRUE(servers[0] != nullptr && servers[1] != nullptr);
  const int leader = WaitForLeader({servers[0].get(), servers[1].get()}, seconds(20));
  ASSERT_GE(leader, 0) << "no leader elected";
  MasterServer& first = *servers[leader];
  MasterServer& standby = *servers[1 - leader];
  const uint64_t term1 = first.term();

  // An operator deletes the leader key: the leader notices at its next renewal (every TTL/3).
  ASSERT_TRUE(etcd_client_->Delete(LeaderElection::LeaderKey(cluster_id_)).ok());
  EXPECT_EQ(first.Wait(absl::Seconds(10)), End::kLeadershipLost);
  EXPECT_FALSE(first.IsLeader());
  ExpectRefuses(first);  // still up, refusing as a standby would, until its owner stops it

  const int next = WaitForLeader({nullptr, &standby}, seconds(15));
  ASSERT_EQ(next, 1) << "the standby did not take over";
  EXPECT_GT(standby.term(), term1);

  first.Stop();
  EXPECT_EQ(first.Wait(absl::ZeroDuration()), End::kLeadershipLost);
  EXPECT_EQ(standby.Wait(absl::ZeroDuration()), End::kRunning);
  // This process got no SIGTERM from the server (it would have ended the test binary).
}

}  // namespace
}  // namespace yuebing::master
