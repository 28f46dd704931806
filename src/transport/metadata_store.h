// Client side of the transfer engine's metadata backends: a small key-value interface over the
// HTTP metadata server ("http://host:port/metadata") or a real etcd cluster
// ("etcd://host:port[,host:port...]", through yuebing's one etcd client, src/common/etcd_client.h).
// P2PHANDSHAKE has no store: CreateMetadataStore returns nullptr for it.
//
// Thread safety: implementations are thread-safe. Every call ends within the timeout given at
// creation. Errors: kUnavailable (server unreachable or 5xx), kDeadlineExceeded (timeout),
// kNotFound (Get of a missing key), kInvalidArgument (bad key).
#pragma once

#include <chrono>
#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace yuebing::transport {

class MetadataStore {
 public:
  virtual ~MetadataStore() = default;
  virtual absl::Status Put(const std::string& key, const std::string& value) = 0;
  virtual absl::StatusOr<std::string> Get(const std::string& key) = 0;
  // Deleting a missing key is OK.
  virtual absl::Status Delete(const std::string& key) = 0;
  // A short description for logs, e.g. "http://127.0.0.1:8080/metadata".
  virtual std::string Describe() const = 0;
};

// Checks a metadata key as every backend does: non-empty and at most
// HttpMetadataServer::kMaxKeyBytes bytes. Errors: kInvalidArgument.
absl::Status ValidateMetadataKey(absl::string_view key);

// Parses `conn` and returns the matching store; nullptr (and OK) for "P2PHANDSHAKE".
// Errors: kInvalidArgument for an unknown scheme or malformed address.
absl::StatusOr<std::unique_ptr<MetadataStore>> CreateMetadataStore(
    absl::string_view conn, std::chrono::milliseconds timeout);

}  // namespace yuebing::transport
