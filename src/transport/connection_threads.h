// ConnectionThreads: the thread-per-connection accept loop that the transport's TCP server and
// the master's fast path share. It owns a listening socket, accepts on its own thread, and runs
// `serve(fd)` for each connection on a thread of that connection, at most max_connections at once
// (more are closed at once, with a warning). Every accepted socket gets TuneDataSocket(). When
// `serve` returns, the connection is shut down (the peer sees the end at once) and its descriptor
// is closed when the thread is reaped (at the next accept, or in Stop()).
//
// Thread safety: Start/Stop from the owner; Count() and stopping() from any thread. `serve` runs
// concurrently on connection threads and should return soon after stopping() turns true (Stop()
// also shuts every connection's socket down, which ends blocking reads and writes).
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <list>
#include <memory>
#include <string>
#include <thread>

#include "absl/base/thread_annotations.h"
#include "yuebing/common/mutex.h"

namespace yuebing::transport {

class ConnectionThreads {
 public:
  // `listen_fd`: a listening socket, owned from now on. `name` names the server in log lines.
  ConnectionThreads(int listen_fd, uint32_t max_connections, std::string name,
                    std::function<void(int fd)> serve);
  ~ConnectionThreads();  // Stop()
  ConnectionThreads(const ConnectionThreads&) = delete;
  ConnectionThreads& operator=(const ConnectionThreads&) = delete;

  // Starts accepting (once).
  void Start();
  // Stops accepting, shuts every connection down, joins every thread and closes every socket,
  // the listening one included. Idempotent.
  void Stop();
  bool stopping() const { return stopping_.load(); }
  // Connections being served now.
  size_t Count() const;

 private:
  struct Connection {
    int fd = -1;
    std::thread thread;
    std::atomic<bool> done{false};
  };

  void AcceptLoop();
  void ReapLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const int listen_fd_;
  const uint32_t max_connections_;
  const std::string name_;
  const std::function<void(int fd)> serve_;
  std::atomic<bool> stopping_{false};
  std::thread accept_thread_;
  mutable yuebing::Mutex mu_;
  bool stopped_ ABSL_GUARDED_BY(mu_) = false;
  std::list<std::unique_ptr<Connection>> connections_ ABSL_GUARDED_BY(mu_);
};

}  // namespace yuebing::transport
