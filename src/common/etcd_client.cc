#include "common/etcd_client.h"

#include <httplib.h>

#include <algorithm>
#include <atomic>
#include <nlohmann/json.hpp>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/escaping.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "yuebing/common/status.h"

namespace yuebing {
namespace {

using Json = nlohmann::json;
using std::chrono::milliseconds;
using SteadyClock = std::chrono::steady_clock;

// An int64 field of a gateway reply (proto3 JSON writes int64 as a string and omits zeros).
int64_t IntField(const Json& object, const char* field) {
  auto it = object.find(field);
  if (it == object.end()) return 0;
  int64_t value = 0;
  if (it->is_string()) {
    if (!absl::SimpleAtoi(it->get<std::string>(), &value)) return 0;
    return value;
  }
  if (it->is_number_integer()) return it->get<int64_t>();
  return 0;
}

absl::StatusOr<EtcdClient::KeyValue> ParseKeyValue(const Json& kv) {
  if (!kv.is_object()) return absl::UnavailableError("etcd reply: malformed key-value");
  EtcdClient::KeyValue out;
  auto it = kv.find("value");
  if (it != kv.end()) {
    if (!it->is_string() || !absl::Base64Unescape(it->get<std::string>(), &out.value)) {
      return absl::UnavailableError("etcd reply: malformed 'value'");
    }
  }
  out.create_revision = IntField(kv, "create_revision");
  out.mod_revision = IntField(kv, "mod_revision");
  out.lease = IntField(kv, "lease");
  return out;
}

// The first key-value of a range reply, or nullopt.
absl::StatusOr<std::optional<EtcdClient::KeyValue>> FirstKeyValue(const Json& range) {
  auto kvs = range.find("kvs");
  if (kvs == range.end() || !kvs->is_array() || kvs->empty()) {
    return std::optional<EtcdClient::KeyValue>();
  }
  YB_ASSIGN_OR_RETURN(EtcdClient::KeyValue kv, ParseKeyValue(kvs->front()));
  return std::optional<EtcdClient::KeyValue>(std::move(kv));
}

// The message of a gateway error reply ({"error": ..., "message": ...}), or the body's start.
std::string GatewayMessage(const std::string& body) {
  Json reply = Json::parse(body, nullptr, /*allow_exceptions=*/false);
  if (reply.is_object()) {
    for (const char* field : {"message", "error"}) {
      auto it = reply.find(field);
      if (it != reply.end() && it->is_string()) return it->get<std::string>();
    }
  }
  return absl::CEscape(body.substr(0, 200));
}

// The Status for a gateway reply with HTTP status `status` (not 200); sets `*try_next` when
// another endpoint may do better (404: not an etcd v3 gateway; 5xx: cannot serve now).
absl::Status GatewayError(int status, const std::string& body, absl::string_view what,
                          bool* try_next) {
  const std::string message = absl::StrCat(what, ": HTTP ", status, ": ", GatewayMessage(body));
  *try_next = status == 404 || status >= 500;
  if (*try_next) return absl::UnavailableError(message);
  if (status == 429) return absl::ResourceExhaustedError(message);
  if (status == 401 || status == 403) return absl::PermissionDeniedError(message);
  if (status >= 400 && status < 500) return absl::InvalidArgumentError(message);
  return absl::InternalError(message);
}

}  // namespace

class EtcdClient::Impl {
 public:
  explicit Impl(std::vector<HostPort> endpoints) : endpoints_(std::move(endpoints)) {}

  std::string Describe() const {
    return absl::StrCat("etcd://",
                        absl::StrJoin(endpoints_, ",", [](std::string* out, const HostPort& e) {
                          out->append(e.ToString());
                        }));
  }

  // Posts `request` to `path`, trying endpoints in turn within `timeout`. Returns the parsed 200
  // reply, or the error of the last try.
  absl::StatusOr<Json> Call(const char* path, const Json& request, milliseconds timeout) {
    const std::string body = request.dump();
    const SteadyClock::time_point deadline = SteadyClock::now() + timeout;
    const size_t first = preferred_.load(std::memory_order_relaxed);
    absl::Status last = absl::DeadlineExceededError(
        absl::StrCat("etcd ", path, " to ", Describe(), ": no time left"));
    for (size_t i = 0; i < endpoints_.size(); ++i) {
      const auto left = std::chrono::duration_cast<milliseconds>(deadline - SteadyClock::now());
      if (left.count() <= 0) break;
      const size_t index = (first + i) % endpoints_.size();
      bool try_next = false;
      absl::StatusOr<Json> reply = CallOne(endpoints_[index], path, body, left, &try_next);
      if (reply.ok()) {
        preferred_.store(index, std::memory_order_relaxed);
        return reply;
      }
      last = reply.status();
      if (!try_next) break;
    }
    if (SteadyClock::now() >= deadline && last.code() == absl::StatusCode::kUnavailable) {
      return absl::DeadlineExceededError(last.message());
    }
    return last;
  }

 private:
  absl::StatusOr<Json> CallOne(const HostPort& endpoint, const char* path, const std::string& body,
                               milliseconds budget, bool* try_next) {
    const std::string what = absl::StrCat("etcd POST http://", endpoint.ToString(), path);
    const SteadyClock::time_point started = SteadyClock::now();
    httplib::Client client(endpoint.host, endpoint.port);
    budget = std::max(milliseconds(1), budget);
    client.set_connection_timeout(budget);
    client.set_read_timeout(budget);
    client.set_write_timeout(budget);
    client.set_tcp_nodelay(true);
    client.set_keep_alive(false);
    httplib::Request request;
    request.method = "POST";
    request.path = path;
    request.body = body;
    request.set_header("Content-Type", "application/json");
    int status = 0;
    std::string reply_body;
    bool too_large = false;
    request.response_handler = [&status](const httplib::Response& response) {
      status = response.status;
      return true;
    };
    request.content_receiver = [&](const char* data, size_t size, uint64_t, uint64_t) {
      too_large = reply_body.size() + size > EtcdClient::kMaxReplyBytes;
      if (!too_large) reply_body.append(data, size);
      return !too_large;
    };
    auto result = client.send(request);
    *try_next = true;
    if (too_large) {
      return absl::UnavailableError(
          absl::StrCat(what, ": reply larger than ", EtcdClient::kMaxReplyBytes, " bytes"));
    }
    // The gateway ends error replies with an HTTP trailer the library reports as a read error
    // after the status line and body have arrived.
    const bool trailer_only =
        !result && result.error() == httplib::Error::Read && status != 0 && status != 200;
    if (!result && !trailer_only) {
      const std::string message = absl::StrCat(what, ": ", httplib::to_string(result.error()));
      // A read timeout is reported as a read error: tell it by the time spent.
      if (result.error() == httplib::Error::ConnectionTimeout ||
          SteadyClock::now() - started >= budget - milliseconds(20)) {
        return absl::DeadlineExceededError(message);
      }
      return absl::UnavailableError(message);
    }
    if (status != 200) return GatewayError(status, reply_body, what, try_next);
    Json reply = Json::parse(reply_body, nullptr, /*allow_exceptions=*/false);
    if (!reply.is_object()) return absl::UnavailableError(absl::StrCat(what, ": reply not JSON"));
    *try_next = false;
    return reply;
  }

  const std::vector<HostPort> endpoints_;
  std::atomic<size_t> preferred_{0};
};

absl::StatusOr<std::vector<HostPort>> EtcdClient::ParseEndpoints(absl::string_view endpoints) {
  if (absl::StripAsciiWhitespace(endpoints).empty()) {
    return absl::InvalidArgumentError("no etcd endpoint given");
  }
  std::vector<HostPort> parsed;
  for (absl::string_view part : absl::StrSplit(endpoints, absl::ByAnyChar(";,"))) {
    part = absl::StripAsciiWhitespace(part);
    if (absl::StartsWith(part, "https://")) {
      return absl::InvalidArgumentError(
          absl::StrCat("etcd endpoint '", part, "': https is not supported"));
    }
    absl::ConsumePrefix(&part, "http://");
    absl::ConsumeSuffix(&part, "/");
    if (part.empty()) {
      return absl::InvalidArgumentError(
          absl::StrCat("empty etcd endpoint in '", absl::CEscape(endpoints), "'"));
    }
    YB_ASSIGN_OR_RETURN(HostPort endpoint, ParseHostPort(part, kDefaultPort));
    if (endpoint.port == 0) {
      return absl::InvalidArgumentError(absl::StrCat("etcd endpoint '", part, "': port 0"));
    }
    if (parsed.size() == kMaxEndpoints) {
      return absl::InvalidArgumentError(
          absl::StrCat("more than ", kMaxEndpoints, " etcd endpoints"));
    }
    parsed.push_back(std::move(endpoint));
  }
  return parsed;
}

absl::StatusOr<std::unique_ptr<EtcdClient>> EtcdClient::Create(absl::string_view endpoints,
                                                               milliseconds timeout) {
  if (timeout.count() <= 0) return absl::InvalidArgumentError("etcd timeout must be positive");
  YB_ASSIGN_OR_RETURN(std::vector<HostPort> parsed, ParseEndpoints(endpoints));
  return std::unique_ptr<EtcdClient>(
      new EtcdClient(std::make_unique<Impl>(std::move(parsed)), timeout));
}

EtcdClient::EtcdClient(std::unique_ptr<Impl> impl, milliseconds timeout)
    : impl_(std::move(impl)), timeout_(timeout) {}

EtcdClient::~EtcdClient() = default;

std::string EtcdClient::Describe() const { return impl_->Describe(); }

absl::StatusOr<std::optional<EtcdClient::KeyValue>> EtcdClient::Get(const std::string& key,
                                                                    milliseconds timeout) {
  if (key.empty()) return absl::InvalidArgumentError("empty etcd key");
  YB_ASSIGN_OR_RETURN(Json reply,
                      impl_->Call("/v3/kv/range", {{"key", absl::Base64Escape(key)}}, timeout));
  return FirstKeyValue(reply);
}

absl::Status EtcdClient::Put(const std::string& key, const std::string& value) {
  if (key.empty()) return absl::InvalidArgumentError("empty etcd key");
  Json request = {{"key", absl::Base64Escape(key)}, {"value", absl::Base64Escape(value)}};
  return impl_->Call("/v3/kv/put", request, timeout_).status();
}

absl::StatusOr<int64_t> EtcdClient::GrantLease(int64_t ttl_seconds) {
  if (ttl_seconds < 1) return absl::InvalidArgumentError("lease TTL must be at least 1 s");
  YB_ASSIGN_OR_RETURN(
      Json reply, impl_->Call("/v3/lease/grant", {{"TTL", std::to_string(ttl_seconds)}}, timeout_));
  auto error = reply.find("error");
  if (error != reply.end() && error->is_string() && !error->get<std::string>().empty()) {
    return absl::UnavailableError(absl::StrCat("etcd lease grant: ", error->get<std::string>()));
  }
  const int64_t id = IntField(reply, "ID");
  if (id == 0) return absl::UnavailableError("etcd lease grant: reply has no lease id");
  return id;
}

absl::StatusOr<int64_t> EtcdClient::KeepAlive(int64_t lease, milliseconds timeout) {
  YB_ASSIGN_OR_RETURN(Json reply,
                      impl_->Call("/v3/lease/keepalive", {{"ID", std::to_string(lease)}}, timeout));
  // The streaming endpoint answers {"result": {...}} (or {"error": ...}).
  auto result = reply.find("result");
  if (result == reply.end() || !result->is_object()) {
    return absl::UnavailableError(
        absl::StrCat("etcd lease keepalive: unexpected reply ", reply.dump().substr(0, 200)));
  }
  const int64_t ttl = IntField(*result, "TTL");
  if (ttl <= 0) return absl::NotFoundError(absl::StrCat("etcd lease ", lease, " has expired"));
  return ttl;
}

absl::Status EtcdClient::RevokeLease(int64_t lease, milliseconds timeout) {
  absl::StatusOr<Json> reply =
      impl_->Call("/v3/lease/revoke", {{"ID", std::to_string(lease)}}, timeout);
  if (!reply.ok() && absl::StrContains(reply.status().message(), "not found")) {
    return absl::OkStatus();
  }
  return reply.status();
}

absl::StatusOr<EtcdClient::CreateResult> EtcdClient::CreateIfAbsent(const std::string& key,
                                                                    const std::string& value,
                                                                    int64_t lease) {
  if (key.empty()) return absl::InvalidArgumentError("empty etcd key");
  const std::string key64 = absl::Base64Escape(key);
  Json put = {{"key", key64}, {"value", absl::Base64Escape(value)}};
  if (lease != 0) put["lease"] = std::to_string(lease);
  Json request = {
      {"compare", Json::array({{{"target", "CREATE"}, {"key", key64}, {"createRevision", "0"}}})},
      {"success", Json::array({{{"requestPut", put}}})},
      {"failure", Json::array({{{"requestRange", {{"key", key64}}}}})}};
  YB_ASSIGN_OR_RETURN(Json reply, impl_->Call("/v3/kv/txn", request, timeout_));
  CreateResult out;
  auto succeeded = reply.find("succeeded");
  out.created = succeeded != reply.end() && succeeded->is_boolean() && succeeded->get<bool>();
  if (out.created) {
    // The put happened at the transaction's revision, which is the key's create revision.
    auto header = reply.find("header");
    if (header == reply.end() || !header->is_object()) {
      return absl::UnavailableError("etcd txn reply has no header");
    }
    out.current.value = value;
    out.current.create_revision = IntField(*header, "revision");
    out.current.mod_revision = out.current.create_revision;
    out.current.lease = lease;
    if (out.current.create_revision == 0) {
      return absl::UnavailableError("etcd txn reply has no revision");
    }
    return out;
  }
  auto responses = reply.find("responses");
  if (responses == reply.end() || !responses->is_array() || responses->empty() ||
      !responses->front().is_object()) {
    return absl::UnavailableError("etcd txn reply has no range response");
  }
  auto range = responses->front().find("response_range");
  if (range == responses->front().end() || !range->is_object()) {
    return absl::UnavailableError("etcd txn reply has no range response");
  }
  YB_ASSIGN_OR_RETURN(std::optional<KeyValue> kv, FirstKeyValue(*range));
  // Inside one transaction the compare and the read see the same revision, so the key is there.
  if (kv.has_value()) out.current = std::move(*kv);
  return out;
}

absl::Status EtcdClient::Delete(const std::string& key) {
  if (key.empty()) return absl::InvalidArgumentError("empty etcd key");
  return impl_->Call("/v3/kv/deleterange", {{"key", absl::Base64Escape(key)}}, timeout_).status();
}

}  // namespace yuebing
