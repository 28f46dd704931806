// A small etcd v3 client over etcd's JSON gateway (POST /v3/..., base64 keys and values), for the
// few operations leader election and leader discovery need: read a key, grant / keep alive /
// revoke a lease, create a key only if it is absent, delete a key.
//
// Each call tries the endpoints in turn, starting with the last one that answered, moving on when
// one cannot be reached or answers 5xx/404; all tries together stay within the call's timeout
// (connect, send and receive are each bounded by the time left).
//
// Errors: kInvalidArgument (bad endpoint list or arguments), kDeadlineExceeded (no answer in
// time), kUnavailable (no endpoint reachable, malformed reply), kNotFound (KeepAlive on a lease
// that no longer exists), other codes for gateway errors.
// Thread safety: all methods are thread-safe; calls may run concurrently.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace yuebing {

class EtcdClient {
 public:
  struct Endpoint {
    std::string host;  // name, IPv4, or bare IPv6 (no brackets)
    uint16_t port = 0;
  };

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

  // Parses `endpoints`: "host:port" items separated by ';' or ',', each optionally prefixed by
  // "http://"; a missing port means 2379. Errors: kInvalidArgument (empty list, bad item,
  // "https://" which this client does not speak).
  static absl::StatusOr<std::vector<Endpoint>> ParseEndpoints(absl::string_view endpoints);

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

  // "etcd://h:p;h:p", for messages.
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
