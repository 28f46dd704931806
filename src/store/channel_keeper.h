// ChannelKeeper: drives a gRPC client channel's reconnection while it is down.
//
// Why: in the gRPC this project builds against (Debian 12's 1.51), a client channel makes
// progress on its connection attempts (connect completions, backoff timers) only while some
// thread polls it: a blocking call in flight, a connectivity watch, or gRPC's backup poller,
// which runs every 5 s. Calls that fail fast while the channel is in TRANSIENT_FAILURE do not
// poll it. So a process whose calls all fail fast (a store pinging a restarted master) saw the
// master again only 5-10 s after it was back. After a failed call the owner calls Nudge(); a
// thread then watches the channel's state, which polls it, until it is READY again.
//
// Thread safety: Nudge() may be called from any thread, also under the caller's locks (it only
// signals). The destructor stops and joins the thread within one watch slice (50 ms).
#pragma once

#include <grpcpp/channel.h>

#include <memory>
#include <thread>

#include "yuebing/common/mutex.h"

namespace yuebing::store {

class ChannelKeeper {
 public:
  explicit ChannelKeeper(std::shared_ptr<grpc::Channel> channel);
  ~ChannelKeeper();
  ChannelKeeper(const ChannelKeeper&) = delete;
  ChannelKeeper& operator=(const ChannelKeeper&) = delete;

  // A call on the channel failed in transport: keep the channel connecting until it is READY.
  // The thread starts on the first nudge (a process whose master never fails has none).
  void Nudge();

 private:
  void Loop();

  const std::shared_ptr<grpc::Channel> channel_;
  yuebing::Mutex mu_;
  bool nudged_ ABSL_GUARDED_BY(mu_) = false;
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  std::thread thread_ ABSL_GUARDED_BY(mu_);
};

}  // namespace yuebing::store
