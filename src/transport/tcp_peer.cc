#include "transport/tcp_peer.h"

#include <poll.h>
#include <sys/socket.h>

#include <cerrno>
#include <chrono>
#include <optional>
#include <thread>
#include <utility>

#include "absl/strings/str_cat.h"
#include "transport/buffered_socket_reader.h"
#include "transport/socket_util.h"
#include "transport/tcp_auth.h"
#include "transport/wire_format.h"
#include "yuebing/common/check.h"
#include "yuebing/common/logging.h"
#include "yuebing/common/status.h"

namespace yuebing::transport {

// One TCP connection with a sender thread (pulls slices from the peer queue and writes frames) and
// a receiver thread (reads replies in order, finishes slices, cleans up when the stream ends).
//
// Lock order: reader_mu, then send_mu or fifo_mu or TcpPeer::mu_; send_mu before fifo_mu;
// TcpPeer::mu_ before fifo_mu (and try-locks send_mu).
class TcpPeer::Connection {
 public:
  enum class State { kConnecting, kReady, kDead };

  // Written under TcpPeer::mu_; fd is fixed once kReady.
  State state = State::kConnecting;
  int fd = -1;
  std::atomic<bool> broken{false};
  bool sender_done = false;
  bool receiver_done = true;  // true until a receiver is started
  // Bytes of the slices sent (or being sent) on this connection whose replies are not yet read:
  // this connection's share of TcpPeer::inflight_bytes_.
  uint64_t inflight_bytes = 0;
  std::thread sender;
  std::thread receiver;

  yuebing::Mutex send_mu;  // held while one frame is written; orders fifo pushes with the stream
  uint64_t next_request_id ABSL_GUARDED_BY(send_mu) = 1;
  // The last request whose send call has returned (bytes handed to the kernel, or failed). A
  // write's reply can arrive before its sender has returned from sendmsg; the reader waits for
  // this before finishing the slice, so a final task's memory is never referenced by our code.
  std::atomic<uint64_t> sent_through{0};
  std::atomic<uint64_t> slices_sent{0};

  yuebing::Mutex fifo_mu;
  std::deque<TcpSlice> fifo ABSL_GUARDED_BY(fifo_mu);  // sent, reply not yet read
  // A thread that sent the only request in flight reads its reply itself; the receiver thread
  // leaves the socket alone meanwhile.
  bool caller_reading ABSL_GUARDED_BY(fifo_mu) = false;
  // Whether the last request sent was claimed that way (how the receiver waits while idle).
  bool last_claimed ABSL_GUARDED_BY(fifo_mu) = false;

  // Whoever holds reader_mu reads replies (and only at the front of the fifo, which only it pops).
  // Set once before the receiver starts.
  yuebing::Mutex reader_mu;
  std::unique_ptr<BufferedSocketReader> reader ABSL_GUARDED_BY(reader_mu);
};

namespace {

// A burst: slices of at most kBurstSliceBytes each, queued back to back, sent in one sendmsg; at
// most kBurstSlices of them and kBurstBytes in all (larger slices go one per send, so that the
// pool's connections share them).
constexpr uint64_t kBurstSliceBytes = 64 << 10;
constexpr size_t kBurstSlices = 32;
constexpr uint64_t kBurstBytes = 256 << 10;

absl::Status ReplyToStatus(WireStatus status, const std::string& segment) {
  std::string message = absl::StrCat(WireStatusText(status), " (segment ", segment, ")");
  switch (status) {
    case WireStatus::kOk:
      return absl::OkStatus();
    case WireStatus::kOutOfRange:
      return absl::PermissionDeniedError(message);
    case WireStatus::kStaleEpoch:
      return absl::FailedPreconditionError(message);
    case WireStatus::kUnauthenticated:
      return absl::PermissionDeniedError(
          absl::StrCat("target ", segment,
                       " requires cluster authentication and this process has no cluster secret"));
    default:
      return absl::InternalError(message);
  }
}

}  // namespace

// Bounded by `deadline`: a target that accepted the connection but never answers (a stopped
// process still has the kernel accept for it) must not hold the sender thread, which Shutdown
// joins.
absl::Status SendHello(int fd, const std::string& segment, uint64_t epoch, AuthDeadline deadline) {
  FrameHeader header;
  header.type = FrameType::kHello;
  header.addr = epoch;
  header.length = segment.size();
  uint8_t bytes[kFrameHeaderBytes];
  EncodeFrameHeader(header, bytes);
  iovec iov[2] = {{bytes, kFrameHeaderBytes}, {const_cast<char*>(segment.data()), segment.size()}};
  YB_RETURN_IF_ERROR(SendAll(fd, iov, 2));
  absl::Status received = RecvAllUntil(fd, bytes, kFrameHeaderBytes, deadline);
  if (absl::IsDeadlineExceeded(received)) {
    return absl::UnavailableError(absl::StrCat("no HELLO reply from ", segment));
  }
  YB_RETURN_IF_ERROR(received);
  YB_ASSIGN_OR_RETURN(FrameHeader reply, DecodeFrameHeader(bytes));
  if (reply.type != FrameType::kHelloReply) {
    return absl::InternalError(absl::StrCat("unexpected reply to HELLO from ", segment));
  }
  return ReplyToStatus(reply.status, segment);
}

TcpPeer::TcpPeer(TcpPeerOptions options)
    : options_(std::move(options)), reply_spin_(options_.reply_spin) {}

TcpPeer::~TcpPeer() { Shutdown(); }

bool TcpPeer::stale() const {
  yuebing::MutexLock lock(&mu_);
  return stale_;
}

std::vector<uint64_t> TcpPeer::SlicesSentPerReadyConnection() const {
  yuebing::MutexLock lock(&mu_);
  std::vector<uint64_t> sent;
  for (const auto& conn : connections_) {
    if (conn->state == Connection::State::kReady && !conn->broken) {
      sent.push_back(conn->slices_sent.load(std::memory_order_relaxed));
    }
  }
  return sent;
}

absl::Status TcpPeer::Submit(std::vector<TcpSlice> slices) {
  if (slices.size() == 1 &&
      (slices[0].opcode == OpCode::kRead || slices[0].length <= options_.inline_send_bytes) &&
      TrySendInline(slices[0])) {
    return absl::OkStatus();
  }
  yuebing::MutexLock lock(&mu_);
  if (stopping_) return absl::FailedPreconditionError("transfer engine is shutting down");
  if (queue_.size() + slices.size() > options_.max_queued_slices) {
    return absl::ResourceExhaustedError(absl::StrCat("too many queued slices for ",
                                                     options_.segment_name, " (limit ",
                                                     options_.max_queued_slices, ")"));
  }
  for (TcpSlice& slice : slices) queue_.push_back(slice);
  ReapDeadConnectionsLocked();
  EnsureConnectionsLocked();
  return absl::OkStatus();
}

bool TcpPeer::TrySendInline(TcpSlice& slice) {
  std::shared_ptr<Connection> conn;
  {
    yuebing::MutexLock lock(&mu_);
    if (stopping_ || !queue_.empty()) return false;
    if (inflight_bytes_ > 0 && inflight_bytes_ + slice.length > options_.max_inflight_bytes) {
      return false;
    }
    for (const auto& candidate : connections_) {
      if (candidate->state == Connection::State::kReady && !candidate->broken &&
          candidate->send_mu.TryLock()) {
        conn = candidate;
        break;
      }
    }
    if (conn == nullptr) return false;
    CountInFlightLocked(conn.get(), slice.length);
  }
  // With nothing in flight (stable while send_mu is held: only senders push), the receiver is not
  // reading, and nobody has looked at the socket since the last reply: check it is still open.
  // The reply is this thread's to read unless another sender's claim is still being released.
  const bool large_write =
      slice.opcode == OpCode::kWrite && slice.length > options_.claim_reply_write_bytes;
  bool idle = false;
  std::chrono::microseconds spin{0};
  {
    yuebing::MutexLock lock(&conn->fifo_mu);
    idle = conn->fifo.empty();
    if (idle && !large_write && !conn->caller_reading) spin = reply_spin_.Next();
    conn->caller_reading = conn->caller_reading || spin.count() > 0;
  }
  // A large write goes inline only on an idle connection, whose socket buffers take it at once: on
  // a busy one, sendmsg could block the submitting thread until the target drained the stream.
  if (large_write && !idle) {
    conn->send_mu.Unlock();
    yuebing::MutexLock lock(&mu_);
    UncountInFlightLocked(conn.get(), slice.length);
    return false;  // queued for the senders instead
  }
  const bool claimed = spin.count() > 0;
  auto release_claim = [&conn, claimed] {
    if (!claimed) return;
    yuebing::MutexLock lock(&conn->fifo_mu);
    conn->caller_reading = false;  // the receiver reads what is left, if anything
  };
  if (idle && !SocketStillIdle(conn->fd)) {
    release_claim();
    conn->send_mu.Unlock();
    {
      yuebing::MutexLock lock(&mu_);
      UncountInFlightLocked(conn.get(), slice.length);
    }
    Abort(conn.get(), absl::UnavailableError("closed by the target while idle"));
    return false;  // queued instead, for another connection or a new one
  }
  absl::Status status = SendSlices(conn.get(), &slice, 1);
  conn->send_mu.Unlock();
  if (!status.ok()) {
    release_claim();
    Abort(conn.get(), status);
    return true;
  }
  if (!claimed) return true;
  const bool answered = SpinUntilReadable(conn->fd, spin);
  reply_spin_.Record(answered);
  absl::Status read;
  if (answered) {
    yuebing::MutexLock lock(&conn->reader_mu);
    read = ReadReply(conn.get(), /*read_ahead=*/false);
  }
  release_claim();
  if (!read.ok()) Abort(conn.get(), read);
  return true;
}

// The slices are in the fifo before their first byte is sent, so the receiver's cleanup finishes
// them whatever happens to the send.
absl::Status TcpPeer::SendSlices(Connection* conn, TcpSlice* slices, size_t count) {
  YB_CHECK(count > 0 && count <= kBurstSlices, "a send carries 1 to kBurstSlices slices");
  uint8_t headers[kBurstSlices][kFrameHeaderBytes];
  iovec iov[2 * kBurstSlices];
  int iovcnt = 0;
  {
    yuebing::MutexLock lock(&conn->fifo_mu);
    // A claimed request is sent alone on an idle connection (TrySendInline).
    conn->last_claimed = conn->caller_reading && conn->fifo.empty();
    for (size_t i = 0; i < count; ++i) {
      TcpSlice& slice = slices[i];
      slice.request_id = conn->next_request_id++;
      conn->fifo.push_back(slice);
      FrameHeader header;
      header.type = slice.opcode == OpCode::kWrite ? FrameType::kWrite : FrameType::kRead;
      header.request_id = slice.request_id;
      header.addr = slice.remote_addr;
      header.length = slice.length;
      EncodeFrameHeader(header, headers[i]);
      iov[iovcnt++] = {headers[i], kFrameHeaderBytes};
      if (slice.opcode == OpCode::kWrite) iov[iovcnt++] = {slice.local, slice.length};
    }
  }
  conn->slices_sent.fetch_add(count, std::memory_order_relaxed);
  absl::Status sent = SendAll(conn->fd, iov, iovcnt);
  conn->sent_through.store(slices[count - 1].request_id, std::memory_order_release);
  return sent;
}

void TcpPeer::CountInFlightLocked(Connection* conn, uint64_t bytes) {
  inflight_bytes_ += bytes;
  conn->inflight_bytes += bytes;
}

void TcpPeer::UncountInFlightLocked(Connection* conn, uint64_t bytes) {
  YB_CHECK(inflight_bytes_ >= bytes && conn->inflight_bytes >= bytes,
           "bytes in flight count every slice sent");
  inflight_bytes_ -= bytes;
  conn->inflight_bytes -= bytes;
}

void TcpPeer::TakeBurstLocked(Connection* conn, std::vector<TcpSlice>& burst) {
  uint64_t bytes = 0;
  do {
    const TcpSlice& next = queue_.front();
    if (!burst.empty() && (next.length > kBurstSliceBytes || burst.size() >= kBurstSlices ||
                           bytes + next.length > kBurstBytes ||
                           inflight_bytes_ + next.length > options_.max_inflight_bytes)) {
      break;
    }
    bytes += next.length;
    CountInFlightLocked(conn, next.length);
    burst.push_back(next);
    queue_.pop_front();
  } while (!queue_.empty() && burst.front().length <= kBurstSliceBytes);
}

void TcpPeer::Abort(Connection* conn, const absl::Status& reason) {
  int fd = -1;
  {
    yuebing::MutexLock lock(&mu_);
    if (!conn->broken.exchange(true)) {
      YB_LOG_DEBUG("connection to {} aborted: {}", options_.segment_name, reason.ToString());
    }
    fd = conn->fd;
  }
  if (fd >= 0) shutdown(fd, SHUT_RDWR);  // a reader in recv returns
  // A receiver waiting for a reply to read re-evaluates its condition when fifo_mu is released.
  yuebing::MutexLock wake_receiver(&conn->fifo_mu);
}

bool TcpPeer::SenderMayProceed(Connection* conn) {
  if (stopping_ || conn->broken) return true;
  if (queue_.empty()) return false;
  if (inflight_bytes_ != 0 &&
      inflight_bytes_ + queue_.front().length > options_.max_inflight_bytes) {
    return false;
  }
  if (queue_.front().length <= kBurstSliceBytes) return true;
  // A large slice goes to a connection with the least in flight: a read's request takes moments
  // to send, and the sender that sent one would otherwise take the next before the others woke,
  // leaving them idle while its connection carries most of the replies.
  for (const auto& other : connections_) {
    if (other.get() != conn && other->state == Connection::State::kReady && !other->broken &&
        other->inflight_bytes < conn->inflight_bytes) {
      return false;
    }
  }
  return true;
}

void TcpPeer::SenderLoop(Connection* conn) {
  absl::StatusOr<int> fd = ConnectTcp(options_.host, options_.port, options_.connect_timeout);
  absl::Status status = fd.status();
  if (fd.ok()) {
    const AuthDeadline handshake_deadline =
        std::chrono::steady_clock::now() + options_.connect_timeout;
    if (!options_.cluster_secret.empty()) {
      status = AuthenticateToTarget(*fd, options_.cluster_secret, options_.segment_name,
                                    handshake_deadline);
    }
    if (status.ok()) {
      status = SendHello(*fd, options_.segment_name, options_.epoch, handshake_deadline);
    }
    if (!status.ok()) CloseFd(*fd);
  }
  {
    yuebing::MutexLock lock(&mu_);
    --connecting_;
    if (status.ok() && stopping_) {
      CloseFd(*fd);
      status = absl::FailedPreconditionError("transfer engine is shutting down");
    }
    if (!status.ok()) {
      if (status.code() == absl::StatusCode::kFailedPrecondition && !stopping_) stale_ = true;
      conn->state = Connection::State::kDead;
      conn->sender_done = true;
      bool others_alive = false;
      for (const auto& other : connections_) {
        others_alive |= other.get() != conn && other->state != Connection::State::kDead;
      }
      if (!others_alive) {
        FailQueuedLocked(absl::Status(
            status.code() == absl::StatusCode::kFailedPrecondition ? status.code()
                                                                   : absl::StatusCode::kUnavailable,
            absl::StrCat("cannot reach segment ", options_.segment_name, ": ", status.message())));
      }
      return;
    }
    conn->fd = *fd;
    {
      yuebing::MutexLock reader_lock(&conn->reader_mu);
      conn->reader = std::make_unique<BufferedSocketReader>(*fd);
    }
    conn->state = Connection::State::kReady;
    conn->receiver_done = false;
    conn->receiver = std::thread(&TcpPeer::ReceiverLoop, this, conn);
  }
  std::vector<TcpSlice> burst;
  burst.reserve(kBurstSlices);
  while (true) {
    burst.clear();
    {
      yuebing::MutexLock lock(&mu_);
      struct Args {
        TcpPeer* peer;
        Connection* conn;
      } args{this, conn};
      mu_.Await(yuebing::Condition(
          +[](Args* a)
               ABSL_NO_THREAD_SAFETY_ANALYSIS { return a->peer->SenderMayProceed(a->conn); },
          &args));
      if (stopping_ || conn->broken) break;
      TakeBurstLocked(conn, burst);
    }
    absl::Status send_status;
    bool requeue = false;
    {
      yuebing::MutexLock send_lock(&conn->send_mu);
      bool idle = false;
      {
        yuebing::MutexLock fifo_lock(&conn->fifo_mu);
        idle = conn->fifo.empty();
      }
      if (conn->broken) {
        requeue = true;
      } else if (idle && !SocketStillIdle(conn->fd)) {
        // Closed by the target while nobody watched: the burst goes to another connection.
        requeue = true;
        send_status = absl::UnavailableError("closed by the target while idle");
      } else {
        send_status = SendSlices(conn, burst.data(), burst.size());
      }
    }
    if (requeue) {
      {
        yuebing::MutexLock lock(&mu_);
        for (auto it = burst.rbegin(); it != burst.rend(); ++it) {
          UncountInFlightLocked(conn, it->length);
          queue_.push_front(*it);
        }
      }
      if (!send_status.ok()) Abort(conn, send_status);
      break;
    }
    if (!send_status.ok()) {
      Abort(conn, send_status);
      break;
    }
  }
  yuebing::MutexLock lock(&mu_);
  conn->sender_done = true;
}

std::optional<TcpSlice> TcpPeer::OldestInFlight(Connection* conn) {
  yuebing::MutexLock lock(&conn->fifo_mu);
  if (conn->fifo.empty()) return std::nullopt;
  return conn->fifo.front();
}

// The receiver reads the replies due to it. While the connection is idle it waits in one of two
// ways, after the way the last request was sent. After a request whose sender read the reply
// itself, it sleeps until a request it must answer for is sent, so that the next such sender's
// reply wakes nobody (an idle connection is then not watched; senders check it before use).
// After any other request, it watches the socket, so that the next batch's first reply wakes it
// once rather than the send waking it and the reply again.
void TcpPeer::ReceiverLoop(Connection* conn) {
  struct Args {
    Connection* conn;
  } args{conn};
  const yuebing::Condition reply_due(
      +[](Args* a) ABSL_NO_THREAD_SAFETY_ANALYSIS {
        return a->conn->broken || (!a->conn->fifo.empty() && !a->conn->caller_reading);
      },
      &args);
  absl::Status reason;
  while (!conn->broken) {
    bool watch = false;
    {
      yuebing::MutexLock lock(&conn->fifo_mu);
      watch = conn->fifo.empty() && !conn->caller_reading && !conn->last_claimed;
      if (!watch) conn->fifo_mu.Await(reply_due);
    }
    if (conn->broken) break;
    if (!watch) {
      yuebing::MutexLock lock(&conn->reader_mu);
      reason = ReadReply(conn, /*read_ahead=*/true);
      if (!reason.ok()) break;
      continue;
    }
    // Without holding the reader, so that a sender may still claim its reply. A reply to a
    // request sent meanwhile, the target closing the connection, or Abort's shutdown ends it.
    pollfd readable{conn->fd, POLLIN, 0};
    if (poll(&readable, 1, -1) < 0 && errno != EINTR) {
      reason = ErrnoToStatus("poll");
      break;
    }
    yuebing::MutexLock lock(&conn->fifo_mu);  // nothing is sent or claimed meanwhile
    if (conn->caller_reading || !conn->fifo.empty()) continue;
    char byte;
    const ssize_t got = recv(conn->fd, &byte, 1, MSG_PEEK | MSG_DONTWAIT);
    if (got < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) continue;
    reason = got == 0  ? absl::UnavailableError("connection closed by the target")
             : got > 0 ? absl::InternalError("bytes from the target with no request in flight")
                       : ErrnoToStatus("recv");
    break;
  }
  if (reason.ok()) reason = absl::UnavailableError("connection aborted");
  CleanUpConnection(conn, reason);
}

absl::Status TcpPeer::ReadReply(Connection* conn, bool read_ahead) {
  BufferedSocketReader& reader = *conn->reader;
  // Only the holder of reader_mu pops the fifo: the front seen now stays the front.
  const std::optional<TcpSlice> oldest = OldestInFlight(conn);
  if (!oldest.has_value()) return absl::InternalError("no request in flight to read a reply for");
  const TcpSlice& slice = *oldest;
  // Read ahead when the reply is small: the replies behind it may be there too. A large payload
  // is better received straight into its memory.
  const bool small_reply =
      read_ahead && (slice.opcode == OpCode::kWrite || slice.length <= kReadAheadPayloadBytes);
  uint8_t bytes[kFrameHeaderBytes];
  YB_RETURN_IF_ERROR(reader.Read(bytes, kFrameHeaderBytes, /*read_ahead=*/small_reply));
  absl::StatusOr<FrameHeader> header = DecodeFrameHeader(bytes);
  if (!header.ok()) {
    return absl::InternalError(absl::StrCat("bad reply frame: ", header.status().message()));
  }
  FrameType expected =
      slice.opcode == OpCode::kWrite ? FrameType::kWriteReply : FrameType::kReadReply;
  bool payload_follows = header->type == FrameType::kReadReply && header->status == WireStatus::kOk;
  if (header->type != expected || header->request_id != slice.request_id ||
      (payload_follows && header->length != slice.length)) {
    return absl::InternalError("reply does not match the oldest request");
  }
  if (payload_follows) {
    YB_RETURN_IF_ERROR(
        reader.Read(slice.local, slice.length,
                    /*read_ahead=*/read_ahead && slice.length <= kReadAheadPayloadBytes));
  }
  // The target replies to a write only after reading its payload, but the sending thread may
  // not have returned from sendmsg yet: wait for it (moments; it has nothing left to send).
  // Bounded (~10 s, far beyond any sendmsg that has already handed over its last byte).
  for (int spins = 0; conn->sent_through.load(std::memory_order_acquire) < slice.request_id;
       ++spins) {
    if (spins >= 100000) {
      YB_LOG_ERROR("connection to {}: the send of request {} did not return", options_.segment_name,
                   slice.request_id);
      break;
    }
    if (spins < 1000) {
      std::this_thread::yield();
    } else {
      std::this_thread::sleep_for(std::chrono::microseconds(100));
    }
  }
  {
    yuebing::MutexLock lock(&conn->fifo_mu);
    conn->fifo.pop_front();
  }
  slice.task->FinishSlice(slice.length, ReplyToStatus(header->status, options_.segment_name));
  yuebing::MutexLock lock(&mu_);
  UncountInFlightLocked(conn, slice.length);
  return absl::OkStatus();
}

void TcpPeer::CleanUpConnection(Connection* conn, const absl::Status& reason) {
  Abort(conn, reason);
  { yuebing::MutexLock wait_for_sender(&conn->send_mu); }  // no send is in progress after this
  std::deque<TcpSlice> orphans;
  {
    // A thread reading its own reply lets go soon: the socket is shut down.
    yuebing::MutexLock wait_for_reader(&conn->reader_mu);
    yuebing::MutexLock lock(&conn->fifo_mu);
    orphans.swap(conn->fifo);
  }
  SteadyTime now = Clock::Real().Now();
  uint64_t orphan_bytes = 0;
  for (TcpSlice& slice : orphans) {
    orphan_bytes += slice.length;
    slice.task->FinishSlice(
        0, now >= slice.deadline
               ? absl::DeadlineExceededError(
                     absl::StrCat("request to ", options_.segment_name, " passed its deadline"))
               : absl::UnavailableError(absl::StrCat("connection to ", options_.segment_name,
                                                     " lost: ", reason.message())));
  }
  yuebing::MutexLock lock(&mu_);
  UncountInFlightLocked(conn, orphan_bytes);
  conn->state = Connection::State::kDead;
  conn->receiver_done = true;
  if (!stopping_ && !queue_.empty()) EnsureConnectionsLocked();
}

void TcpPeer::EnsureConnectionsLocked() {
  size_t alive = 0;
  for (const auto& conn : connections_) alive += conn->state != Connection::State::kDead;
  // A connection that is still connecting counts as alive; more are started only up to the pool.
  while (alive < options_.connections && connections_.size() < 2 * options_.connections) {
    auto conn = std::make_shared<Connection>();
    ++connecting_;
    conn->sender = std::thread(&TcpPeer::SenderLoop, this, conn.get());
    connections_.push_back(std::move(conn));
    ++alive;
  }
}

void TcpPeer::ReapDeadConnectionsLocked() {
  // Once stopping, Shutdown joins every connection's threads; joining here too would join one
  // thread twice (Shutdown joins outside the lock).
  if (stopping_) return;
  for (auto it = connections_.begin(); it != connections_.end();) {
    Connection* conn = it->get();
    if (conn->state == Connection::State::kDead && conn->sender_done && conn->receiver_done) {
      if (conn->sender.joinable()) conn->sender.join();
      if (conn->receiver.joinable()) conn->receiver.join();
      CloseFd(conn->fd);
      conn->fd = -1;
      it = connections_.erase(it);
    } else {
      ++it;
    }
  }
}

void TcpPeer::FailQueuedLocked(const absl::Status& reason) {
  while (!queue_.empty()) {
    TcpSlice slice = queue_.front();
    queue_.pop_front();
    slice.task->FinishSlice(0, reason);
  }
}

void TcpPeer::ExpireDeadlines(SteadyTime now) {
  std::vector<std::shared_ptr<Connection>> overdue;
  {
    yuebing::MutexLock lock(&mu_);
    while (!queue_.empty() && queue_.front().deadline <= now) {
      TcpSlice slice = queue_.front();
      queue_.pop_front();
      slice.task->FinishSlice(
          0, absl::DeadlineExceededError(absl::StrCat("request to ", options_.segment_name,
                                                      " passed its deadline before being sent")));
    }
    for (const auto& conn : connections_) {
      if (conn->state != Connection::State::kReady || conn->broken) continue;
      yuebing::MutexLock fifo_lock(&conn->fifo_mu);
      if (!conn->fifo.empty() && conn->fifo.front().deadline <= now) overdue.push_back(conn);
    }
    ReapDeadConnectionsLocked();
  }
  for (const auto& conn : overdue) {
    Abort(conn.get(), absl::DeadlineExceededError("request deadline passed while in flight"));
  }
}

void TcpPeer::Shutdown() {
  std::vector<std::shared_ptr<Connection>> connections;
  {
    yuebing::MutexLock lock(&mu_);
    stopping_ = true;
    FailQueuedLocked(absl::FailedPreconditionError("transfer engine is shutting down"));
    connections = connections_;
  }
  for (const auto& conn : connections) {
    Abort(conn.get(), absl::CancelledError("shutting down"));
  }
  for (const auto& conn : connections) {
    if (conn->sender.joinable()) conn->sender.join();
    if (conn->receiver.joinable()) conn->receiver.join();
  }
  yuebing::MutexLock lock(&mu_);
  for (const auto& conn : connections_) {
    CloseFd(conn->fd);
    conn->fd = -1;
  }
  connections_.clear();
}

}  // namespace yuebing::transport
