// Command-line compatibility with upstream's mooncake_master: yuebing-master parses its flags with
// Abseil, which refuses unknown flags, while scripts written for mooncake_master pass gflags/glog
// flags that have no meaning here (--max_threads, -v=1, --enable_metric_reporting, ...). Before
// parsing, main() hands argv to TranslateUpstreamMasterFlags, which
//   - renames what has a yuebing equivalent (--port -> --rpc_port when --rpc_port is not given;
//     --ha_backend_connstring -> --etcd_endpoints with the etcd backend);
//   - drops what has none, with one warning each saying what yuebing does instead;
//   - refuses what cannot be honoured safely (--config_path: its settings would be lost; an HA
//     backend other than etcd) with kInvalidArgument naming the flag;
//   - keeps nothing of a dropped flag in the returned argv.
// Flags yuebing-master defines, and anything unknown to both, pass through unchanged (Abseil then
// reports an unknown flag as before). Accepted spellings: --name=value, -name=value, --name value
// (non-boolean flags), --name / --noname (boolean flags).
// Thread safety: a pure function.
#pragma once

#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace yuebing::master {

struct TranslatedFlags {
  std::vector<std::string> argv;      // argv[0] first; what Abseil should parse
  std::vector<std::string> warnings;  // one line per dropped or renamed upstream flag
};

absl::StatusOr<TranslatedFlags> TranslateUpstreamMasterFlags(const std::vector<std::string>& argv);

}  // namespace yuebing::master
