// The etcd metadata backend ("etcd://host:port[,host:port...]"): keys and values are stored as
// they are in etcd, through etcd's v3 JSON gateway (POST /v3/kv/put, /v3/kv/range and
// /v3/kv/deleterange, base64 keys and values). Private to src/transport; callers use
// CreateMetadataStore.
#pragma once

#include <chrono>
#include <memory>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "transport/metadata_store.h"

namespace yuebing::transport {

// Creates the store for `endpoints`, the part after "etcd://": comma-separated host[:port]
// (port 2379 by default). A call tries the endpoints in turn, starting with the last one that
// answered, moving on when one cannot be reached or answers 5xx; all tries together stay within
// `timeout`. Errors: kInvalidArgument (malformed or empty endpoint list).
absl::StatusOr<std::unique_ptr<MetadataStore>> NewEtcdMetadataStore(
    absl::string_view endpoints, std::chrono::milliseconds timeout);

}  // namespace yuebing::transport
