#include "transport/http_metadata_store.h"

#include <algorithm>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/escaping.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "yuebing/common/http_metadata_server.h"
#include "yuebing/common/status.h"

namespace yuebing::transport {
namespace {

using std::chrono::milliseconds;

constexpr size_t kMaxQuotedBodyBytes = 200;
// A failure this close to the deadline is counted as having run out of time.
constexpr milliseconds kDeadlineSlack(20);

bool IsHostChar(char c) {
  return absl::ascii_isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '-' || c == '_';
}

bool IsIpv6Char(char c) {
  return absl::ascii_isxdigit(static_cast<unsigned char>(c)) || c == ':' || c == '.' || c == '%';
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

std::string HostPort::ToString() const {
  if (host.find(':') != std::string::npos) return absl::StrCat("[", host, "]:", port);
  return absl::StrCat(host, ":", port);
}

absl::StatusOr<HostPort> ParseHostPort(absl::string_view text, uint16_t default_port) {
  auto bad = [text](absl::string_view why) {
    return absl::InvalidArgumentError(absl::StrCat("bad endpoint \"", text, "\": ", why));
  };
  HostPort out;
  absl::string_view port_text;
  if (!text.empty() && text[0] == '[') {
    const size_t close = text.find(']');
    if (close == absl::string_view::npos) return bad("missing ']'");
    out.host = std::string(text.substr(1, close - 1));
    absl::string_view rest = text.substr(close + 1);
    if (!rest.empty()) {
      if (rest[0] != ':') return bad("expected ':' after ']'");
      port_text = rest.substr(1);
      if (port_text.empty()) return bad("empty port");
    }
    if (out.host.empty() || !std::all_of(out.host.begin(), out.host.end(), IsIpv6Char)) {
      return bad("bad IPv6 address");
    }
  } else {
    const size_t colon = text.rfind(':');
    if (colon != absl::string_view::npos) {
      port_text = text.substr(colon + 1);
      if (port_text.empty()) return bad("empty port");
      text = text.substr(0, colon);
    }
    out.host = std::string(text);
    if (out.host.empty()) return bad("empty host");
    if (!std::all_of(out.host.begin(), out.host.end(), IsHostChar)) return bad("bad host");
  }
  out.port = default_port;
  if (!port_text.empty()) {
    uint32_t port = 0;
    if (!std::all_of(port_text.begin(), port_text.end(),
                     [](char c) { return absl::ascii_isdigit(static_cast<unsigned char>(c)); }) ||
        !absl::SimpleAtoi(port_text, &port) || port == 0 || port > 65535) {
      return bad("port must be 1..65535");
    }
    out.port = static_cast<uint16_t>(port);
  }
  return out;
}

absl::Status ValidateMetadataKey(absl::string_view key) {
  if (key.empty()) return absl::InvalidArgumentError("empty metadata key");
  if (key.size() > HttpMetadataServer::kMaxKeyBytes) {
    return absl::InvalidArgumentError(absl::StrCat("metadata key of ", key.size(),
                                                   " bytes exceeds the limit of ",
                                                   HttpMetadataServer::kMaxKeyBytes));
  }
  return absl::OkStatus();
}

milliseconds CallDeadline::Remaining() const {
  const auto left = at_ - std::chrono::steady_clock::now();
  return std::max(milliseconds(0), std::chrono::duration_cast<milliseconds>(left));
}

milliseconds CallDeadline::Elapsed() const {
  return std::chrono::duration_cast<milliseconds>(std::chrono::steady_clock::now() - start_);
}

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

absl::StatusOr<std::unique_ptr<MetadataStore>> NewHttpMetadataStore(absl::string_view address,
                                                                    milliseconds timeout) {
  const size_t slash = address.find('/');
  std::string path = "/metadata";
  if (slash != absl::string_view::npos && slash + 1 < address.size()) {
    path = std::string(address.substr(slash));
  }
  YB_RETURN_IF_ERROR(CheckHttpPath(path));
  YB_ASSIGN_OR_RETURN(HostPort endpoint, ParseHostPort(address.substr(0, slash), 80));
  return std::unique_ptr<MetadataStore>(
      std::make_unique<HttpMetadataStore>(std::move(endpoint), std::move(path), timeout));
}

}  // namespace yuebing::transport
