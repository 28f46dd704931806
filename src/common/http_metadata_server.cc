#include "yuebing/common/http_metadata_server.h"

#include <httplib.h>
#include <sys/socket.h>

#include <atomic>
#include <chrono>
#include <thread>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "common/http_bind.h"
#include "common/http_metadata_server_internal.h"
#include "yuebing/common/logging.h"
#include "yuebing/common/mutex.h"
#include "yuebing/common/status.h"

namespace yuebing {
namespace {

constexpr auto kStartupTimeout = std::chrono::seconds(5);
// Bounds how long the destructor may wait for an idle keep-alive connection to be dropped.
constexpr time_t kKeepAliveTimeoutSec = 2;
// Upstream's server labels every reply, error texts included, as JSON; callers may check it.
constexpr const char* kContentType = "application/json";

constexpr int kOk = 200;
constexpr int kBadRequest = 400;
constexpr int kNotFound = 404;
constexpr int kPayloadTooLarge = 413;
constexpr int kUriTooLong = 414;
constexpr int kInsufficientStorage = 507;

class HttpMetadataServerImpl final : public HttpMetadataServer {
 public:
  explicit HttpMetadataServerImpl(const internal::HttpMetadataServerLimits& limits)
      : limits_(limits) {}

  ~HttpMetadataServerImpl() override {
    server_.stop();
    if (thread_.joinable()) thread_.join();
  }

  absl::Status Serve(const std::string& host, uint16_t port);

  uint16_t port() const override { return port_; }

  size_t KeyCount() const override {
    yuebing::MutexLock lock(&mu_);
    return map_.size();
  }

 private:
  void Routes();
  // Reads and checks the `key` query parameter; on failure fills `res` and returns false.
  bool KeyOf(const httplib::Request& req, httplib::Response& res, std::string* key) const;
  void HandleGet(const httplib::Request& req, httplib::Response& res);
  void HandlePut(const httplib::Request& req, httplib::Response& res);
  void HandleDelete(const httplib::Request& req, httplib::Response& res);

  const internal::HttpMetadataServerLimits limits_;
  httplib::Server server_;
  std::thread thread_;
  std::atomic<bool> listen_returned_{false};
  uint16_t port_ = 0;

  mutable yuebing::Mutex mu_;
  absl::flat_hash_map<std::string, std::string> map_ ABSL_GUARDED_BY(mu_);
};

void Reply(httplib::Response& res, int status, std::string body) {
  res.status = status;
  res.set_content(std::move(body), kContentType);
}

bool HttpMetadataServerImpl::KeyOf(const httplib::Request& req, httplib::Response& res,
                                   std::string* key) const {
  // As upstream: surrounding whitespace is not part of the key, and a blank key is refused.
  *key = std::string(absl::StripAsciiWhitespace(req.get_param_value("key")));
  if (key->empty()) {
    Reply(res, kBadRequest, "metadata key is required");
    return false;
  }
  if (key->size() > limits_.max_key_bytes) {
    Reply(res, kUriTooLong, absl::StrCat("key longer than ", limits_.max_key_bytes, " bytes\n"));
    return false;
  }
  return true;
}

void HttpMetadataServerImpl::HandleGet(const httplib::Request& req, httplib::Response& res) {
  std::string key;
  if (!KeyOf(req, res, &key)) return;
  std::string value;
  {
    yuebing::MutexLock lock(&mu_);
    auto it = map_.find(key);
    if (it == map_.end()) {
      Reply(res, kNotFound, "metadata not found");
      return;
    }
    value = it->second;
  }
  Reply(res, kOk, std::move(value));
}

void HttpMetadataServerImpl::HandlePut(const httplib::Request& req, httplib::Response& res) {
  std::string key;
  if (!KeyOf(req, res, &key)) return;
  if (req.body.size() > limits_.max_value_bytes) {
    Reply(res, kPayloadTooLarge,
          absl::StrCat("value longer than ", limits_.max_value_bytes, " bytes\n"));
    return;
  }
  {
    yuebing::MutexLock lock(&mu_);
    auto it = map_.find(key);
    if (it != map_.end() && absl::StrContains(key, "rpc_meta")) {
      // As upstream: an engine's RPC address is registered once; a second engine claiming the
      // same name is refused (the same registration again is not an error).
      if (it->second == req.body) {
        Reply(res, kOk, "metadata unchanged");
      } else {
        Reply(res, kBadRequest, "Duplicate rpc_meta key not allowed");
      }
      return;
    }
    if (it != map_.end()) {
      it->second = req.body;
    } else if (map_.size() >= limits_.max_keys) {
      Reply(res, kInsufficientStorage, absl::StrCat("key limit ", limits_.max_keys, " reached\n"));
      return;
    } else {
      map_.emplace(std::move(key), req.body);
    }
  }
  Reply(res, kOk, "metadata updated");
}

void HttpMetadataServerImpl::HandleDelete(const httplib::Request& req, httplib::Response& res) {
  std::string key;
  if (!KeyOf(req, res, &key)) return;
  bool erased = false;
  {
    yuebing::MutexLock lock(&mu_);
    erased = map_.erase(key) > 0;
  }
  if (erased) {
    Reply(res, kOk, "metadata deleted");
  } else {
    Reply(res, kNotFound, "metadata not found");
  }
}

void HttpMetadataServerImpl::Routes() {
  server_.Get("/metadata",
              [this](const httplib::Request& req, httplib::Response& res) { HandleGet(req, res); });
  server_.Put("/metadata",
              [this](const httplib::Request& req, httplib::Response& res) { HandlePut(req, res); });
  server_.Delete("/metadata", [this](const httplib::Request& req, httplib::Response& res) {
    HandleDelete(req, res);
  });
  server_.Get("/health",
              [](const httplib::Request&, httplib::Response& res) { Reply(res, kOk, "OK"); });
}

absl::Status HttpMetadataServerImpl::Serve(const std::string& host, uint16_t port) {
  Routes();
  // Bodies over the limit are refused (413) by the library before they are buffered.
  server_.set_payload_max_length(limits_.max_value_bytes);
  server_.set_keep_alive_timeout(kKeepAliveTimeoutSec);
  YB_ASSIGN_OR_RETURN(port_, BindHttpServer(server_, host, port));
  thread_ = std::thread([this] {
    server_.listen_after_bind();
    listen_returned_.store(true);
  });
  const auto deadline = std::chrono::steady_clock::now() + kStartupTimeout;
  while (!server_.is_running()) {
    if (listen_returned_.load() || std::chrono::steady_clock::now() > deadline) {
      return absl::InternalError(
          absl::StrCat("metadata server on ", host, ":", port_, " did not start serving"));
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  YB_LOG_DEBUG("http metadata server serving on {}:{}", host, port_);
  return absl::OkStatus();
}

}  // namespace

namespace internal {

absl::StatusOr<std::unique_ptr<HttpMetadataServer>> StartHttpMetadataServer(
    const std::string& host, uint16_t port, const HttpMetadataServerLimits& limits) {
  if (limits.max_key_bytes == 0 || limits.max_value_bytes == 0 || limits.max_keys == 0) {
    return absl::InvalidArgumentError("metadata server limits must be positive");
  }
  auto server = std::make_unique<HttpMetadataServerImpl>(limits);
  YB_RETURN_IF_ERROR(server->Serve(host, port));
  return std::unique_ptr<HttpMetadataServer>(std::move(server));
}

}  // namespace internal

absl::StatusOr<std::unique_ptr<HttpMetadataServer>> HttpMetadataServer::Start(
    const std::string& host, uint16_t port) {
  return internal::StartHttpMetadataServer(host, port, internal::HttpMetadataServerLimits{});
}

}  // namespace yuebing
