// The etcd metadata backend ("etcd://host:port[,host:port...]"): keys and values are stored as
// they are in etcd. All etcd traffic goes through yuebing's one etcd client
// (src/common/etcd_client.h: endpoint list, failover, reply limit, error mapping). Private to
// src/transport; callers use CreateMetadataStore.
#pragma once

#include <chrono>
#include <memory>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "transport/metadata_store.h"

namespace yuebing::transport {

// Creates the store for `endpoints`, the part after "etcd://": an endpoint list as
// EtcdClient::ParseEndpoints reads it (host[:port] items separated by ',' or ';', port 2379 by
// default). A call tries the endpoints in turn, starting with the last one that answered, moving
// on when one cannot be reached or answers 404/5xx; all tries together stay within `timeout`.
// Errors: kInvalidArgument (malformed or empty endpoint list, non-positive timeout).
absl::StatusOr<std::unique_ptr<MetadataStore>> NewEtcdMetadataStore(
    absl::string_view endpoints, std::chrono::milliseconds timeout);

}  // namespace yuebing::transport
