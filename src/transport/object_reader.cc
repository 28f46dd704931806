#include "transport/object_reader.h"

#include <sys/socket.h>
#include <sys/time.h>

#include <algorithm>

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "transport/socket_util.h"
#include "transport/tcp_auth.h"
#include "transport/tcp_peer.h"
#include "transport/transfer_engine_impl.h"
#include "transport/wire_format.h"
#include "yuebing/common/check.h"
#include "yuebing/common/host_port.h"
#include "yuebing/common/status.h"

namespace yuebing::transport {
namespace {

using SteadyPoint = std::chrono::steady_clock::time_point;

std::chrono::milliseconds Left(SteadyPoint deadline) {
  auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
      deadline - std::chrono::steady_clock::now());
  return std::max(left, std::chrono::milliseconds(1));
}

// The error a non-OK READ_OBJECT reply stands for.
absl::Status ReplyError(const FrameHeader& reply, absl::string_view key, const std::string& segment,
                        uint64_t capacity) {
  const std::string what =
      absl::StrCat("object '", absl::CHexEscape(key.substr(0, 64)), "' at ", segment);
  switch (reply.status) {
    case WireStatus::kNotFound:
      return absl::NotFoundError(absl::StrCat("no ", what));
    case WireStatus::kTooSmall:
      return absl::OutOfRangeError(absl::StrCat(what, " has ", reply.addr,
                                                " bytes: more than the buffer (", capacity,
                                                " bytes) or the limit of one read"));
    case WireStatus::kNoObjectSource:
      return absl::UnimplementedError(
          absl::StrCat("segment ", segment, " serves no objects by key"));
    case WireStatus::kCorrupt:
      return absl::DataLossError(absl::StrCat(what, " failed its verification there"));
    default:
      return absl::InternalError(
          absl::StrCat("reading ", what, ": ", WireStatusText(reply.status)));
  }
}

// Receives `size` bytes into the pieces of `dest`, in order, by `deadline`.
absl::Status RecvInto(int fd, absl::Span<const ObjectBuffer> dest, uint64_t size,
                      SteadyPoint deadline) {
  for (const ObjectBuffer& piece : dest) {
    if (size == 0) break;
    const uint64_t length = std::min(piece.size, size);
    YB_RETURN_IF_ERROR(RecvAllUntil(fd, piece.data, length, deadline));
    size -= length;
  }
  YB_CHECK(size == 0, "an object is received only when it fits the destination");
  return absl::OkStatus();
}

// A socket error seen at or after `deadline` (the socket timed out) is the deadline's doing:
// kDeadlineExceeded naming `what`; any other status is returned as it is.
absl::Status AsDeadlineWhenLate(const absl::Status& status, absl::string_view what,
                                SteadyPoint deadline) {
  if (absl::IsUnavailable(status) && std::chrono::steady_clock::now() >= deadline) {
    return absl::DeadlineExceededError(absl::StrCat(what, " passed its deadline"));
  }
  return status;
}

// Opens a connection to `segment` and greets it (handshake when a secret is set, then HELLO).
absl::StatusOr<int> Connect(const std::string& segment, const HostPort& address,
                            const ObjectReadOptions& options, SteadyPoint deadline) {
  YB_ASSIGN_OR_RETURN(int fd, ConnectTcp(address.host, address.port,
                                         std::min(options.connect_timeout, Left(deadline))));
  absl::Status greeted = absl::OkStatus();
  if (!options.cluster_secret.empty()) {
    greeted = AuthenticateToTarget(fd, options.cluster_secret, segment, deadline);
  }
  if (greeted.ok()) greeted = SendHello(fd, segment, /*epoch=*/0, deadline);
  if (!greeted.ok()) {
    CloseFd(fd);
    return greeted;
  }
  return fd;
}

// One READ_OBJECT request and its reply on a greeted connection. `*in_sync` is set when the
// connection ended the exchange at a frame boundary (a reply read whole), so it can be reused.
absl::StatusOr<uint64_t> Exchange(int fd, const std::string& segment, absl::string_view key,
                                  absl::Span<const ObjectBuffer> dest, uint64_t capacity,
                                  SteadyPoint deadline, bool* in_sync) {
  *in_sync = false;
  // Sends are small (header and key) but must not outlive the deadline either.
  SetSendTimeout(fd, Left(deadline));
  FrameHeader request;
  request.type = FrameType::kReadObject;
  request.request_id = 1;
  request.addr = std::min(capacity, kMaxReadObjectBytes);
  request.length = key.size();
  uint8_t bytes[kFrameHeaderBytes];
  EncodeFrameHeader(request, bytes);
  iovec iov[2] = {{bytes, kFrameHeaderBytes}, {const_cast<char*>(key.data()), key.size()}};
  YB_RETURN_IF_ERROR(SendAll(fd, iov, 2));
  YB_RETURN_IF_ERROR(RecvAllUntil(fd, bytes, kFrameHeaderBytes, deadline));
  absl::StatusOr<FrameHeader> reply = DecodeFrameHeader(bytes);
  if (!reply.ok() || reply->type != FrameType::kReadObjectReply || reply->request_id != 1) {
    return absl::InternalError(absl::StrCat("bad READ_OBJECT reply from ", segment));
  }
  if (reply->status != WireStatus::kOk) {
    if (reply->length != 0) {
      return absl::InternalError(absl::StrCat("READ_OBJECT refusal with a payload from ", segment));
    }
    *in_sync = true;
    return ReplyError(*reply, key, segment, capacity);
  }
  if (reply->length != reply->addr || reply->length > request.addr) {
    return absl::InternalError(
        absl::StrCat("READ_OBJECT reply from ", segment, " does not fit what was asked"));
  }
  YB_RETURN_IF_ERROR(RecvInto(fd, dest, reply->length, deadline));
  *in_sync = true;
  return reply->length;
}

}  // namespace

ObjectReader::~ObjectReader() {
  yuebing::MutexLock lock(&mu_);
  for (auto& [segment, fds] : idle_) {
    for (int fd : fds) CloseFd(fd);
  }
}

size_t ObjectReader::IdleConnections() const {
  yuebing::MutexLock lock(&mu_);
  size_t count = 0;
  for (const auto& [segment, fds] : idle_) count += fds.size();
  return count;
}

int ObjectReader::TakeIdle(const std::string& segment) {
  yuebing::MutexLock lock(&mu_);
  auto it = idle_.find(segment);
  if (it == idle_.end() || it->second.empty()) return -1;
  const int fd = it->second.back();
  it->second.pop_back();
  return fd;
}

void ObjectReader::ReturnIdle(const std::string& segment, int fd) {
  {
    yuebing::MutexLock lock(&mu_);
    std::vector<int>& fds = idle_[segment];
    if (fds.size() < kMaxIdleObjectConnections) {
      fds.push_back(fd);
      return;
    }
  }
  CloseFd(fd);
}

absl::StatusOr<uint64_t> ObjectReader::Read(const std::string& segment_name, absl::string_view key,
                                            absl::Span<const ObjectBuffer> dest,
                                            SteadyPoint deadline) {
  if (key.empty() || key.size() > kMaxObjectKeyBytes) {
    return absl::InvalidArgumentError(
        absl::StrCat("object keys are 1..", kMaxObjectKeyBytes, " bytes, got ", key.size()));
  }
  uint64_t capacity = 0;
  for (const ObjectBuffer& piece : dest) {
    if (piece.data == nullptr && piece.size > 0) {
      return absl::InvalidArgumentError("null destination piece");
    }
    capacity += piece.size;
  }
  absl::StatusOr<HostPort> address = ParseHostPort(segment_name);
  if (!address.ok()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "segment names are host:port, got '", segment_name, "': ", address.status().message()));
  }
  absl::StatusOr<uint64_t> size = absl::UnavailableError("not tried");
  // First a pooled connection (if any), then, if that one had been closed by the peer, a fresh
  // one. A fresh connection is tried once.
  for (int pooled = TakeIdle(segment_name);; pooled = -1) {
    int fd = pooled;
    if (fd < 0) {
      absl::StatusOr<int> fresh = Connect(segment_name, *address, options_, deadline);
      if (!fresh.ok()) {
        size = fresh.status();
        break;
      }
      fd = *fresh;
    }
    bool in_sync = false;
    size = Exchange(fd, segment_name, key, dest, capacity, deadline, &in_sync);
    if (in_sync) {
      ReturnIdle(segment_name, fd);
      break;
    }
    CloseFd(fd);
    const bool retry = pooled >= 0 && absl::IsUnavailable(size.status()) &&
                       std::chrono::steady_clock::now() < deadline;
    if (!retry) break;
  }
  if (!size.ok()) {
    return AsDeadlineWhenLate(size.status(), absl::StrCat("reading an object from ", segment_name),
                              deadline);
  }
  return size;
}

absl::Status ObjectReader::Probe(const std::string& segment_name, SteadyPoint deadline) {
  absl::StatusOr<HostPort> address = ParseHostPort(segment_name);
  if (!address.ok()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "segment names are host:port, got '", segment_name, "': ", address.status().message()));
  }
  absl::StatusOr<int> fd = Connect(segment_name, *address, options_, deadline);
  if (!fd.ok())
    return AsDeadlineWhenLate(fd.status(), absl::StrCat("probing ", segment_name), deadline);
  ReturnIdle(segment_name, *fd);
  return absl::OkStatus();
}

absl::Status TransferEngineImpl::Probe(const std::string& segment_name, SteadyPoint deadline) {
  return object_reader_->Probe(segment_name, std::min(deadline, std::chrono::steady_clock::now() +
                                                                    options_.request_timeout));
}

absl::StatusOr<uint64_t> TransferEngineImpl::ReadObject(const std::string& segment_name,
                                                        absl::string_view key,
                                                        absl::Span<const ObjectBuffer> dest,
                                                        SteadyPoint deadline) {
  return object_reader_->Read(
      segment_name, key, dest,
      std::min(deadline, std::chrono::steady_clock::now() + options_.request_timeout));
}

}  // namespace yuebing::transport
