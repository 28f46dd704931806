// Reads the store client's security settings once at start: the cluster secret and the master's
// TLS CA bundle, from the ClientConfig or the environment (see ClientConfig for the order).
// Thread-safe. Errors: kInvalidParams (Mooncake code) naming the file or variable that is unusable.
#pragma once

#include "absl/status/statusor.h"
#include "rpc/master_rpc_security.h"
#include "yuebing/store/client.h"

namespace yuebing::store {

absl::StatusOr<MasterRpcSecurity> LoadClientSecurity(const ClientConfig& config);

}  // namespace yuebing::store
