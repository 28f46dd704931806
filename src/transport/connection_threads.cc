#include "transport/connection_threads.h"

#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <utility>

#include "transport/socket_util.h"
#include "yuebing/common/logging.h"

namespace yuebing::transport {

ConnectionThreads::ConnectionThreads(int listen_fd, uint32_t max_connections, std::string name,
                                     std::function<void(int fd)> serve)
    : listen_fd_(listen_fd),
      max_connections_(max_connections),
      name_(std::move(name)),
      serve_(std::move(serve)) {}

ConnectionThreads::~ConnectionThreads() { Stop(); }

void ConnectionThreads::Start() {
  yuebing::MutexLock lock(&mu_);
  if (stopped_ || accept_thread_.joinable()) return;
  accept_thread_ = std::thread(&ConnectionThreads::AcceptLoop, this);
}

void ConnectionThreads::Stop() {
  {
    yuebing::MutexLock lock(&mu_);
    if (stopped_) return;
    stopped_ = true;
    stopping_ = true;
    shutdown(listen_fd_, SHUT_RDWR);
  }
  if (accept_thread_.joinable()) accept_thread_.join();
  CloseFd(listen_fd_);
  std::list<std::unique_ptr<Connection>> connections;
  {
    yuebing::MutexLock lock(&mu_);
    for (auto& connection : connections_) shutdown(connection->fd, SHUT_RDWR);
    connections.swap(connections_);
  }
  for (auto& connection : connections) {
    if (connection->thread.joinable()) connection->thread.join();
    CloseFd(connection->fd);
  }
}

size_t ConnectionThreads::Count() const {
  yuebing::MutexLock lock(&mu_);
  size_t count = 0;
  for (const auto& connection : connections_) count += !connection->done;
  return count;
}

void ConnectionThreads::AcceptLoop() {
  while (!stopping_) {
    const int fd = accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
    if (fd < 0) {
      if (errno == EINTR || errno == ECONNABORTED) continue;
      if (stopping_) break;
      if (errno == EMFILE || errno == ENFILE) {
        YB_LOG_WARN("{}: accept: out of file descriptors; pausing 100 ms", name_);
        usleep(100 * 1000);
        continue;
      }
      YB_LOG_ERROR("{}: accept failed: {}", name_, std::strerror(errno));
      break;
    }
    yuebing::MutexLock lock(&mu_);
    ReapLocked();
    if (stopping_) {
      CloseFd(fd);
      break;
    }
    if (connections_.size() >= max_connections_) {
      YB_LOG_WARN("{}: refusing a connection: {} open (the limit)", name_, connections_.size());
      CloseFd(fd);
      continue;
    }
    TuneDataSocket(fd);
    auto connection = std::make_unique<Connection>();
    connection->fd = fd;
    Connection* raw = connection.get();
    connections_.push_back(std::move(connection));
    raw->thread = std::thread([this, raw] {
      serve_(raw->fd);
      shutdown(raw->fd, SHUT_RDWR);
      raw->done = true;
    });
  }
}

void ConnectionThreads::ReapLocked() {
  for (auto it = connections_.begin(); it != connections_.end();) {
    if ((*it)->done) {
      (*it)->thread.join();
      CloseFd((*it)->fd);
      it = connections_.erase(it);
    } else {
      ++it;
    }
  }
}

}  // namespace yuebing::transport
