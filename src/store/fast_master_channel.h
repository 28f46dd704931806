// FastMasterChannel: a store client's end of the master's fast path (rpc/fast_rpc_wire.h) to one
// master address. It learns the master's fast port through a lookup the owner gives (the Describe
// RPC), keeps idle connections for reuse, and runs one call per connection at a time (a caller
// takes an idle connection or opens one, so concurrent calls run on parallel connections).
//
// Fallback: Call() reports "not used" without sending anything when the master has no fast path
// (port 0), the lookup failed or runs on another thread, the connection cannot be opened within
// 250 ms (then the port is looked up again after a back-off that doubles per failure: from
// 100 ms to 60 s when refused, from 10 s to 10 min when the connect timed out, as behind a
// firewall that drops the port), or the master refused the frame unprocessed (unknown method,
// shutting down). The owner then makes the
// call over gRPC. Once the request has been sent, a failure is the call's (it may have run).
//
// Waiting for a reply: the caller polls the connection for up to `reply_spin` before sleeping on
// it, while such polls keep being answered (transport/reply_spin.h); a reply costs a sleeping
// caller a wake-up of tens of microseconds on a virtual machine. Not for PullJournal, a long poll.
//
// Deadlines: connecting, sending (SO_SNDTIMEO) and receiving are bounded by the call's deadline.
// Thread safety: all methods may be called from any thread at once.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "rpc/fast_rpc_wire.h"
#include "transport/reply_spin.h"
#include "yuebing/common/mutex.h"

namespace google::protobuf {
class MessageLite;
}  // namespace google::protobuf

namespace yuebing::store {

// Environment variable: "0" turns the fast path off in this process (every call goes by gRPC).
inline constexpr const char* kMasterFastRpcEnv = "YUEBING_MASTER_FAST_RPC";
// Environment variable: how long, in microseconds, a caller polls for the master's reply before
// sleeping (kDefaultMasterReplySpin when unset or not a number; 0: never poll).
inline constexpr const char* kMasterReplySpinEnv = "YUEBING_MASTER_REPLY_SPIN_US";
inline constexpr std::chrono::microseconds kDefaultMasterReplySpin{100};

// The reply spin this process's environment asks for.
std::chrono::microseconds MasterReplySpinFromEnvironment();

class FastMasterChannel {
 public:
  using Deadline = std::chrono::steady_clock::time_point;
  // The master's fast port (0: it has none), or an error when it could not be asked now.
  using PortLookup = std::function<absl::StatusOr<uint16_t>(Deadline deadline)>;

  // `host`: the master's host as the client dials it (the fast port is on the same host).
  FastMasterChannel(std::string host, PortLookup lookup,
                    std::chrono::microseconds reply_spin = kDefaultMasterReplySpin);
  ~FastMasterChannel();  // closes the idle connections
  FastMasterChannel(const FastMasterChannel&) = delete;
  FastMasterChannel& operator=(const FastMasterChannel&) = delete;

  // Runs `request` as `method`, filling `reply`. Returns true when the reply came this way, false
  // when the fast path was not used (nothing sent: use gRPC). Errors (the call failed after its
  // request may have reached the master): kDeadlineExceeded, kUnavailable, kInternal, and
  // kResourceExhausted when the call ran but its reply was too large for a frame.
  absl::StatusOr<bool> Call(rpc::FastMethod method, const google::protobuf::MessageLite& request,
                            google::protobuf::MessageLite* reply, Deadline deadline);

  // Calls that went this way (for tests and benchmarks).
  uint64_t calls() const;

 private:
  // An open connection to the fast port, or -1 (port unknown, in back-off, or connect failed).
  int Acquire(Deadline deadline);
  // Keeps `fd` for reuse; `answered`: it carried a call that is counted in calls().
  void Release(int fd, bool answered);
  // Looks up the port when due; true when one is known afterwards.
  bool EnsurePort(Deadline deadline);

  const std::string host_;
  const PortLookup lookup_;
  transport::AdaptiveSpin reply_spin_;
  mutable yuebing::Mutex mu_;
  uint16_t port_ ABSL_GUARDED_BY(mu_) = 0;  // 0: unknown or none
  bool looking_up_ ABSL_GUARDED_BY(mu_) = false;
  Deadline next_lookup_ ABSL_GUARDED_BY(mu_){};
  std::chrono::milliseconds backoff_ ABSL_GUARDED_BY(mu_){0};
  std::vector<int> idle_ ABSL_GUARDED_BY(mu_);
  uint64_t calls_ ABSL_GUARDED_BY(mu_) = 0;
};

}  // namespace yuebing::store
