// A small etcd v3 client over etcd's JSON gateway (POST /v3/..., base64 keys and values): the
// one etcd client of yuebing. Leader election and leader discovery use it (read a key, grant /
// keep alive / revoke a lease, create a key only if it is absent, delete a key), and so does the
// transfer engine's etcd metadata backend (put, get, delete).
//
// Each call tries the endpoints in turn, starting with the last one that answered, moving on when
// one cannot be reached, sends a malformed or oversized reply, or answers 404/5xx; all tries
// together stay within the call's timeout (connect, send and receive are each bounded by the time
// left).
//
// Errors: kInvalidArgument (bad endpoint list or arguments; the gateway answered 400 or another
// 4xx not listed here), kDeadlineExceeded (no answer in time), kUnavailable (no endpoint reachable,
// every one answered 404/5xx, a malformed reply or one over kMaxReplyBytes), kResourceExhausted
// (HTTP 429), kPermissionDenied (HTTP 401/403), kNotFound (KeepAlive on a lease that no longer
// exists), kInternal (any other HTTP status).
// Thread safety: all methods are thread-safe; calls may run concurrently.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "yuebing/common/host_port.h"

namespace yuebing {

class EtcdClient {
 public:
  static constexpr uint16_t kDefaultPort = 2379;
  static constexpr size_t kMaxEndpoints = 64;
  // A larger reply is not from a sane etcd (its own request limit is far below this).
  static constexpr size_t kMaxReplyBytes = 64u << 20;

  struct KeyValue {
    std::string value;
    int64_t create_revision = 0;  // the store revision that created the key (monotonic)
    int64_t mod_revision = 0;
    int64_t lease = 0;  // 0 when not bound to a lease
  };

  // Result of CreateIfAbsent: `created` tells whether this call created the key; `current` is the
  // key as etcd holds it after the call (ours when created, the existing one otherwise).
  struct CreateResult {
    bool created = false;
    KeyValue current;
  };

  // Parses `endpoints`: items separated by ';' or ',' (surrounding spaces ignored), each a
  // host[:port] as ParseHostPort reads it (port 1..65535, kDefaultPort when absent), optionally
  // prefixed by "http://" and followed by '/'. At most kMaxEndpoints items. Errors:
  // kInvalidArgument (no item, an empty item as in "a,,b", a bad item, port 0, "https://" which
  // this client does not speak).
  static absl::StatusOr<std::vector<HostPort>> ParseEndpoints(absl::string_view endpoints);

  // Creates a client for `endpoints` (see ParseEndpoints); `timeout` bounds each call that is
  // not given its own. Connection happens per call. Errors: as ParseEndpoints.
  static absl::StatusOr<std::unique_ptr<EtcdClient>> Create(absl::string_view endpoints,
                                                            std::chrono::milliseconds timeout);

  // The key, or nullopt when absent.
  [[nodiscard]] absl::StatusOr<std::optional<KeyValue>> Get(const std::string& key,
                                                            std::chrono::milliseconds timeout);
  [[nodiscard]] absl::StatusOr<std::optional<KeyValue>> Get(const std::string& key) {
    return Get(key, timeout_);
  }

  // Puts `key` = `value` (not bound to a lease), replacing any value.
  [[nodiscard]] absl::Status Put(const std::string& key, const std::string& value);

  // Grants a lease of `ttl_seconds` (>= 1); returns its id.
  [[nodiscard]] absl::StatusOr<int64_t> GrantLease(int64_t ttl_seconds);

  // Renews `lease` once; returns the TTL (seconds) etcd now gives it. kNotFound when the lease
  // has expired or was revoked.
  [[nodiscard]] absl::StatusOr<int64_t> KeepAlive(int64_t lease, std::chrono::milliseconds timeout);

  // Revokes `lease`, deleting the keys bound to it. A lease already gone is not an error.
  [[nodiscard]] absl::Status RevokeLease(int64_t lease, std::chrono::milliseconds timeout);

  // In one transaction: if `key` does not exist, puts `value` bound to `lease` (0 = none);
  // otherwise reads the existing key.
  [[nodiscard]] absl::StatusOr<CreateResult> CreateIfAbsent(const std::string& key,
                                                            const std::string& value,
                                                            int64_t lease);

  // Deletes `key` (absent is not an error).
  [[nodiscard]] absl::Status Delete(const std::string& key);

  // "etcd://h:p,h:p", for messages.
  std::string Describe() const;

  ~EtcdClient();
  EtcdClient(const EtcdClient&) = delete;
  EtcdClient& operator=(const EtcdClient&) = delete;

 private:
  class Impl;
  EtcdClient(std::unique_ptr<Impl> impl, std::chrono::milliseconds timeout);
  std::unique_ptr<Impl> impl_;
  const std::chrono::milliseconds timeout_;
};

}  // namespace yuebing
