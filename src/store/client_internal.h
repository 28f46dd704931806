// Internal factory of store::Client for tests: a client over a given MasterApi (for example the
// in-process master of tests/support/in_process_master.h) instead of the gRPC MasterClient that
// Client::Create builds. Everything else (engine, segment host, object client) is as in Create;
// config.master_server_address is not used.
#pragma once

#include <memory>

#include "absl/status/statusor.h"
#include "store/master_api.h"
#include "yuebing/store/client.h"

namespace yuebing::store {

// `master` is shared with the caller, who may keep using it (e.g. to inject faults); the client
// stops calling it when destroyed. Errors: as Client::Create.
absl::StatusOr<std::unique_ptr<Client>> CreateClientWithMaster(const ClientConfig& config,
                                                               std::shared_ptr<MasterApi> master);

}  // namespace yuebing::store
