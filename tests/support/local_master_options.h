// Options of an in-process master::MasterServer on 127.0.0.1 with every port picked free (rpc,
// metrics, fast path), for tests that run one or more masters in their own process.
#pragma once

#include "master/master_server.h"

namespace yuebing::test_support {

inline master::MasterServer::Options LocalMasterOptions() {
  master::MasterServer::Options options;
  options.rpc_host = "127.0.0.1";
  options.rpc_port = 0;
  options.metrics_port = 0;
  return options;
}

}  // namespace yuebing::test_support
