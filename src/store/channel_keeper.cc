#include "channel_keeper.h"

#include <chrono>
#include <utility>

namespace yuebing::store {

namespace {
// How long one connectivity watch lasts: bounds the destructor's wait and how soon a nudge
// that arrives while the channel looks READY is acted on.
constexpr auto kWatchSlice = std::chrono::milliseconds(50);
}  // namespace

ChannelKeeper::ChannelKeeper(std::shared_ptr<grpc::Channel> channel)
    : channel_(std::move(channel)) {}

ChannelKeeper::~ChannelKeeper() {
  std::thread thread;
  {
    yuebing::MutexLock lock(&mu_);
    stopping_ = true;
    thread = std::move(thread_);
  }
  if (thread.joinable()) thread.join();
}

void ChannelKeeper::Nudge() {
  yuebing::MutexLock lock(&mu_);
  if (stopping_) return;
  nudged_ = true;
  if (!thread_.joinable()) thread_ = std::thread(&ChannelKeeper::Loop, this);
}

void ChannelKeeper::Loop() {
  yuebing::MutexLock lock(&mu_);
  while (!stopping_) {
    if (!nudged_) {
      mu_.Await(yuebing::Condition(
          +[](ChannelKeeper* self)
               ABSL_NO_THREAD_SAFETY_ANALYSIS { return self->nudged_ || self->stopping_; },
          this));
      continue;
    }
    nudged_ = false;
    mu_.Unlock();
    // Watch until READY: each watch polls the channel, so its connect attempts and backoff
    // timers progress. GetState(true) starts a connection attempt from IDLE.
    while (true) {
      const grpc_connectivity_state state = channel_->GetState(/*try_to_connect=*/true);
      if (state == GRPC_CHANNEL_READY || state == GRPC_CHANNEL_SHUTDOWN) break;
      channel_->WaitForStateChange(state, std::chrono::system_clock::now() + kWatchSlice);
      yuebing::MutexLock check(&mu_);
      if (stopping_) break;
    }
    mu_.Lock();
  }
}

}  // namespace yuebing::store
