// The engine with protocol "rdma" on this host, and the QP exchange over a real TCP listener.
// Where ibv_get_device_list finds no device (this project's machines) the engine must fall back to
// TCP and still move bytes; RdmaDeviceTest runs only where a device exists.
#include <gtest/gtest.h>
#include <stdlib.h>

#include <chrono>
#include <cstdio>
#include <vector>

#include "../engine_test_util.h"
#include "transport/memory_registry.h"
#include "transport/rdma/rdma_handshake.h"
#include "transport/rdma/rdma_transport.h"
#include "transport/tcp_server.h"

namespace yuebing::transport {
namespace {

using testing::FillPattern;
using testing::MatchesPattern;
using testing::Request;

constexpr auto kTimeout = std::chrono::milliseconds(5000);

class QpExchangeOverTcpTest : public ::testing::Test {
 protected:
  void StartServer(TcpServer::RdmaConnectHandler handler) {
    TcpServerOptions options;
    options.bind_host = "127.0.0.1";
    auto server = TcpServer::Bind(options, &registry_);
    ASSERT_TRUE(server.ok()) << server.status();
    server_ = *std::move(server);
    if (handler) server_->SetRdmaConnectHandler(std::move(handler));
    server_->Serve("127.0.0.1:1", kEpoch, [] { return std::string("{}"); });
  }
  static constexpr uint64_t kEpoch = 42;
  MemoryRegistry registry_;
  std::unique_ptr<TcpServer> server_;
};

TEST_F(QpExchangeOverTcpTest, HandlerAnswersTheRequest) {
  std::string seen;
  StartServer([&seen](const std::string& request) -> absl::StatusOr<std::string> {
    seen = request;
    return std::string("reply:") + request;
  });
  auto reply = rdma::ExchangeQpInfo("127.0.0.1", server_->port(), "127.0.0.1:1", kEpoch, "",
                                    "{\"qps\":1}", kTimeout);
  ASSERT_TRUE(reply.ok()) << reply.status();
  EXPECT_EQ(*reply, "reply:{\"qps\":1}");
  EXPECT_EQ(seen, "{\"qps\":1}");
}

TEST_F(QpExchangeOverTcpTest, RefusalsCarryTheReason) {
  StartServer([](const std::string&) -> absl::StatusOr<std::string> {
    return absl::NotFoundError("no RDMA NIC named mlx5_9");
  });
  auto reply =
      rdma::ExchangeQpInfo("127.0.0.1", server_->port(), "127.0.0.1:1", kEpoch, "", "{}", kTimeout);
  ASSERT_EQ(reply.status().code(), absl::StatusCode::kAborted);
  EXPECT_NE(reply.status().message().find("mlx5_9"), std::string::npos) << reply.status();
}

TEST_F(QpExchangeOverTcpTest, EngineWithoutRdmaRefuses) {
  StartServer(nullptr);
  auto reply =
      rdma::ExchangeQpInfo("127.0.0.1", server_->port(), "127.0.0.1:1", kEpoch, "", "{}", kTimeout);
  ASSERT_EQ(reply.status().code(), absl::StatusCode::kAborted);
  EXPECT_NE(reply.status().message().find("does not serve RDMA"), std::string::npos);
}

TEST_F(QpExchangeOverTcpTest, RestartedTargetIsDetectedByEpoch) {
  StartServer([](const std::string&) -> absl::StatusOr<std::string> { return std::string(); });
  auto reply = rdma::ExchangeQpInfo("127.0.0.1", server_->port(), "127.0.0.1:1", kEpoch + 1, "",
                                    "{}", kTimeout);
  EXPECT_EQ(reply.status().code(), absl::StatusCode::kFailedPrecondition) << reply.status();
}

TEST(QpExchangeOverTcpNoServerTest, NothingListeningIsUnavailable) {
  // Bind then close a listener to get a port nobody serves.
  MemoryRegistry registry;
  TcpServerOptions options;
  options.bind_host = "127.0.0.1";
  uint16_t port;
  {
    auto server = TcpServer::Bind(options, &registry);
    ASSERT_TRUE(server.ok());
    port = (*server)->port();
  }
  auto reply = rdma::ExchangeQpInfo("127.0.0.1", port, "127.0.0.1:1", 1, "", "{}", kTimeout);
  EXPECT_EQ(reply.status().code(), absl::StatusCode::kUnavailable) << reply.status();
}

std::unique_ptr<TransferEngine> MakeRdmaEngine() {
  TransferEngineOptions options;
  options.local_server_name = "127.0.0.1";
  options.protocol = "rdma";
  options.enable_shm = false;  // same host: without RDMA this must go over TCP
  options.request_timeout = std::chrono::milliseconds(30000);
  auto engine = TransferEngine::Create(options);
  EXPECT_TRUE(engine.ok()) << engine.status();
  return engine.ok() ? *std::move(engine) : nullptr;
}

// Writes then reads back `bytes` between two engines, checks the bytes and prints the rates.
void MoveBytes(TransferEngine& initiator, TransferEngine& target, size_t bytes) {
  std::vector<char> remote(bytes, 0);
  std::vector<char> local(bytes);
  std::vector<char> back(bytes, 0);
  FillPattern(local.data(), bytes, 7);
  ASSERT_TRUE(target.RegisterLocalMemory(remote.data(), bytes).ok());
  ASSERT_TRUE(initiator.RegisterLocalMemory(local.data(), bytes).ok());
  ASSERT_TRUE(initiator.RegisterLocalMemory(back.data(), bytes).ok());
  auto handle = initiator.OpenSegment(target.LocalSegmentName());
  ASSERT_TRUE(handle.ok()) << handle.status();
  const uint64_t addr = reinterpret_cast<uint64_t>(remote.data());
  auto start = std::chrono::steady_clock::now();
  ASSERT_TRUE(
      initiator.TransferSync({Request(OpCode::kWrite, local.data(), *handle, addr, bytes)}).ok());
  double write_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_TRUE(MatchesPattern(remote.data(), bytes, 7));
  start = std::chrono::steady_clock::now();
  ASSERT_TRUE(
      initiator.TransferSync({Request(OpCode::kRead, back.data(), *handle, addr, bytes)}).ok());
  double read_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_TRUE(MatchesPattern(back.data(), bytes, 7));
  std::printf("%zu MiB: write %.1f MiB/s, read %.1f MiB/s (rdma_bytes %llu, tcp_bytes %llu)\n",
              bytes >> 20, (bytes >> 20) / write_s, (bytes >> 20) / read_s,
              static_cast<unsigned long long>(initiator.Stats().rdma_bytes),
              static_cast<unsigned long long>(initiator.Stats().tcp_bytes));
  EXPECT_TRUE(initiator.UnregisterLocalMemory(local.data()).ok());
  EXPECT_TRUE(initiator.UnregisterLocalMemory(back.data()).ok());
  EXPECT_TRUE(target.UnregisterLocalMemory(remote.data()).ok());
}

TEST(RdmaFallbackTest, WithoutDeviceProtocolRdmaMovesBytesOverTcp) {
  if (!rdma::ListRdmaDevices().empty()) GTEST_SKIP() << "this host has an RDMA device";
  auto target = MakeRdmaEngine();
  auto initiator = MakeRdmaEngine();
  ASSERT_NE(target, nullptr);
  ASSERT_NE(initiator, nullptr);
  constexpr size_t kBytes = 8 << 20;
  MoveBytes(*initiator, *target, kBytes);
  EXPECT_EQ(initiator->Stats().rdma_bytes, 0u);
  EXPECT_EQ(initiator->Stats().tcp_bytes, 2 * kBytes);
}

TEST(RdmaFallbackTest, MalformedRdmaVariableIsAClearError) {
  ASSERT_EQ(setenv("MC_NUM_QP_PER_EP", "zero", 1), 0);
  TransferEngineOptions options;
  options.local_server_name = "127.0.0.1";
  options.protocol = "rdma";
  auto engine = TransferEngine::Create(options);
  options.protocol = "tcp";  // TCP engines do not read MC_* variables
  auto tcp_engine = TransferEngine::Create(options);
  unsetenv("MC_NUM_QP_PER_EP");
  ASSERT_EQ(engine.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(engine.status().message().find("MC_NUM_QP_PER_EP"), std::string::npos);
  EXPECT_TRUE(tcp_engine.ok()) << tcp_engine.status();
}

// MC_FORCE_TCP (set to any value, as upstream reads it) keeps an "rdma" engine off RDMA entirely:
// the RDMA transport is not opened, so its MC_* tuning is not even read, and bytes go over TCP.
TEST(RdmaFallbackTest, ForceTcpVariableSkipsRdma) {
  ASSERT_EQ(setenv("MC_NUM_QP_PER_EP", "zero", 1), 0);
  ASSERT_EQ(setenv("MC_FORCE_TCP", "0", 1), 0);  // presence is what counts, as upstream
  TransferEngineOptions options;
  options.local_server_name = "127.0.0.1";
  options.protocol = "rdma";
  options.enable_shm = false;  // same host: count the bytes on TCP
  auto forced = TransferEngine::Create(options);
  unsetenv("MC_FORCE_TCP");
  auto rdma = TransferEngine::Create(options);
  unsetenv("MC_NUM_QP_PER_EP");
  ASSERT_TRUE(forced.ok()) << forced.status();
  EXPECT_EQ(rdma.status().code(), absl::StatusCode::kInvalidArgument);
  auto target = MakeRdmaEngine();
  ASSERT_NE(target, nullptr);
  constexpr size_t kBytes = 1 << 20;
  MoveBytes(**forced, *target, kBytes);
  EXPECT_EQ((*forced)->Stats().rdma_bytes, 0u);
  EXPECT_EQ((*forced)->Stats().tcp_bytes, 2 * kBytes);
}

// Real RDMA: only where a device exists (never on this project's machines so far).
TEST(RdmaDeviceTest, MovesBytesOverRdma) {
  std::vector<std::string> devices = rdma::ListRdmaDevices();
  if (devices.empty()) GTEST_SKIP() << "no RDMA device (ibv_get_device_list is empty)";
  auto target = MakeRdmaEngine();
  auto initiator = MakeRdmaEngine();
  ASSERT_NE(target, nullptr);
  ASSERT_NE(initiator, nullptr);
  for (size_t bytes : {size_t{1} << 20, size_t{64} << 20}) MoveBytes(*initiator, *target, bytes);
  EXPECT_GT(initiator->Stats().rdma_bytes, 0u);
}

}  // namespace
}  // namespace yuebing::transport
