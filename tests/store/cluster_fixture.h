// A real cluster on 127.0.0.1 for store tests: a yuebing-master process and N yuebing-store
// processes (each contributing memory), plus helpers to make in-process clients.
#pragma once

#include <gtest/gtest.h>
#include <signal.h>

#include <memory>
#include <string>
#include <vector>

#include "support/child_process.h"
#include "support/etcd_process.h"
#include "yuebing/store/client.h"

namespace yuebing::store::testing {

class Cluster {
 public:
  struct Options {
    int stores = 3;
    std::string store_size = "64MB";
    std::vector<std::string> master_flags;
    std::vector<std::string> store_flags;  // extra flags of every store
  };

  explicit Cluster(Options options) : options_(std::move(options)) {}

  // Starts the master and the stores; returns false (with a test failure) if any did not start.
  bool Start() {
    auto rpc_port = test_support::PickFreeTcpPort();
    auto metrics_port = test_support::PickFreeTcpPort();
    if (!rpc_port.ok() || !metrics_port.ok()) return false;
    master_address_ = "127.0.0.1:" + std::to_string(*rpc_port);
    metrics_port_ = *metrics_port;
    std::vector<std::string> argv = {test_support::BuildPath("tools/master/yuebing-master"),
                                     "--rpc_port=" + std::to_string(*rpc_port),
                                     "--rpc_address=127.0.0.1",
                                     "--metrics_port=" + std::to_string(*metrics_port)};
    argv.insert(argv.end(), options_.master_flags.begin(), options_.master_flags.end());
    auto master = test_support::ChildProcess::Start(argv);
    EXPECT_TRUE(master.ok()) << master.status();
    if (!master.ok()) return false;
    master_ = std::move(master).value();
    auto line = master_->WaitForLine("yuebing-master listening", std::chrono::seconds(20));
    EXPECT_TRUE(line.ok()) << "master did not start: " << line.status();
    if (!line.ok()) return false;
    for (int i = 0; i < options_.stores; ++i) {
      if (!StartStore()) return false;
    }
    return true;
  }

  bool StartStore() {
    std::vector<std::string> argv = {test_support::BuildPath("tools/store/yuebing-store"),
                                     "--master_server_address=" + master_address_,
                                     "--global_segment_size=" + options_.store_size};
    argv.insert(argv.end(), options_.store_flags.begin(), options_.store_flags.end());
    auto store = test_support::ChildProcess::Start(argv);
    EXPECT_TRUE(store.ok()) << store.status();
    if (!store.ok()) return false;
    auto line = (*store)->WaitForLine("yuebing-store ready", std::chrono::seconds(20));
    EXPECT_TRUE(line.ok()) << "store did not start: " << line.status();
    if (!line.ok()) return false;
    stores_.push_back(std::move(store).value());
    return true;
  }

  std::unique_ptr<Client> MakeClient(uint64_t segment_bytes = 0) {
    ClientConfig config;
    config.master_server_address = master_address_;
    config.global_segment_size = segment_bytes;
    config.transfer_timeout = std::chrono::milliseconds(5000);
    auto client = Client::Create(config);
    EXPECT_TRUE(client.ok()) << client.status();
    return client.ok() ? std::move(client).value() : nullptr;
  }

  void KillStore(size_t index) {
    stores_[index]->Signal(SIGKILL);
    (void)stores_[index]->Wait(std::chrono::seconds(5));
  }

  const std::string& master_address() const { return master_address_; }
  uint16_t metrics_port() const { return metrics_port_; }
  test_support::ChildProcess& master() { return *master_; }

 private:
  Options options_;
  std::string master_address_;
  uint16_t metrics_port_ = 0;
  std::unique_ptr<test_support::ChildProcess> master_;
  std::vector<std::unique_ptr<test_support::ChildProcess>> stores_;
};

// Deterministic value bytes for a key, so any reader can check what it got.
inline std::string ValueFor(const std::string& key, size_t size) {
  std::string value(size, '\0');
  uint64_t x = std::hash<std::string>{}(key) | 1;
  for (size_t i = 0; i < size; ++i) {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    value[i] = static_cast<char>(x);
  }
  return value;
}

}  // namespace yuebing::store::testing
