#include "transport/http_metadata_store.h"

#include <httplib.h>

#include <algorithm>
#include <cstdint>
#include <string>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/strip.h"
#include "yuebing/common/host_port.h"
#include "yuebing/common/http_metadata_server.h"
#include "yuebing/common/status.h"

namespace yuebing::transport {
namespace {

using std::chrono::milliseconds;

constexpr uint16_t kDefaultHttpPort = 80;
constexpr size_t kMaxQuotedBodyBytes = 200;
// A failure this close to the deadline is counted as having run out of time.
constexpr milliseconds kDeadlineSlack(20);

// A point in time after which a call gives up.
class CallDeadline {
 public:
  explicit CallDeadline(milliseconds budget)
      : start_(std::chrono::steady_clock::now()), at_(start_ + budget) {}
  // Time left, at least zero.
  milliseconds Remaining() const;
  bool Expired() const { return Remaining().count() <= 0; }
  milliseconds Elapsed() const;

 private:
  std::chrono::steady_clock::time_point start_;
  std::chrono::steady_clock::time_point at_;
};

milliseconds CallDeadline::Remaining() const {
  const auto left = at_ - std::chrono::steady_clock::now();
  return std::max(milliseconds(0), std::chrono::duration_cast<milliseconds>(left));
}

milliseconds CallDeadline::Elapsed() const {
  return std::chrono::duration_cast<milliseconds>(std::chrono::steady_clock::now() - start_);
}

// A client for one request to `endpoint`; connect, send and each receive are bounded by the
// time left before `deadline`. URL encoding is off: paths must be encoded by the caller.
std::unique_ptr<httplib::Client> NewDeadlineClient(const HostPort& endpoint,
                                                   const CallDeadline& deadline) {
  auto client = std::make_unique<httplib::Client>(endpoint.host, endpoint.port);
  const milliseconds budget = std::max(milliseconds(1), deadline.Remaining());
  client->set_connection_timeout(budget);
  client->set_read_timeout(budget);
  client->set_tcp_nodelay(true);
  client->set_write_timeout(budget);
  client->set_url_encode(false);
  client->set_keep_alive(false);
  return client;
}

// The Status for a request that got no HTTP response: kDeadlineExceeded when the deadline ran
// out (or the library reported a timeout), else kUnavailable. The message names `what`.
absl::Status TransportFailure(httplib::Error error, const CallDeadline& deadline,
                              absl::string_view what) {
  const std::string message = absl::StrCat(what, ": ", httplib::to_string(error), " after ",
                                           deadline.Elapsed().count(), " ms");
  if (error == httplib::Error::ConnectionTimeout || error == httplib::Error::Canceled ||
      deadline.Remaining() <= kDeadlineSlack) {
    return absl::DeadlineExceededError(message);
  }
  return absl::UnavailableError(message);
}

// The Status for an HTTP error status: 400/413/414 -> kInvalidArgument, 404 -> kNotFound,
// 429/507 -> kResourceExhausted, 504 -> kDeadlineExceeded, other 5xx -> kUnavailable,
// anything else -> kInternal. The message names `what` and quotes the start of `body`.
absl::Status HttpStatusToStatus(int http_status, absl::string_view body, absl::string_view what) {
  const std::string message =
      absl::StrCat(what, ": HTTP ", http_status, ": ",
                   absl::CEscape(absl::StripAsciiWhitespace(body.substr(0, kMaxQuotedBodyBytes))));
  switch (http_status) {
    case 400:
    case 413:
    case 414:
      return absl::InvalidArgumentError(message);
    case 404:
      return absl::NotFoundError(message);
    case 429:
    case 507:
      return absl::ResourceExhaustedError(message);
    case 504:
      return absl::DeadlineExceededError(message);
    default:
      if (http_status >= 500 && http_status <= 599) return absl::UnavailableError(message);
      return absl::InternalError(message);
  }
}

// Percent-encodes everything but RFC 3986 unreserved characters, for a query value.
std::string PercentEncode(absl::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (unsigned char c : text) {
    if (absl::ascii_isalnum(c) || c == '-' || c == '_' || c == '.' || c == '~') {
      out.push_back(static_cast<char>(c));
    } else {
      absl::StrAppendFormat(&out, "%%%02X", c);
    }
  }
  return out;
}

absl::Status CheckHttpPath(absl::string_view path) {
  if (path.empty() || path[0] != '/') {
    return absl::InvalidArgumentError(absl::StrCat("metadata path must start with '/': ", path));
  }
  for (char c : path) {
    if (c == '?' || c == '#' || absl::ascii_isspace(static_cast<unsigned char>(c)) ||
        absl::ascii_iscntrl(static_cast<unsigned char>(c))) {
      return absl::InvalidArgumentError(absl::StrCat("bad character in metadata path: ", path));
    }
  }
  return absl::OkStatus();
}

class HttpMetadataStore final : public MetadataStore {
 public:
  HttpMetadataStore(HostPort endpoint, std::string path, milliseconds timeout)
      : endpoint_(std::move(endpoint)), path_(std::move(path)), timeout_(timeout) {}

  absl::Status Put(const std::string& key, const std::string& value) override {
    YB_RETURN_IF_ERROR(ValidateMetadataKey(key));
    if (value.size() > HttpMetadataServer::kMaxValueBytes) {
      return absl::InvalidArgumentError(absl::StrCat("metadata value of ", value.size(),
                                                     " bytes exceeds the limit of ",
                                                     HttpMetadataServer::kMaxValueBytes));
    }
    CallDeadline deadline(timeout_);
    auto result = NewDeadlineClient(endpoint_, deadline)
                      ->Put(PathFor(key), value, "application/octet-stream");
    if (!result) return TransportFailure(result.error(), deadline, What("PUT", key));
    if (result->status == 200) return absl::OkStatus();
    return HttpStatusToStatus(result->status, result->body, What("PUT", key));
  }

  absl::StatusOr<std::string> Get(const std::string& key) override {
    YB_RETURN_IF_ERROR(ValidateMetadataKey(key));
    CallDeadline deadline(timeout_);
    // The progress callback stops a slowly trickling body at the deadline.
    auto result =
        NewDeadlineClient(endpoint_, deadline)->Get(PathFor(key), [&deadline](uint64_t, uint64_t) {
          return !deadline.Expired();
        });
    if (!result) return TransportFailure(result.error(), deadline, What("GET", key));
    if (result->status == 200) return std::move(result->body);
    return HttpStatusToStatus(result->status, result->body, What("GET", key));
  }

  absl::Status Delete(const std::string& key) override {
    YB_RETURN_IF_ERROR(ValidateMetadataKey(key));
    CallDeadline deadline(timeout_);
    auto result = NewDeadlineClient(endpoint_, deadline)->Delete(PathFor(key));
    if (!result) return TransportFailure(result.error(), deadline, What("DELETE", key));
    if (result->status == 200 || result->status == 404) return absl::OkStatus();
    return HttpStatusToStatus(result->status, result->body, What("DELETE", key));
  }

  std::string Describe() const override {
    return absl::StrCat("http://", endpoint_.ToString(), path_);
  }

 private:
  std::string PathFor(absl::string_view key) const {
    return absl::StrCat(path_, "?key=", PercentEncode(key));
  }
  std::string What(absl::string_view method, absl::string_view key) const {
    return absl::StrCat(method, " ", Describe(), " key \"", absl::CEscape(key.substr(0, 64)),
                        key.size() > 64 ? "...\"" : "\"");
  }

  const HostPort endpoint_;
  const std::string path_;
  const milliseconds timeout_;
};

}  // namespace

absl::StatusOr<std::unique_ptr<MetadataStore>> NewHttpMetadataStore(absl::string_view address,
                                                                    milliseconds timeout) {
  const size_t slash = address.find('/');
  std::string path = "/metadata";
  if (slash != absl::string_view::npos && slash + 1 < address.size()) {
    path = std::string(address.substr(slash));
  }
  YB_RETURN_IF_ERROR(CheckHttpPath(path));
  YB_ASSIGN_OR_RETURN(HostPort endpoint, ParseHostPort(address.substr(0, slash), kDefaultHttpPort));
  if (endpoint.port == 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("metadata server address '", address, "': the port must be 1..65535"));
  }
  return std::unique_ptr<MetadataStore>(
      std::make_unique<HttpMetadataStore>(std::move(endpoint), std::move(path), timeout));
}

}  // namespace yuebing::transport
