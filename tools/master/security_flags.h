// yuebing-master's security flags (--cluster_secret_file, --tls_cert_file, --tls_key_file) and
// their reading, once at start. Not thread-safe (reads flags); call from main.
#pragma once

#include "absl/status/statusor.h"
#include "rpc/master_rpc_security.h"

namespace yuebing::master {

// The cluster secret (flag, else $YUEBING_CLUSTER_SECRET_FILE, else $YUEBING_CLUSTER_SECRET) and
// the TLS certificate/key. Errors: kInvalidArgument naming the flag and the problem.
absl::StatusOr<MasterRpcSecurity> MasterSecurityFromFlags();

}  // namespace yuebing::master
