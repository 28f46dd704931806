// The HTTP metadata backend ("http://host:port/path") and the HTTP plumbing it shares with the
// etcd backend: endpoint parsing, deadline-bounded clients and mapping of transport failures.
// Private to src/transport; callers use CreateMetadataStore.
#pragma once

#include <httplib.h>

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "transport/metadata_store.h"

namespace yuebing::transport {

struct HostPort {
  std::string host;  // a name, an IPv4 address or a bare IPv6 address (no brackets)
  uint16_t port = 0;

  std::string ToString() const;  // "host:port", "[v6]:port"
};

// Parses "host", "host:port", "[v6]" or "[v6]:port"; `default_port` when none is given.
// Errors: kInvalidArgument (empty host, bad characters, port not in 1..65535).
absl::StatusOr<HostPort> ParseHostPort(absl::string_view text, uint16_t default_port);

// Checks a metadata key: non-empty and at most HttpMetadataServer::kMaxKeyBytes bytes.
// Errors: kInvalidArgument.
absl::Status ValidateMetadataKey(absl::string_view key);

// A point in time after which a call gives up.
class CallDeadline {
 public:
  explicit CallDeadline(std::chrono::milliseconds budget)
      : start_(std::chrono::steady_clock::now()), at_(start_ + budget) {}
  // Time left, at least zero.
  std::chrono::milliseconds Remaining() const;
  bool Expired() const { return Remaining().count() <= 0; }
  std::chrono::milliseconds Elapsed() const;

 private:
  std::chrono::steady_clock::time_point start_;
  std::chrono::steady_clock::time_point at_;
};

// A client for one request to `endpoint`; connect, send and each receive are bounded by the
// time left before `deadline`. URL encoding is off: paths must be encoded by the caller.
std::unique_ptr<httplib::Client> NewDeadlineClient(const HostPort& endpoint,
                                                   const CallDeadline& deadline);

// The Status for a request that got no HTTP response: kDeadlineExceeded when the deadline ran
// out (or the library reported a timeout), else kUnavailable. The message names `what`.
absl::Status TransportFailure(httplib::Error error, const CallDeadline& deadline,
                              absl::string_view what);

// The Status for an HTTP error status: 400/413/414 -> kInvalidArgument, 404 -> kNotFound,
// 429/507 -> kResourceExhausted, 504 -> kDeadlineExceeded, other 5xx -> kUnavailable,
// anything else -> kInternal. The message names `what` and quotes the start of `body`.
absl::Status HttpStatusToStatus(int http_status, absl::string_view body, absl::string_view what);

// Percent-encodes everything but RFC 3986 unreserved characters, for a query value.
std::string PercentEncode(absl::string_view text);

// Creates the store for `address`, the part of "http://host[:port]/path" after "http://".
// The path defaults to "/metadata". Errors: kInvalidArgument (malformed address).
absl::StatusOr<std::unique_ptr<MetadataStore>> NewHttpMetadataStore(
    absl::string_view address, std::chrono::milliseconds timeout);

}  // namespace yuebing::transport
