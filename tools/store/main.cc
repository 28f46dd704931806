// yuebing-store: a standalone store server. It contributes --global_segment_size bytes of memory
// (shared-memory backed) to the cluster managed by --master_server_address and serves transfers
// until SIGINT/SIGTERM, then unmounts and exits 0. Prints
// "yuebing-store ready segment=<name> size=<bytes>" once mounted. With --ssd_path it also keeps
// a disk tier: objects evicted from its memory are spilled to files there (bounded by
// --ssd_capacity) and served back (docs/store.md, "Disk tier").
#include <signal.h>

#include <cstdio>
#include <string>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/flags/usage.h"
#include "yuebing/common/config.h"
#include "yuebing/common/stop_signals.h"
#include "yuebing/store/client.h"

ABSL_FLAG(std::string, master_server_address, "127.0.0.1:50051", "yuebing-master host:port");
ABSL_FLAG(std::string, metadata_server, "P2PHANDSHAKE",
          "transfer engine metadata: P2PHANDSHAKE, http://host:port/metadata or etcd://host:port");
ABSL_FLAG(std::string, local_hostname, "127.0.0.1",
          "host (optionally host:port) peers use to reach this store");
ABSL_FLAG(std::string, global_segment_size, "1GB", "memory contributed to the cluster, e.g. 4GB");
ABSL_FLAG(std::string, protocol, "tcp", "transfer protocol (tcp; rdma falls back to tcp)");
ABSL_FLAG(std::string, device_name, "", "RDMA device names (unused with tcp)");
ABSL_FLAG(int, rpc_timeout_ms, 5000, "deadline of each master call");
ABSL_FLAG(std::string, cluster_secret_file, "",
          "file holding the cluster secret (else $YUEBING_CLUSTER_SECRET_FILE / "
          "$YUEBING_CLUSTER_SECRET); authenticates transfers and master calls");
ABSL_FLAG(std::string, master_tls_ca_file, "",
          "PEM CA bundle: reach the master over TLS (else $YUEBING_MASTER_TLS_CA_FILE)");
ABSL_FLAG(std::string, ssd_path, "", "directory of the disk tier (empty: no disk tier)");
ABSL_FLAG(std::string, ssd_capacity, "10GB", "bytes the disk tier may use, e.g. 100GB");
ABSL_FLAG(int, ssd_port, 0,
          "unused, accepted so existing scripts keep working: disk-tier objects are served by "
          "the transfer engine's port");

int main(int argc, char** argv) {
  absl::SetProgramUsageMessage("standalone yuebing store server: contributes memory to a cluster");
  absl::ParseCommandLine(argc, argv);
  absl::StatusOr<uint64_t> size = yuebing::ParseSize(absl::GetFlag(FLAGS_global_segment_size));
  if (!size.ok() || *size == 0) {
    std::fprintf(stderr, "yuebing-store: bad --global_segment_size: %s\n",
                 size.ok() ? "must be > 0" : size.status().ToString().c_str());
    return 2;
  }
  uint64_t ssd_capacity = 0;
  if (!absl::GetFlag(FLAGS_ssd_path).empty()) {
    absl::StatusOr<uint64_t> parsed = yuebing::ParseSize(absl::GetFlag(FLAGS_ssd_capacity));
    if (!parsed.ok() || *parsed == 0) {
      std::fprintf(stderr, "yuebing-store: bad --ssd_capacity: %s\n",
                   parsed.ok() ? "must be > 0" : parsed.status().ToString().c_str());
      return 2;
    }
    ssd_capacity = *parsed;
  }
  const int ssd_port = absl::GetFlag(FLAGS_ssd_port);
  if (ssd_port < 0 || ssd_port > 65535) {
    std::fprintf(stderr, "yuebing-store: bad --ssd_port %d\n", ssd_port);
    return 2;
  }
  const sigset_t signals = yuebing::BlockStopSignals();

  yuebing::store::ClientConfig config;
  config.master_server_address = absl::GetFlag(FLAGS_master_server_address);
  config.metadata_server = absl::GetFlag(FLAGS_metadata_server);
  config.local_hostname = absl::GetFlag(FLAGS_local_hostname);
  config.global_segment_size = *size;
  config.protocol = absl::GetFlag(FLAGS_protocol);
  config.device_name = absl::GetFlag(FLAGS_device_name);
  config.rpc_timeout = std::chrono::milliseconds(absl::GetFlag(FLAGS_rpc_timeout_ms));
  config.cluster_secret_file = absl::GetFlag(FLAGS_cluster_secret_file);
  config.master_tls_ca_file = absl::GetFlag(FLAGS_master_tls_ca_file);
  config.ssd_path = absl::GetFlag(FLAGS_ssd_path);
  config.ssd_capacity = ssd_capacity;
  config.ssd_port = static_cast<uint16_t>(ssd_port);
  auto client = yuebing::store::Client::Create(config);
  if (!client.ok()) {
    std::fprintf(stderr, "yuebing-store: %s\n", client.status().ToString().c_str());
    return 1;
  }
  std::printf("yuebing-store ready segment=%s size=%llu\n", (*client)->SegmentName().c_str(),
              static_cast<unsigned long long>(*size));
  std::fflush(stdout);
  yuebing::WaitForStopSignal(signals);
  client->reset();
  return 0;
}
