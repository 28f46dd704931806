// The real yuebing-master binary: startup line, HTTP endpoints, embedded metadata server, flag
// errors, ports in use, and clean exits on signals.
#include <gmock/gmock.h>
#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>
#include <httplib.h>
#include <signal.h>
#include <sys/wait.h>

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "master.grpc.pb.h"
#include "support/child_process.h"
#include "support/etcd_process.h"
#include "support/test_cluster.h"

namespace yuebing {
namespace {

namespace rpc = ::yuebing::rpc;
using test_support::ChildProcess;
using test_support::TestCluster;
using ::testing::HasSubstr;

constexpr const char* kHost = "127.0.0.1";
constexpr auto kStartTimeout = std::chrono::seconds(15);
const std::string kClient = "feedfacefeedfacefeedfacefeedface";

std::string MasterPath() { return TestCluster::MasterBinary(); }

uint16_t FreePort() {
  auto port = test_support::PickFreeTcpPort();
  EXPECT_TRUE(port.ok()) << port.status();
  return port.ok() ? *port : 0;
}

// Exit code of a child that should exit within `timeout`; -1 when it did not exit normally.
int ExitCode(ChildProcess& child, std::chrono::milliseconds timeout) {
  auto status = child.Wait(timeout);
  EXPECT_TRUE(status.ok()) << status.status();
  if (!status.ok()) return -1;
  EXPECT_TRUE(WIFEXITED(*status)) << "wait status " << *status;
  return WIFEXITED(*status) ? WEXITSTATUS(*status) : -1;
}

// Runs the master with `flags` (stderr joined to stdout) and returns its exit code; it must exit
// within 10 s. Its output goes to `output` when given.
int RunToExit(const std::vector<std::string>& flags, std::string* output = nullptr) {
  std::vector<std::string> argv = {"/bin/sh", "-c", "exec \"$0\" \"$@\" 2>&1", MasterPath()};
  argv.insert(argv.end(), flags.begin(), flags.end());
  auto child = ChildProcess::Start(argv);
  EXPECT_TRUE(child.ok()) << child.status();
  if (!child.ok()) return -1;
  std::string text;
  for (;;) {
    auto line = (*child)->ReadLine(std::chrono::seconds(10));
    if (!line.ok()) break;
    absl::StrAppend(&text, *line, "\n");
  }
  if (output != nullptr) *output = text;
  const int code = ExitCode(**child, std::chrono::seconds(10));
  if (code != 0) {
    EXPECT_FALSE(text.empty()) << "exit " << code << " without a message";
  }
  return code;
}

// Reads a metric without labels from Prometheus text; -1 when absent.
int64_t Metric(const std::string& text, const std::string& name) {
  for (absl::string_view line : absl::StrSplit(text, '\n')) {
    std::vector<absl::string_view> parts = absl::StrSplit(line, ' ');
    int64_t value = 0;
    if (parts.size() == 2 && parts[0] == name && absl::SimpleAtoi(parts[1], &value)) return value;
  }
  return -1;
}

class MasterProcessTest : public ::testing::Test {
 protected:
  // Starts a master on fresh ports with extra flags and waits for its listening line.
  void StartMaster(const std::vector<std::string>& extra = {}) {
    ASSERT_EQ(cluster_.master_count(), 0);
    ASSERT_EQ(cluster_.StartMaster(extra), 0) << "master did not start";
    rpc_port_ = cluster_.rpc_port();
    metrics_port_ = cluster_.metrics_port();
    EXPECT_THAT(
        cluster_.master().listening_line,
        HasSubstr(absl::StrCat("on rpc ", kHost, ":", rpc_port_, " metrics ", metrics_port_)));
    stub_ = rpc::MasterService::NewStub(grpc::CreateChannel(absl::StrCat(kHost, ":", rpc_port_),
                                                            grpc::InsecureChannelCredentials()));
  }

  // GET on the master's metrics port; returns the body, failing unless the status is 200.
  std::string HttpGet(uint16_t port, const std::string& path) {
    httplib::Client client(kHost, port);
    client.set_connection_timeout(std::chrono::seconds(2));
    client.set_read_timeout(std::chrono::seconds(5));
    auto res = client.Get(path);
    EXPECT_TRUE(res) << "no response for " << path;
    if (!res) return "";
    EXPECT_EQ(res->status, 200) << path;
    return res->body;
  }

  static std::unique_ptr<grpc::ClientContext> Context() {
    auto context = std::make_unique<grpc::ClientContext>();
    context->set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(5));
    return context;
  }

  void MountAndPut(const std::string& segment, const std::string& key, uint64_t size) {
    rpc::MountSegmentRequest mount;
    mount.set_client_id(kClient);
    mount.mutable_segment()->set_name(segment);
    mount.mutable_segment()->set_base(1 << 20);
    mount.mutable_segment()->set_size(16 << 20);
    rpc::MountSegmentReply mounted;
    ASSERT_TRUE(stub_->MountSegment(Context().get(), mount, &mounted).ok());
    ASSERT_EQ(mounted.status().code(), 0) << mounted.status().message();
    EXPECT_EQ(mounted.term(), 0u);

    rpc::BatchPutStartRequest start;
    start.set_client_id(kClient);
    start.add_keys(key);
    start.add_sizes(size);
    start.mutable_config()->set_replica_num(1);
    rpc::BatchPutStartReply started;
    ASSERT_TRUE(stub_->BatchPutStart(Context().get(), start, &started).ok());
    ASSERT_EQ(started.results_size(), 1);
    ASSERT_EQ(started.results(0).status().code(), 0) << started.results(0).status().message();

    rpc::BatchPutEndRequest end;
    end.set_client_id(kClient);
    end.add_keys(key);
    end.add_checksums(1);
    rpc::BatchStatusReply ended;
    ASSERT_TRUE(stub_->BatchPutEnd(Context().get(), end, &ended).ok());
    ASSERT_EQ(ended.statuses_size(), 1);
    ASSERT_EQ(ended.statuses(0).code(), 0);
  }

  void StopWith(int signo) {
    cluster_.SignalMaster(0, signo);
    const auto start = std::chrono::steady_clock::now();
    EXPECT_EQ(cluster_.WaitMasterExit(0, std::chrono::seconds(5)), 0);
    EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(5));
  }

  uint16_t rpc_port_ = 0;
  uint16_t metrics_port_ = 0;
  TestCluster cluster_{
      TestCluster::Options{.master_rpc_address = kHost, .start_timeout = kStartTimeout}};
  std::unique_ptr<rpc::MasterService::Stub> stub_;
};

TEST_F(MasterProcessTest, ServesHealthMetricsAndStatusThenStopsOnSigterm) {
  ASSERT_NO_FATAL_FAILURE(StartMaster());
  EXPECT_EQ(HttpGet(metrics_port_, "/health"), "OK");

  const std::string before = HttpGet(metrics_port_, "/metrics");
  for (const char* name :
       {"yuebing_master_objects", "yuebing_master_used_bytes", "yuebing_master_capacity_bytes",
        "yuebing_master_hits_total", "yuebing_master_misses_total",
        "yuebing_master_evicted_objects_total", "yuebing_master_rpc_requests_total",
        "yuebing_master_rpc_latency_seconds_bucket"}) {
    EXPECT_THAT(before, HasSubstr(name));
  }
  EXPECT_EQ(Metric(before, "yuebing_master_objects"), 0);
  EXPECT_EQ(Metric(before, "yuebing_master_capacity_bytes"), 0);

  ASSERT_NO_FATAL_FAILURE(MountAndPut("node-1:7000", "some-key", 4096));
  rpc::BatchKeysRequest get;
  get.add_keys("some-key");
  get.add_keys("missing-key");
  rpc::BatchGetReplicaListReply got;
  ASSERT_TRUE(stub_->BatchGetReplicaList(Context().get(), get, &got).ok());
  ASSERT_EQ(got.results_size(), 2);
  EXPECT_EQ(got.results(0).status().code(), 0);
  EXPECT_EQ(got.results(1).status().code(), -704);

  const std::string after = HttpGet(metrics_port_, "/metrics");
  EXPECT_EQ(Metric(after, "yuebing_master_objects"), 1);
  EXPECT_GE(Metric(after, "yuebing_master_used_bytes"), 4096);
  EXPECT_EQ(Metric(after, "yuebing_master_capacity_bytes"), 16 << 20);
  EXPECT_EQ(Metric(after, "yuebing_master_hits_total"), 1);
  EXPECT_EQ(Metric(after, "yuebing_master_misses_total"), 1);
  EXPECT_THAT(after, HasSubstr("yuebing_master_rpc_requests_total{rpc=\"BatchPutStart\"} 1\n"));
  EXPECT_THAT(after, HasSubstr("yuebing_master_segment_capacity_bytes{segment=\"node-1:7000\"} "));

  const std::string page = HttpGet(metrics_port_, "/");
  EXPECT_THAT(page, HasSubstr("node-1:7000"));
  EXPECT_THAT(page, HasSubstr(kClient));

  StopWith(SIGTERM);
}

TEST_F(MasterProcessTest, DurationFlagsReachTheMasterAndSigintStops) {
  ASSERT_NO_FATAL_FAILURE(
      StartMaster({"--default_kv_lease_ttl=2s", "--client_ttl=30s", "--default_kv_soft_pin_ttl=5m",
                   "--put_start_discard_timeout_sec=1m", "--put_start_release_timeout_sec=120"}));
  ASSERT_NO_FATAL_FAILURE(MountAndPut("node-1:7000", "leased", 64));
  rpc::BatchKeysRequest get;
  get.add_keys("leased");
  rpc::BatchGetReplicaListReply got;
  ASSERT_TRUE(stub_->BatchGetReplicaList(Context().get(), get, &got).ok());
  ASSERT_EQ(got.results_size(), 1);
  EXPECT_EQ(got.results(0).lease_ttl_ms(), 2000u);
  StopWith(SIGINT);
}

TEST_F(MasterProcessTest, EmbeddedMetadataServerWhenEnabled) {
  const uint16_t metadata_port = FreePort();
  ASSERT_NO_FATAL_FAILURE(StartMaster({"--enable_http_metadata_server=true",
                                       absl::StrCat("--http_metadata_server_port=", metadata_port),
                                       absl::StrCat("--http_metadata_server_host=", kHost)}));
  httplib::Client client(kHost, metadata_port);
  client.set_connection_timeout(std::chrono::seconds(2));
  client.set_read_timeout(std::chrono::seconds(5));
  auto put = client.Put("/metadata?key=segment-a", "descriptor-bytes", "application/json");
  ASSERT_TRUE(put);
  EXPECT_EQ(put->status, 200);
  auto get = client.Get("/metadata?key=segment-a");
  ASSERT_TRUE(get);
  EXPECT_EQ(get->status, 200);
  EXPECT_EQ(get->body, "descriptor-bytes");
  EXPECT_EQ(HttpGet(metadata_port, "/health"), "OK");
  StopWith(SIGTERM);
}

TEST_F(MasterProcessTest, NoMetadataServerByDefault) {
  const uint16_t metadata_port = FreePort();
  ASSERT_NO_FATAL_FAILURE(
      StartMaster({absl::StrCat("--http_metadata_server_port=", metadata_port)}));
  httplib::Client client(kHost, metadata_port);
  client.set_connection_timeout(std::chrono::milliseconds(500));
  EXPECT_FALSE(client.Get("/health"));
  StopWith(SIGTERM);
}

TEST_F(MasterProcessTest, SecondMasterOnTakenPortsExitsOne) {
  const uint16_t metadata_port = FreePort();
  ASSERT_NO_FATAL_FAILURE(StartMaster({"--enable_http_metadata_server",
                                       absl::StrCat("--http_metadata_server_port=", metadata_port),
                                       absl::StrCat("--http_metadata_server_host=", kHost)}));
  const std::string rpc_address = absl::StrCat("--rpc_address=", kHost);
  // Same RPC port.
  std::string output;
  EXPECT_EQ(RunToExit({absl::StrCat("--rpc_port=", rpc_port_), rpc_address,
                       absl::StrCat("--metrics_port=", FreePort())},
                      &output),
            1);
  EXPECT_THAT(output, HasSubstr("rpc server"));
  // Same metrics port.
  EXPECT_EQ(RunToExit({absl::StrCat("--rpc_port=", FreePort()), rpc_address,
                       absl::StrCat("--metrics_port=", metrics_port_)}),
            1);
  // Same metadata port.
  EXPECT_EQ(RunToExit({absl::StrCat("--rpc_port=", FreePort()), rpc_address,
                       absl::StrCat("--metrics_port=", FreePort()), "--enable_http_metadata_server",
                       absl::StrCat("--http_metadata_server_port=", metadata_port),
                       absl::StrCat("--http_metadata_server_host=", kHost)}),
            1);
  // The first master is unaffected.
  EXPECT_EQ(HttpGet(metrics_port_, "/health"), "OK");
  ASSERT_NO_FATAL_FAILURE(MountAndPut("node-2:7000", "still-serving", 64));
  StopWith(SIGTERM);
}

// A command line written for upstream's mooncake_master: --port is the RPC port, flags without
// meaning here are logged and ignored, and the master serves.
TEST(MasterFlagsTest, MooncakeMasterCommandLineServes) {
  const uint16_t port = FreePort();
  std::vector<std::string> argv = {"/bin/sh",
                                   "-c",
                                   "exec \"$0\" \"$@\" 2>&1",
                                   MasterPath(),
                                   absl::StrCat("--port=", port),
                                   absl::StrCat("--rpc_address=", kHost),
                                   absl::StrCat("--metrics_port=", FreePort()),
                                   "--max_threads=4",
                                   "-v=1",
                                   "--logtostderr",
                                   "--noenable_metric_reporting",
                                   "--enable_gc=false"};
  auto child = ChildProcess::Start(argv);
  ASSERT_TRUE(child.ok()) << child.status();
  std::string text;
  bool listening = false;
  while (!listening) {
    auto line = (*child)->ReadLine(std::chrono::seconds(10));
    ASSERT_TRUE(line.ok()) << "no listening line; output:\n" << text;
    absl::StrAppend(&text, *line, "\n");
    listening = absl::StrContains(*line, "yuebing-master listening");
  }
  EXPECT_THAT(text, HasSubstr(absl::StrCat("on rpc ", kHost, ":", port, " ")));
  EXPECT_THAT(text, HasSubstr("--max_threads=4 (mooncake_master flag) is accepted and ignored"));
  EXPECT_THAT(text, HasSubstr(absl::StrCat("--port=", port, " (mooncake_master flag) read as")));
  ASSERT_EQ(::kill((*child)->pid(), SIGTERM), 0);
  EXPECT_EQ(ExitCode(**child, std::chrono::seconds(10)), 0);
}

TEST(MasterFlagsTest, MooncakeMasterFlagsThatCannotBeHonouredExitTwo) {
  std::string output;
  EXPECT_EQ(RunToExit({"--config_path=/etc/mooncake/master.yaml"}, &output), 2);
  EXPECT_THAT(output, HasSubstr("--config_path"));
  EXPECT_EQ(RunToExit({"--ha_backend_type=redis"}, &output), 2);
  EXPECT_THAT(output, HasSubstr("etcd"));
}

TEST(MasterFlagsTest, BadFlagsExitTwo) {
  const std::string ports = absl::StrCat("--metrics_port=", FreePort());
  const std::string rpc = absl::StrCat("--rpc_port=", FreePort());
  EXPECT_EQ(RunToExit({rpc, ports, "--no_such_flag=1"}), 2);
  EXPECT_EQ(RunToExit({rpc, ports, "--rpc_port=notanumber"}), 2);
  EXPECT_EQ(RunToExit({ports, "--rpc_port=70000"}), 2);
  EXPECT_EQ(RunToExit({rpc, "--metrics_port=-1"}), 2);
  EXPECT_EQ(RunToExit({rpc, ports, "--eviction_ratio=1.5"}), 2);
  EXPECT_EQ(RunToExit({rpc, ports, "--eviction_high_watermark_ratio=0"}), 2);
  EXPECT_EQ(RunToExit({rpc, ports, "--default_kv_lease_ttl=soon"}), 2);
  EXPECT_EQ(RunToExit({rpc, ports, "--client_ttl=0"}), 2);
  EXPECT_EQ(RunToExit({rpc, ports, "--put_start_discard_timeout_sec=60",
                       "--put_start_release_timeout_sec=30"}),
            2);
  EXPECT_EQ(RunToExit({rpc, ports, "--default_kv_soft_pin_ttl=2h", "--max_kv_soft_pin_ttl=1h"}), 2);
  EXPECT_EQ(RunToExit({rpc, ports, "--max_kv_soft_pin_ttl=forever"}), 2);
  EXPECT_EQ(RunToExit({rpc, ports, "--rpc_address="}), 2);
  EXPECT_EQ(RunToExit({rpc, ports, "--cluster_id="}), 2);
  EXPECT_EQ(RunToExit({rpc, ports, "--etcd_endpoints=localhost"}), 2);
  EXPECT_EQ(RunToExit({rpc, ports, "stray-argument"}), 2);
}

TEST(MasterFlagsTest, BadHaFlagsAreRefusedClearly) {
  const std::string ports = absl::StrCat("--metrics_port=", FreePort());
  const std::string rpc = absl::StrCat("--rpc_port=", FreePort());
  std::string output;
  EXPECT_EQ(RunToExit({rpc, ports, "--enable_ha"}, &output), 2);  // no endpoints
  EXPECT_THAT(output, HasSubstr("--etcd_endpoints"));
  EXPECT_EQ(RunToExit({rpc, ports, "--enable_ha", "--etcd_endpoints=127.0.0.1:2379",
                       "--ha_lease_ttl_sec=1"},
                      &output),
            2);
  EXPECT_THAT(output, HasSubstr("--ha_lease_ttl_sec"));
  EXPECT_EQ(RunToExit({rpc, ports, "--enable_ha", "--etcd_endpoints=127.0.0.1:2379",
                       "--rpc_advertise_address=a b"},
                      &output),
            2);
  EXPECT_THAT(output, HasSubstr("--rpc_advertise_address"));
}

}  // namespace
}  // namespace yuebing
