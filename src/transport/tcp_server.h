// The target side of the TCP transport: accepts connections, answers HELLO and DESCRIBE, and
// serves READ/WRITE frames straight from/into registered memory after checking every range
// against the MemoryRegistry. A refused range gets an error reply (its WRITE payload is read and
// discarded, so the stream stays usable); a malformed frame closes the connection. With a cluster
// secret, a connection that has not authenticated is refused before any registered memory, the
// descriptor or the object source is touched. READ_OBJECT frames are answered by the object source
// (SetObjectSource), whole objects by key.
//
// Thread safety: Start/port/~TcpServer from the owner; connections are served on their own threads
// (one per connection, at most max_connections).
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <list>
#include <memory>
#include <string>
#include <thread>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "transport/connection_threads.h"
#include "transport/memory_registry.h"
#include "transport/wire_format.h"
#include "yuebing/common/mutex.h"
#include "yuebing/transport/transfer_engine.h"

namespace yuebing::transport {

struct TcpServerOptions {
  std::string bind_host;
  uint16_t port = 0;
  uint32_t max_connections = 1024;
  // A started frame must be fully received within this time, or the connection is closed.
  std::chrono::milliseconds frame_timeout{30000};
  // Cluster secret: when non-empty every connection must pass the mutual challenge-response of
  // tcp_auth.h before anything else is served; when empty, AUTH_HELLO is refused
  // (kUnauthenticated).
  std::string cluster_secret;
  // A new connection must send its first frame, and with a secret finish the handshake, within this
  // time, or it is closed: a silent stranger holds a server thread at most this long.
  std::chrono::milliseconds handshake_timeout{5000};
};

class TcpServer {
 public:
  // Binds the listener; serving starts with Serve(). Errors: kAlreadyExists (port taken),
  // kInvalidArgument (bad host), kUnavailable.
  static absl::StatusOr<std::unique_ptr<TcpServer>> Bind(const TcpServerOptions& options,
                                                         MemoryRegistry* registry);
  ~TcpServer();  // closes the listener and every connection, joins all threads

  uint16_t port() const { return port_; }

  // Starts accepting. `segment_name`/`epoch` answer HELLO; `describe` produces the DESCRIBE reply
  // (called on connection threads; must be thread-safe).
  void Serve(std::string segment_name, uint64_t epoch, std::function<std::string()> describe);
  // Handler of RDMA_CONNECT payloads (after HELLO); its result is the reply payload, an error is
  // sent back as a refusal. Without one, RDMA_CONNECT is refused. Call before Serve().
  using RdmaConnectHandler = std::function<absl::StatusOr<std::string>(const std::string&)>;
  void SetRdmaConnectHandler(RdmaConnectHandler handler) { rdma_connect_ = std::move(handler); }

  // Answers READ_OBJECT frames with `source` (null: refused with kNoObjectSource). May be called
  // at any time; returns once no call of the previous source is running.
  void SetObjectSource(ObjectSource source);

  size_t ConnectionCount() const { return threads_.Count(); }

 private:
  TcpServer(const TcpServerOptions& options, MemoryRegistry* registry, int listen_fd,
            uint16_t port);
  void ServeConnection(int fd);
  // Answers one READ_OBJECT for `key` (its payload already read).
  absl::Status ServeObject(int fd, const FrameHeader& request, const std::string& key);

  const TcpServerOptions options_;
  MemoryRegistry* const registry_;
  const uint16_t port_;
  std::string segment_name_;
  uint64_t epoch_ = 0;
  std::function<std::string()> describe_;
  RdmaConnectHandler rdma_connect_;
  yuebing::Mutex source_mu_;
  ObjectSource object_source_ ABSL_GUARDED_BY(source_mu_);
  int source_calls_ ABSL_GUARDED_BY(source_mu_) = 0;  // calls of object_source_ running
  ConnectionThreads threads_;  // last: stopped (threads joined) before the members above go
};

}  // namespace yuebing::transport
