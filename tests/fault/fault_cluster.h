// A real cluster for fault tests: one yuebing-master process that can be killed and restarted on
// the same port, and yuebing-store processes that can be killed, stopped (SIGSTOP) and continued,
// optionally started through a command prefix (e.g. `ip netns exec NS`).
//
// Thread safety: not thread-safe; drive it from the test thread only (clients it makes are
// thread-safe).
#pragma once

#include <sys/types.h>

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "support/child_process.h"
#include "yuebing/store/client.h"

namespace yuebing::fault {

class FaultCluster {
 public:
  struct Options {
    std::string master_rpc_address = "127.0.0.1";  // where the master listens
    std::vector<std::string> master_flags{};
    std::string store_size = "32MB";
    int store_rpc_timeout_ms = 1000;
  };
  struct Store {
    std::unique_ptr<test_support::ChildProcess> process;
    std::string segment;  // transfer engine segment name ("host:port")
    bool alive = false;
  };

  explicit FaultCluster(Options options) : options_(std::move(options)) {}

  // Starts the master on fresh ports (first call) or on the ports it had (restart). Returns false
  // on failure, with a test failure recorded.
  bool StartMaster();
  // kill -9 of the master; waits until it is reaped.
  void KillMaster();

  // Starts a store; `prefix` is prepended to its argv, `master_address` overrides the address the
  // store dials and `local_hostname` the address peers use for it. Returns its index or -1.
  int StartStore(const std::vector<std::string>& prefix = {},
                 const std::string& master_address = "", const std::string& local_hostname = "");
  void KillStore(int index);  // kill -9 and reap
  void StopStore(int index);  // SIGSTOP
  void ContStore(int index);  // SIGCONT
  Store& store(int index) { return stores_[static_cast<size_t>(index)]; }
  int store_count() const { return static_cast<int>(stores_.size()); }
  int alive_stores() const;

  // A client of this cluster with the given timeouts (no segment of its own unless asked).
  std::unique_ptr<store::Client> MakeClient(std::chrono::milliseconds rpc_timeout,
                                            std::chrono::milliseconds transfer_timeout,
                                            bool enable_shm, uint64_t segment_bytes = 0);

  const std::string& master_address() const { return master_address_; }
  uint16_t rpc_port() const { return rpc_port_; }

 private:
  Options options_;
  uint16_t rpc_port_ = 0;
  uint16_t metrics_port_ = 0;
  std::string master_address_;
  std::unique_ptr<test_support::ChildProcess> master_;
  std::vector<Store> stores_;
};

// Runs a shell command; returns its exit status (0 on success). Output goes to the test's stderr.
int RunCommand(const std::string& command);

}  // namespace yuebing::fault
