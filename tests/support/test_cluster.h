// The one cluster fixture of the C++ tests: real yuebing-master and yuebing-store processes
// (tests/support/child_process.h) on 127.0.0.1, each on free ports, started with bounded waits
// for their ready lines, and killed (kill -9), signalled, stopped (SIGSTOP), continued (SIGCONT)
// and restarted. Several masters may run (HA tests give them --enable_ha through master_flags);
// a master restarts on the ports it had. Stores may be started through a command prefix (e.g.
// `ip netns exec NS`). Every process still running gets SIGKILL when the fixture is destroyed.
//
// Failures are recorded as gtest failures (EXPECT) and reported by the return value, so a test
// writes ASSERT_TRUE(cluster.Start()) or ASSERT_GE(cluster.StartStore(), 0).
//
// Thread safety: not thread-safe; drive it from the test thread only (the clients it makes are
// thread-safe).
#pragma once

#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "support/child_process.h"
#include "yuebing/store/client.h"

namespace yuebing::test_support {

class TestCluster {
 public:
  struct Options {
    std::string master_rpc_address = "127.0.0.1";  // --rpc_address of every master
    std::vector<std::string> master_flags{};       // extra flags of every master
    int stores = 0;                                // how many stores Start() starts
    std::string store_size = "64MB";               // --global_segment_size of every store
    std::vector<std::string> store_flags{};        // extra flags of every store
    // The master address stores and clients dial (e.g. "etcd://..." for HA); empty: the first
    // master's "127.0.0.1:<rpc port>".
    std::string master_server_address{};
    // Bound of each wait for a ready line.
    std::chrono::milliseconds start_timeout = std::chrono::seconds(20);
  };
  struct Master {
    std::unique_ptr<ChildProcess> process;
    uint16_t rpc_port = 0;
    uint16_t metrics_port = 0;
    std::string address;         // "127.0.0.1:<rpc port>"
    std::string listening_line;  // "yuebing-master listening on ..."
    bool alive = false;
  };
  // How to start one store; every field may stay empty.
  struct StoreSpec {
    std::vector<std::string> prefix{};  // prepended to the store's argv
    std::string master_address{};       // overrides the address the store dials
    std::string local_hostname{};       // --local_hostname: the address peers use for it
  };
  struct Store {
    std::unique_ptr<ChildProcess> process;
    std::string segment;  // transfer engine segment name ("host:port") from its ready line
    bool alive = false;
  };

  explicit TestCluster(Options options) : options_(std::move(options)) {}

  // Paths of the binaries in this build tree.
  static std::string MasterBinary();
  static std::string StoreBinary();

  // Starts one master and options.stores stores. False when any did not start.
  bool Start();

  // Starts one more master on fresh ports with `extra_flags` after options.master_flags and
  // waits for its listening line; returns its index, or -1.
  int StartMaster(const std::vector<std::string>& extra_flags = {});
  // Starts master `index` again (after KillMaster or its exit) on the ports and flags it had;
  // a restart may race the old socket's teardown, so it tries a few times.
  bool RestartMaster(int index = 0);
  // kill -9 of master `index`, then reaps it.
  void KillMaster(int index = 0);
  void SignalMaster(int index, int signo);
  // Waits up to `timeout` for master `index` to exit; its exit code, or -1 (still running,
  // killed by a signal).
  int WaitMasterExit(int index, std::chrono::milliseconds timeout);
  Master& master(int index = 0) { return masters_[static_cast<size_t>(index)]; }
  int master_count() const { return static_cast<int>(masters_.size()); }

  // The argv of a store started with `spec` (for tests that run one to its exit).
  std::vector<std::string> StoreArgv(const StoreSpec& spec) const;
  // Starts a store and waits for its ready line; returns its index, or -1.
  int StartStore(const StoreSpec& spec);
  int StartStore() { return StartStore(StoreSpec{}); }
  void KillStore(int index);  // kill -9 and reap
  void StopStore(int index);  // SIGSTOP
  void ContStore(int index);  // SIGCONT
  Store& store(int index) { return stores_[static_cast<size_t>(index)]; }
  int store_count() const { return static_cast<int>(stores_.size()); }
  int alive_stores() const;

  // An in-process client of this cluster: `config` with master_server_address set to
  // master_address(). nullptr (with a test failure) when it cannot be created.
  std::unique_ptr<store::Client> MakeClient(store::ClientConfig config);
  // A client with a segment of `segment_bytes` (0: none) and a 5 s transfer timeout.
  std::unique_ptr<store::Client> MakeClient(uint64_t segment_bytes = 0);

  // The address stores and clients dial (see Options::master_server_address).
  std::string master_address() const;
  uint16_t rpc_port() const { return masters_.empty() ? 0 : masters_[0].rpc_port; }
  uint16_t metrics_port() const { return masters_.empty() ? 0 : masters_[0].metrics_port; }

 private:
  bool LaunchMaster(Master& master, const std::vector<std::string>& argv);

  Options options_;
  std::vector<Master> masters_;
  std::vector<std::vector<std::string>> master_argvs_;  // per master, for restarts
  std::vector<Store> stores_;
};

// Deterministic value bytes for a key, so any reader can check what it got.
std::string ValueFor(const std::string& key, size_t size);

}  // namespace yuebing::test_support
