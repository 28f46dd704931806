#include "support/test_cluster.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>

#include <functional>
#include <utility>

#include "absl/strings/str_cat.h"
#include "support/etcd_process.h"

namespace yuebing::test_support {
namespace {

constexpr int kMasterStartAttempts = 5;
constexpr auto kReapTimeout = std::chrono::seconds(5);

}  // namespace

std::string TestCluster::MasterBinary() { return BuildPath("tools/master/yuebing-master"); }
std::string TestCluster::StoreBinary() { return BuildPath("tools/store/yuebing-store"); }

bool TestCluster::Start() {
  if (StartMaster() < 0) return false;
  for (int i = 0; i < options_.stores; ++i) {
    if (StartStore() < 0) return false;
  }
  return true;
}

bool TestCluster::LaunchMaster(Master& master, const std::vector<std::string>& argv) {
  for (int attempt = 0; attempt < kMasterStartAttempts; ++attempt) {
    auto process = ChildProcess::Start(argv);
    EXPECT_TRUE(process.ok()) << process.status();
    if (!process.ok()) return false;
    auto line = (*process)->WaitForLine("yuebing-master listening", options_.start_timeout);
    if (line.ok()) {
      master.process = std::move(process).value();
      master.listening_line = *line;
      master.alive = true;
      return true;
    }
    (*process)->Signal(SIGKILL);
    (void)(*process)->Wait(kReapTimeout);
  }
  ADD_FAILURE() << "master did not start on port " << master.rpc_port;
  return false;
}

int TestCluster::StartMaster(const std::vector<std::string>& extra_flags) {
  auto rpc_port = PickFreeTcpPort();
  auto metrics_port = PickFreeTcpPort();
  EXPECT_TRUE(rpc_port.ok() && metrics_port.ok());
  if (!rpc_port.ok() || !metrics_port.ok()) return -1;
  Master master;
  master.rpc_port = *rpc_port;
  master.metrics_port = *metrics_port;
  master.address = absl::StrCat("127.0.0.1:", master.rpc_port);
  std::vector<std::string> argv = {MasterBinary(), absl::StrCat("--rpc_port=", master.rpc_port),
                                   "--rpc_address=" + options_.master_rpc_address,
                                   absl::StrCat("--metrics_port=", master.metrics_port)};
  argv.insert(argv.end(), options_.master_flags.begin(), options_.master_flags.end());
  argv.insert(argv.end(), extra_flags.begin(), extra_flags.end());
  if (!LaunchMaster(master, argv)) return -1;
  masters_.push_back(std::move(master));
  master_argvs_.push_back(std::move(argv));
  return master_count() - 1;
}

bool TestCluster::RestartMaster(int index) {
  Master& m = master(index);
  if (m.alive) KillMaster(index);
  return LaunchMaster(m, master_argvs_[static_cast<size_t>(index)]);
}

void TestCluster::KillMaster(int index) {
  Master& m = master(index);
  if (m.process == nullptr) return;
  m.process->Signal(SIGKILL);
  (void)m.process->Wait(kReapTimeout);
  m.process.reset();
  m.alive = false;
}

void TestCluster::SignalMaster(int index, int signo) {
  Master& m = master(index);
  if (m.process != nullptr) m.process->Signal(signo);
}

int TestCluster::WaitMasterExit(int index, std::chrono::milliseconds timeout) {
  Master& m = master(index);
  if (m.process == nullptr) return -1;
  auto status = m.process->Wait(timeout);
  EXPECT_TRUE(status.ok()) << status.status();
  if (!status.ok()) return -1;
  m.alive = false;
  EXPECT_TRUE(WIFEXITED(*status)) << "wait status " << *status;
  return WIFEXITED(*status) ? WEXITSTATUS(*status) : -1;
}

std::string TestCluster::master_address() const {
  if (!options_.master_server_address.empty()) return options_.master_server_address;
  return masters_.empty() ? std::string() : masters_[0].address;
}

std::vector<std::string> TestCluster::StoreArgv(const StoreSpec& spec) const {
  std::vector<std::string> argv = spec.prefix;
  argv.push_back(StoreBinary());
  argv.push_back("--master_server_address=" +
                 (spec.master_address.empty() ? master_address() : spec.master_address));
  argv.push_back("--global_segment_size=" + options_.store_size);
  argv.insert(argv.end(), options_.store_flags.begin(), options_.store_flags.end());
  if (!spec.local_hostname.empty()) argv.push_back("--local_hostname=" + spec.local_hostname);
  return argv;
}

int TestCluster::StartStore(const StoreSpec& spec) {
  auto process = ChildProcess::Start(StoreArgv(spec));
  EXPECT_TRUE(process.ok()) << process.status();
  if (!process.ok()) return -1;
  auto line = (*process)->WaitForLine("yuebing-store ready", options_.start_timeout);
  EXPECT_TRUE(line.ok()) << "store did not start: " << line.status();
  if (!line.ok()) return -1;
  Store store;
  const std::string tag = "segment=";
  const size_t at = line->find(tag);
  if (at != std::string::npos) {
    const size_t end = line->find(' ', at);
    store.segment = line->substr(at + tag.size(), end - at - tag.size());
  }
  store.process = std::move(process).value();
  store.alive = true;
  stores_.push_back(std::move(store));
  return store_count() - 1;
}

void TestCluster::KillStore(int index) {
  Store& s = store(index);
  if (!s.alive) return;
  s.process->Signal(SIGKILL);
  (void)s.process->Wait(kReapTimeout);
  s.alive = false;
}

void TestCluster::StopStore(int index) { store(index).process->Signal(SIGSTOP); }
void TestCluster::ContStore(int index) { store(index).process->Signal(SIGCONT); }

int TestCluster::alive_stores() const {
  int n = 0;
  for (const Store& s : stores_) n += s.alive ? 1 : 0;
  return n;
}

std::unique_ptr<store::Client> TestCluster::MakeClient(store::ClientConfig config) {
  config.master_server_address = master_address();
  auto client = store::Client::Create(config);
  EXPECT_TRUE(client.ok()) << client.status();
  return client.ok() ? std::move(client).value() : nullptr;
}

std::unique_ptr<store::Client> TestCluster::MakeClient(uint64_t segment_bytes) {
  store::ClientConfig config;
  config.global_segment_size = segment_bytes;
  config.transfer_timeout = std::chrono::milliseconds(5000);
  return MakeClient(config);
}

std::string ValueFor(const std::string& key, size_t size) {
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

}  // namespace yuebing::test_support
