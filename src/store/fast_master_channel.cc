#include "store/fast_master_channel.h"

#include <google/protobuf/message_lite.h>

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "transport/socket_util.h"
#include "transport/tcp_auth.h"

namespace yuebing::store {
namespace {

using Clock = std::chrono::steady_clock;

constexpr size_t kMaxIdleConnections = 64;
// Connecting takes well under a millisecond on a LAN; a connect that waits longer is most likely
// dropped by a firewall, and each try holds its call this long before it goes by gRPC.
constexpr std::chrono::milliseconds kMaxConnectWait{250};
constexpr std::chrono::milliseconds kLookupRetry{1000};         // after a failed Describe
constexpr std::chrono::milliseconds kNoFastPathRecheck{30000};  // after "no fast path"
// Back-off after a refused connect (the master moved or went away) and after a connect that
// timed out (the port is filtered: tried rarely).
constexpr std::chrono::milliseconds kMinBackoff{100};
constexpr std::chrono::milliseconds kMaxBackoff{60000};
constexpr std::chrono::milliseconds kMinFilteredBackoff{10000};
constexpr std::chrono::milliseconds kMaxFilteredBackoff{600000};

}  // namespace

std::chrono::microseconds MasterReplySpinFromEnvironment() {
  return transport::ReplySpinFromEnvironment(kMasterReplySpinEnv, kDefaultMasterReplySpin);
}

FastMasterChannel::FastMasterChannel(std::string host, PortLookup lookup,
                                     std::chrono::microseconds reply_spin)
    : host_(std::move(host)), lookup_(std::move(lookup)), reply_spin_(reply_spin) {}

FastMasterChannel::~FastMasterChannel() {
  yuebing::MutexLock lock(&mu_);
  for (int fd : idle_) transport::CloseFd(fd);
}

uint64_t FastMasterChannel::calls() const {
  yuebing::MutexLock lock(&mu_);
  return calls_;
}

bool FastMasterChannel::EnsurePort(Deadline deadline) {
  {
    yuebing::MutexLock lock(&mu_);
    if (port_ != 0) return true;
    if (looking_up_ || Clock::now() < next_lookup_) return false;
    looking_up_ = true;
  }
  absl::StatusOr<uint16_t> port = lookup_(deadline);
  yuebing::MutexLock lock(&mu_);
  looking_up_ = false;
  if (!port.ok() || *port == 0) {
    next_lookup_ = Clock::now() + (port.ok() ? kNoFastPathRecheck : kLookupRetry);
    return false;
  }
  port_ = *port;
  return true;
}

int FastMasterChannel::Acquire(Deadline deadline) {
  if (!EnsurePort(deadline)) return -1;
  uint16_t port = 0;
  {
    yuebing::MutexLock lock(&mu_);
    while (!idle_.empty()) {
      const int fd = idle_.back();
      idle_.pop_back();
      if (transport::SocketStillIdle(fd)) return fd;  // the master sent nothing, not even EOF
      transport::CloseFd(fd);                         // closed by the master (restart, shutdown)
    }
    port = port_;
  }
  const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
  if (port == 0 || left.count() <= 0) return -1;
  absl::StatusOr<int> fd = transport::ConnectTcp(host_, port, std::min(left, kMaxConnectWait));
  yuebing::MutexLock lock(&mu_);
  if (!fd.ok()) {
    // The master may have moved (restarted on another port): ask again after a back-off.
    if (port_ == port) port_ = 0;
    backoff_ = absl::IsDeadlineExceeded(fd.status())
                   ? std::clamp(backoff_ * 2, kMinFilteredBackoff, kMaxFilteredBackoff)
                   : std::clamp(backoff_ * 2, kMinBackoff, kMaxBackoff);
    next_lookup_ = Clock::now() + backoff_;
    return -1;
  }
  backoff_ = std::chrono::milliseconds(0);
  return *fd;
}

void FastMasterChannel::Release(int fd, bool answered) {
  yuebing::MutexLock lock(&mu_);
  if (answered) ++calls_;
  if (idle_.size() < kMaxIdleConnections) {
    idle_.push_back(fd);
  } else {
    transport::CloseFd(fd);
  }
}

absl::StatusOr<bool> FastMasterChannel::Call(rpc::FastMethod method,
                                             const google::protobuf::MessageLite& request,
                                             google::protobuf::MessageLite* reply,
                                             Deadline deadline) {
  const size_t size = request.ByteSizeLong();
  if (size > rpc::kFastMaxPayloadBytes) return false;  // gRPC reports it
  const int fd = Acquire(deadline);
  if (fd < 0) return false;
  const auto method_id = static_cast<uint8_t>(method);
  std::string frame(rpc::kFastHeaderBytes + size, '\0');
  auto* bytes = reinterpret_cast<uint8_t*>(frame.data());
  rpc::EncodeFastHeader({method_id, rpc::FastStatus::kOk, static_cast<uint32_t>(size)}, bytes);
  request.SerializeWithCachedSizesToArray(bytes + rpc::kFastHeaderBytes);

  auto fail = [&](const absl::Status& status) {
    transport::CloseFd(fd);  // the stream's state is unknown
    return absl::Status(status.code(),
                        absl::StrCat("fast path to ", host_, ": ", status.message()));
  };
  transport::SetSendTimeout(
      fd, std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()));
  if (absl::Status sent = transport::SendAll(fd, frame.data(), frame.size()); !sent.ok()) {
    return fail(sent);
  }
  uint8_t head[rpc::kFastHeaderBytes];
  // A journal long poll is answered when there is news, often seconds later: polling for it would
  // burn the CPU and, as a miss, stop the polling of the calls that are answered at once.
  if (method != rpc::FastMethod::kPullJournal) reply_spin_.Wait(fd);
  if (absl::Status got = transport::RecvAllUntil(fd, head, sizeof(head), deadline); !got.ok()) {
    return fail(got);
  }
  const std::optional<rpc::FastHeader> header = rpc::DecodeFastHeader(head);
  if (!header.has_value() || header->method != method_id) {
    return fail(absl::InternalError("malformed reply header"));
  }
  if (header->status != rpc::FastStatus::kOk) {
    if (header->length != 0) return fail(absl::InternalError("refusal with a payload"));
    Release(fd, /*answered=*/false);
    if (header->status == rpc::FastStatus::kReplyTooLarge) {
      return absl::ResourceExhaustedError(absl::StrCat("fast path to ", host_,
                                                       ": the call ran but its reply is over ",
                                                       rpc::kFastMaxPayloadBytes, " bytes"));
    }
    return false;  // refused unprocessed: the call goes by gRPC
  }
  std::string payload(header->length, '\0');
  if (absl::Status got = transport::RecvAllUntil(fd, payload.data(), payload.size(), deadline);
      !got.ok()) {
    return fail(got);
  }
  if (!reply->ParseFromString(payload)) return fail(absl::InternalError("unparsable reply"));
  Release(fd, /*answered=*/true);
  return true;
}

}  // namespace yuebing::store
