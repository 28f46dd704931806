#include "transport/etcd_metadata_store.h"

#include <atomic>
#include <nlohmann/json.hpp>
#include <utility>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "transport/http_metadata_store.h"
#include "yuebing/common/status.h"

namespace yuebing::transport {
namespace {

using std::chrono::milliseconds;
using Json = nlohmann::json;

constexpr uint16_t kDefaultEtcdPort = 2379;
constexpr size_t kMaxEndpoints = 64;
// etcd's own request limit is far below this; a larger reply is not from a sane etcd.
constexpr size_t kMaxReplyBytes = 64u << 20;

// The message of a gateway error reply ({"error": ..., "message": ..., "code": ...}), or the body.
std::string GatewayMessage(const std::string& body) {
  Json reply = Json::parse(body, nullptr, /*allow_exceptions=*/false);
  if (reply.is_object()) {
    for (const char* field : {"message", "error"}) {
      auto it = reply.find(field);
      if (it != reply.end() && it->is_string()) return it->get<std::string>();
    }
  }
  return body;
}

absl::StatusOr<std::string> DecodeBase64Field(const Json& object, const char* field) {
  auto it = object.find(field);
  if (it == object.end()) return std::string();  // proto3 JSON omits empty fields
  std::string decoded;
  if (!it->is_string() || !absl::Base64Unescape(it->get<std::string>(), &decoded)) {
    return absl::UnavailableError(absl::StrCat("etcd reply has a malformed '", field, "' field"));
  }
  return decoded;
}

class EtcdMetadataStore final : public MetadataStore {
 public:
  EtcdMetadataStore(std::vector<HostPort> endpoints, milliseconds timeout)
      : endpoints_(std::move(endpoints)), timeout_(timeout) {}

  absl::Status Put(const std::string& key, const std::string& value) override {
    YB_RETURN_IF_ERROR(ValidateMetadataKey(key));
    Json request = {{"key", absl::Base64Escape(key)}, {"value", absl::Base64Escape(value)}};
    return Call("/v3/kv/put", request).status();
  }

  absl::StatusOr<std::string> Get(const std::string& key) override {
    YB_RETURN_IF_ERROR(ValidateMetadataKey(key));
    Json request = {{"key", absl::Base64Escape(key)}};
    YB_ASSIGN_OR_RETURN(Json reply, Call("/v3/kv/range", request));
    auto kvs = reply.find("kvs");
    if (kvs == reply.end() || !kvs->is_array() || kvs->empty()) {
      return absl::NotFoundError(absl::StrCat("etcd key not found: ", absl::CEscape(key)));
    }
    if (!kvs->front().is_object()) return absl::UnavailableError("etcd reply: malformed 'kvs'");
    return DecodeBase64Field(kvs->front(), "value");
  }

  absl::Status Delete(const std::string& key) override {
    YB_RETURN_IF_ERROR(ValidateMetadataKey(key));
    Json request = {{"key", absl::Base64Escape(key)}};
    return Call("/v3/kv/deleterange", request).status();
  }

  std::string Describe() const override {
    return absl::StrCat(
        "etcd://", absl::StrJoin(endpoints_, ",", [](std::string* out, const HostPort& endpoint) {
          out->append(endpoint.ToString());
        }));
  }

 private:
  // Posts `request` to `path`, trying endpoints in turn. Returns the parsed 200 reply, or the
  // error of the last try.
  absl::StatusOr<Json> Call(const char* path, const Json& request);
  absl::StatusOr<Json> CallOne(const HostPort& endpoint, const char* path, const std::string& body,
                               const CallDeadline& deadline, bool* try_next);

  const std::vector<HostPort> endpoints_;
  const milliseconds timeout_;
  std::atomic<size_t> preferred_{0};
};

absl::StatusOr<Json> EtcdMetadataStore::CallOne(const HostPort& endpoint, const char* path,
                                                const std::string& body,
                                                const CallDeadline& deadline, bool* try_next) {
  const std::string what = absl::StrCat("etcd POST http://", endpoint.ToString(), path);
  httplib::Request request;
  request.method = "POST";
  request.path = path;
  request.body = body;
  request.set_header("Content-Type", "application/json");
  int status = 0;
  std::string reply_body;
  bool reply_too_large = false;
  request.response_handler = [&status](const httplib::Response& response) {
    status = response.status;
    return true;
  };
  request.content_receiver = [&](const char* data, size_t size, uint64_t, uint64_t) {
    reply_too_large = reply_body.size() + size > kMaxReplyBytes;
    if (!reply_too_large) reply_body.append(data, size);
    return !reply_too_large;
  };
  auto result = NewDeadlineClient(endpoint, deadline)->send(request);
  *try_next = true;
  if (reply_too_large) {
    return absl::ResourceExhaustedError(
        absl::StrCat(what, ": reply larger than ", kMaxReplyBytes, " bytes"));
  }
  // The gateway ends error replies with an HTTP trailer the HTTP library cannot parse, which it
  // reports as a read error after the status line and the whole body have arrived.
  const bool trailer_only_failure =
      !result && result.error() == httplib::Error::Read && status != 0 && status != 200;
  if (!result && !trailer_only_failure) return TransportFailure(result.error(), deadline, what);
  if (status != 200) {
    // 404 means the endpoint is not an etcd v3 gateway; 5xx that it cannot serve now.
    if (status == 404 || status >= 500) {
      return absl::UnavailableError(
          absl::StrCat(what, ": HTTP ", status, ": ", GatewayMessage(reply_body)));
    }
    *try_next = false;
    return HttpStatusToStatus(status, GatewayMessage(reply_body), what);
  }
  Json reply = Json::parse(reply_body, nullptr, /*allow_exceptions=*/false);
  if (!reply.is_object()) return absl::UnavailableError(absl::StrCat(what, ": reply is not JSON"));
  *try_next = false;
  return reply;
}

absl::StatusOr<Json> EtcdMetadataStore::Call(const char* path, const Json& request) {
  const std::string body = request.dump();
  CallDeadline deadline(timeout_);
  const size_t first = preferred_.load(std::memory_order_relaxed);
  absl::Status last =
      absl::DeadlineExceededError(absl::StrCat("etcd call to ", Describe(), " had no time left"));
  for (size_t i = 0; i < endpoints_.size() && !deadline.Expired(); ++i) {
    const size_t index = (first + i) % endpoints_.size();
    bool try_next = false;
    absl::StatusOr<Json> reply = CallOne(endpoints_[index], path, body, deadline, &try_next);
    if (reply.ok()) {
      preferred_.store(index, std::memory_order_relaxed);
      return reply;
    }
    last = reply.status();
    if (!try_next) break;
  }
  if (deadline.Expired() && last.code() == absl::StatusCode::kUnavailable) {
    return absl::DeadlineExceededError(last.message());
  }
  return last;
}

}  // namespace

absl::StatusOr<std::unique_ptr<MetadataStore>> NewEtcdMetadataStore(absl::string_view endpoints,
                                                                    milliseconds timeout) {
  std::vector<HostPort> parsed;
  for (absl::string_view part : absl::StrSplit(endpoints, ',')) {
    part = absl::StripAsciiWhitespace(part);
    // Tolerate "etcd://http://host:port" and a trailing slash, as written in some configs.
    absl::ConsumePrefix(&part, "http://");
    absl::ConsumeSuffix(&part, "/");
    if (part.empty()) {
      return absl::InvalidArgumentError(absl::StrCat("empty etcd endpoint in \"", endpoints, "\""));
    }
    YB_ASSIGN_OR_RETURN(HostPort endpoint, ParseHostPort(part, kDefaultEtcdPort));
    parsed.push_back(std::move(endpoint));
  }
  if (parsed.size() > kMaxEndpoints) {
    return absl::InvalidArgumentError(absl::StrCat("more than ", kMaxEndpoints, " etcd endpoints"));
  }
  return std::unique_ptr<MetadataStore>(
      std::make_unique<EtcdMetadataStore>(std::move(parsed), timeout));
}

}  // namespace yuebing::transport
