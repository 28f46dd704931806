#include "fault/fault_cluster.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>

#include <cstdlib>

#include "absl/strings/str_cat.h"
#include "support/etcd_process.h"

namespace yuebing::fault {

bool FaultCluster::StartMaster() {
  if (rpc_port_ == 0) {
    auto rpc_port = test_support::PickFreeTcpPort();
    auto metrics_port = test_support::PickFreeTcpPort();
    EXPECT_TRUE(rpc_port.ok() && metrics_port.ok());
    if (!rpc_port.ok() || !metrics_port.ok()) return false;
    rpc_port_ = *rpc_port;
    metrics_port_ = *metrics_port;
    master_address_ = absl::StrCat("127.0.0.1:", rpc_port_);
  }
  std::vector<std::string> argv = {test_support::BuildPath("tools/master/yuebing-master"),
                                   absl::StrCat("--rpc_port=", rpc_port_),
                                   "--rpc_address=" + options_.master_rpc_address,
                                   absl::StrCat("--metrics_port=", metrics_port_)};
  argv.insert(argv.end(), options_.master_flags.begin(), options_.master_flags.end());
  // A restart may race the old socket's teardown; try a few times.
  for (int attempt = 0; attempt < 5; ++attempt) {
    auto master = test_support::ChildProcess::Start(argv);
    EXPECT_TRUE(master.ok()) << master.status();
    if (!master.ok()) return false;
    auto line = (*master)->WaitForLine("yuebing-master listening", std::chrono::seconds(20));
    if (line.ok()) {
      master_ = std::move(master).value();
      return true;
    }
    (*master)->Signal(SIGKILL);
    (void)(*master)->Wait(std::chrono::seconds(5));
  }
  ADD_FAILURE() << "master did not start on port " << rpc_port_;
  return false;
}

void FaultCluster::KillMaster() {
  if (master_ == nullptr) return;
  master_->Signal(SIGKILL);
  (void)master_->Wait(std::chrono::seconds(5));
  master_.reset();
}

int FaultCluster::StartStore(const std::vector<std::string>& prefix,
                             const std::string& master_address, const std::string& local_hostname) {
  std::vector<std::string> argv = prefix;
  argv.push_back(test_support::BuildPath("tools/store/yuebing-store"));
  argv.push_back("--master_server_address=" +
                 (master_address.empty() ? master_address_ : master_address));
  argv.push_back("--global_segment_size=" + options_.store_size);
  argv.push_back(absl::StrCat("--rpc_timeout_ms=", options_.store_rpc_timeout_ms));
  if (!local_hostname.empty()) argv.push_back("--local_hostname=" + local_hostname);
  auto process = test_support::ChildProcess::Start(argv);
  EXPECT_TRUE(process.ok()) << process.status();
  if (!process.ok()) return -1;
  auto line = (*process)->WaitForLine("yuebing-store ready", std::chrono::seconds(20));
  EXPECT_TRUE(line.ok()) << "store did not start: " << line.status();
  if (!line.ok()) return -1;
  Store store;
  const std::string tag = "segment=";
  size_t at = line->find(tag);
  if (at != std::string::npos) {
    size_t end = line->find(' ', at);
    store.segment = line->substr(at + tag.size(), end - at - tag.size());
  }
  store.process = std::move(process).value();
  store.alive = true;
  stores_.push_back(std::move(store));
  return static_cast<int>(stores_.size()) - 1;
}

void FaultCluster::KillStore(int index) {
  Store& s = store(index);
  if (!s.alive) return;
  s.process->Signal(SIGKILL);
  (void)s.process->Wait(std::chrono::seconds(5));
  s.alive = false;
}

void FaultCluster::StopStore(int index) { store(index).process->Signal(SIGSTOP); }
void FaultCluster::ContStore(int index) { store(index).process->Signal(SIGCONT); }

int FaultCluster::alive_stores() const {
  int n = 0;
  for (const Store& s : stores_) n += s.alive ? 1 : 0;
  return n;
}

std::unique_ptr<store::Client> FaultCluster::MakeClient(std::chrono::milliseconds rpc_timeout,
                                                        std::chrono::milliseconds transfer_timeout,
                                                        bool enable_shm, uint64_t segment_bytes) {
  store::ClientConfig config;
  config.master_server_address = master_address_;
  config.rpc_timeout = rpc_timeout;
  config.transfer_timeout = transfer_timeout;
  config.enable_shm = enable_shm;
  config.global_segment_size = segment_bytes;
  auto client = store::Client::Create(config);
  EXPECT_TRUE(client.ok()) << client.status();
  return client.ok() ? std::move(client).value() : nullptr;
}

int RunCommand(const std::string& command) {
  int status = std::system(command.c_str());
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

}  // namespace yuebing::fault
