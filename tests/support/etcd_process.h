// A real single-node etcd server run as a child process, for tests. It listens on free
// 127.0.0.1 ports, keeps its data in a fresh temporary directory, and is killed (and the
// directory removed) when the object is destroyed. The child also gets SIGKILL when the thread
// that started it exits, so start it from a thread that outlives the object (e.g. the main one).
//
// Thread safety: not thread-safe; use one object from one thread.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace yuebing::test_support {

class EtcdProcess {
 public:
  struct Options {
    // The etcd binary; the YUEBING_ETCD_BIN environment variable overrides the default.
    std::string binary = "/usr/bin/etcd";
    std::string name = "yb-test";
    // Start returns once etcd answers /health, or fails after this long.
    std::chrono::milliseconds ready_timeout = std::chrono::seconds(20);
    std::vector<std::string> extra_args;
  };

  // Starts etcd and waits until it serves. Errors: kNotFound (binary missing; the message says
  // how to install it), kUnavailable (it exited or did not become healthy in time; the message
  // holds the tail of its log), kInternal (temporary directory or process creation failed).
  static absl::StatusOr<std::unique_ptr<EtcdProcess>> Start(Options options);
  static absl::StatusOr<std::unique_ptr<EtcdProcess>> Start() { return Start(Options{}); }

  EtcdProcess(const EtcdProcess&) = delete;
  EtcdProcess& operator=(const EtcdProcess&) = delete;
  // Kills etcd if still running, reaps it and removes the data directory.
  ~EtcdProcess();

  uint16_t client_port() const { return client_port_; }
  uint16_t peer_port() const { return peer_port_; }
  // "127.0.0.1:<client port>", as used in "etcd://..." connection strings.
  std::string endpoint() const;
  // "http://127.0.0.1:<client port>".
  std::string client_url() const;
  pid_t pid() const { return pid_; }
  bool running() const { return pid_ > 0; }

  // Sends SIGKILL and reaps the process (idempotent); the data directory stays until destruction.
  void Kill();
  // SIGSTOP / SIGCONT: the server stops answering without closing its sockets. Pause returns
  // once every etcd thread is stopped (or after 5 s).
  void Pause();
  void Resume();
  // The last `max_bytes` of etcd's combined stdout/stderr.
  std::string LogTail(size_t max_bytes = 4096) const;

 private:
  EtcdProcess() = default;
  absl::Status Spawn(const Options& options);
  absl::Status WaitHealthy(std::chrono::milliseconds timeout);

  std::string dir_;  // temporary directory holding data/ and etcd.log
  pid_t pid_ = -1;
  uint16_t client_port_ = 0;
  uint16_t peer_port_ = 0;
};

// A TCP port on 127.0.0.1 that was free a moment ago (bound to port 0 and released).
// Errors: kInternal.
absl::StatusOr<uint16_t> PickFreeTcpPort();

}  // namespace yuebing::test_support
