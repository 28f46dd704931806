// The initiator side of the TCP transport for one target segment: a bounded queue of slices, a
// pool of connections that pull from it, pipelined frames on each connection (replies come back in
// order), and a bound on bytes in flight. A large slice goes to a connection with the least bytes
// in flight, so a batch is spread over the pool even when its requests take moments to send
// (reads). A connection takes small slices queued back to back as one burst and sends their
// frames in one sendmsg; replies are read through a small buffer, so a run of small replies costs
// one recv. Larger payloads go straight between the socket and the
// request's memory (no staging copy).
//
// A request submitted alone, when a connection is idle, is sent by the submitting thread itself
// (Submit: a read, or a write of up to inline_send_bytes). When its reply comes quickly (a read,
// or a small write: within tens of microseconds), that thread then polls for the reply and reads
// it itself, for up to reply_spin, instead of the connection's receiver thread reading it and
// waking the waiter (each wake-up of a sleeping thread costs 20-30 us on a small virtual
// machine). The receiver thread reads every other reply. While such claimed requests come, the
// receiver does not watch the idle connection (its poll would wake it for every claimed reply);
// senders find a connection the peer closed meanwhile before their next send on it, and replace it.
//
// Lifetime: a slice's task is finished exactly once, by whichever thread last touched its memory:
// the reader of its reply (receiver, or the submitting thread), the receiver's cleanup when a
// connection dies (after any reader has let go), or the queue owner when a queued slice expires
// or the peer shuts down.
// Thread safety: all public methods are thread-safe.
#pragma once

#include <chrono>
#include <cstdint>
#include <deque>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "transport/reply_spin.h"
#include "transport/tcp_auth.h"
#include "transport/transfer_batch.h"
#include "yuebing/common/clock.h"
#include "yuebing/common/mutex.h"
#include "yuebing/transport/transfer_engine.h"

namespace yuebing::transport {

// The environment variable that sets TcpPeerOptions::reply_spin for the engine's peers, in
// microseconds (reply_spin.h: ReplySpinFromEnvironment), and its default.
inline constexpr const char* kTcpReplySpinEnv = "YUEBING_TCP_REPLY_SPIN_US";
inline constexpr std::chrono::microseconds kDefaultTcpReplySpin{100};

struct TcpSlice {
  TransferTask* task = nullptr;
  OpCode opcode = OpCode::kWrite;
  char* local = nullptr;
  uint64_t remote_addr = 0;
  uint64_t length = 0;
  SteadyTime deadline;
  uint64_t request_id = 0;  // set when sent
};

struct TcpPeerOptions {
  std::string segment_name;
  std::string host;
  uint16_t port = 0;
  uint64_t epoch = 0;  // the epoch HELLO asks for
  uint32_t connections = 2;
  uint64_t max_inflight_bytes = 64ull << 20;
  size_t max_queued_slices = 1 << 20;
  std::chrono::milliseconds connect_timeout{3000};
  // A request alone in its submission whose frame carries at most this many payload bytes (a
  // read carries none) is sent by the submitting thread when a connection is free (idle, for a
  // write larger than claim_reply_write_bytes), sparing the wake-up of a sender thread (a 1 MiB
  // write then takes ~0.35 ms instead of ~0.49 ms here).
  uint64_t inline_send_bytes = 1 << 20;
  // Of the requests sent that way, the submitting thread also reads the reply to reads and to
  // writes of at most this many bytes (polling for it for up to reply_spin). A larger write's
  // reply comes only once the target has received all of it, mostly later than the poll lasts.
  uint64_t claim_reply_write_bytes = 64 << 10;
  // When non-empty, each connection authenticates with it (tcp_auth.h) before HELLO, within
  // connect_timeout.
  std::string cluster_secret;
  // How long a thread that sent a request inline polls for its reply (AdaptiveSpin: it stops
  // polling while replies keep missing the budget); 0: the receiver thread reads every reply.
  std::chrono::microseconds reply_spin = kDefaultTcpReplySpin;
};

// Sends HELLO for `segment` (epoch 0: any incarnation) on a connected (and, with a secret,
// authenticated) socket and reads the reply by `deadline`. Errors: kFailedPrecondition (another
// segment or epoch there), kPermissionDenied (the target wants a cluster secret), kUnavailable (no
// reply by the deadline, connection lost), kInternal / kInvalidArgument (protocol violation).
absl::Status SendHello(int fd, const std::string& segment, uint64_t epoch, AuthDeadline deadline);

class TcpPeer {
 public:
  explicit TcpPeer(TcpPeerOptions options);
  ~TcpPeer();  // Shutdown()
  TcpPeer(const TcpPeer&) = delete;
  TcpPeer& operator=(const TcpPeer&) = delete;

  // Queues the slices, or sends a single small one at once. Waits on the network only to read the
  // reply to a slice it sent on an idle connection (up to reply_spin for the reply to start, then
  // until it is read or the watchdog aborts the connection at the slice's deadline). Errors:
  // kResourceExhausted when the queue is full, kFailedPrecondition after Shutdown; nothing is
  // queued then.
  absl::Status Submit(std::vector<TcpSlice> slices);

  // Fails queued slices whose deadline passed and aborts connections whose oldest in-flight slice
  // is past its deadline. Called periodically by the engine's watchdog.
  void ExpireDeadlines(SteadyTime now);

  // True once a HELLO was refused because the target's epoch changed: the segment must be reopened.
  bool stale() const;

  // For tests: how many slices each connection that is ready now has sent, oldest first.
  std::vector<uint64_t> SlicesSentPerReadyConnection() const;

  // Fails everything queued or in flight and joins the connection threads.
  void Shutdown();

 private:
  class Connection;

  void SenderLoop(Connection* conn);
  void ReceiverLoop(Connection* conn);
  // Requires conn->reader_mu and a request in flight: reads the reply to the oldest one and
  // finishes its slice. An error leaves the slice in flight (the connection is to be aborted).
  // With `read_ahead`, a small reply is read through the buffer with whatever follows it; a
  // sender reading its own reply must not (bytes it buffered for later replies would not wake a
  // receiver that watches the socket).
  absl::Status ReadReply(Connection* conn, bool read_ahead);
  // The oldest sent request whose reply has not been read (a copy), or nullopt.
  static std::optional<TcpSlice> OldestInFlight(Connection* conn);
  // Requires conn->send_mu. Sends the slices' frames in one sendmsg (ids assigned, in the fifo).
  absl::Status SendSlices(Connection* conn, TcpSlice* slices, size_t count);
  // Pops the queue's front slice and, when it is small, the small slices right behind it, within
  // the burst limits and the bound on bytes in flight (counted in); at least one slice.
  void TakeBurstLocked(Connection* conn, std::vector<TcpSlice>& burst)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Counts `bytes` as in flight on `conn` (and so for the peer), or no longer: the peer's total
  // and each connection's share move together.
  void CountInFlightLocked(Connection* conn, uint64_t bytes) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void UncountInFlightLocked(Connection* conn, uint64_t bytes) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void Abort(Connection* conn, const absl::Status& reason);
  // Sends a slice at once on an idle connection and, when it was the only one in flight and its
  // reply comes quickly, polls for its reply and reads it (see the file comment). False when no
  // connection was free (nothing sent, nothing counted).
  bool TrySendInline(TcpSlice& slice);
  void CleanUpConnection(Connection* conn, const absl::Status& reason);
  void EnsureConnectionsLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void ReapDeadConnectionsLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void FailQueuedLocked(const absl::Status& reason) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  bool SenderMayProceed(Connection* conn) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const TcpPeerOptions options_;
  AdaptiveSpin reply_spin_;
  mutable yuebing::Mutex mu_;
  std::deque<TcpSlice> queue_ ABSL_GUARDED_BY(mu_);
  uint64_t inflight_bytes_ ABSL_GUARDED_BY(mu_) = 0;
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  bool stale_ ABSL_GUARDED_BY(mu_) = false;
  int connecting_ ABSL_GUARDED_BY(mu_) = 0;
  std::vector<std::shared_ptr<Connection>> connections_ ABSL_GUARDED_BY(mu_);
};

}  // namespace yuebing::transport
