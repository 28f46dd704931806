#include "bench_flags.h"

#include <unistd.h>

#include <algorithm>

#include "absl/flags/flag.h"
#include "absl/strings/str_cat.h"
#include "yuebing/common/config.h"

ABSL_FLAG(std::string, mode, "",
          "transfer: target|initiator (default initiator); socket: server|client");
ABSL_FLAG(std::string, metadata_server, "P2PHANDSHAKE",
          "transfer: metadata backend (P2PHANDSHAKE, http://host:port/metadata, etcd://...)");
ABSL_FLAG(std::string, local_server_name, "",
          "transfer: this engine's name; default 127.0.0.1:<port> for a target, 127.0.0.1 (port "
          "picked) for an initiator");
ABSL_FLAG(int32_t, port, 17000, "transfer target / socket server port");
ABSL_FLAG(std::string, segment_id, "127.0.0.1:17000", "transfer initiator: target segment name");
ABSL_FLAG(std::string, target_buffer, "",
          "transfer initiator: target buffer address, as printed on the target's READY line");
ABSL_FLAG(std::string, target_buffer_size, "",
          "transfer initiator: target buffer length (READY line); default: this side's size");
ABSL_FLAG(std::string, operation, "read", "transfer: read|write");
ABSL_FLAG(std::string, protocol, "tcp",
          "transfer: tcp (plain memory, shm disabled) or shm (target memory in shared memory)");
ABSL_FLAG(std::string, block_size, "64KB", "bytes per request / send / memcpy, e.g. 4KB, 1MB");
ABSL_FLAG(int32_t, batch_size, 16, "transfer: requests per batch");
ABSL_FLAG(int32_t, threads, 1, "transfer: initiator threads, each with its own batches");
ABSL_FLAG(int32_t, duration, -1,
          "seconds to run; default 10 for initiator/client/memcpy, until SIGINT/SIGTERM for a "
          "target");
ABSL_FLAG(std::string, buffer_size, "1GB",
          "registered buffer per side (transfer) or per buffer (memcpy); capped at RAM/4");
ABSL_FLAG(std::string, report, "text", "output format: text|json");
ABSL_FLAG(bool, verify, false,
          "transfer initiator: after the timed run, write a pattern, read it back and compare");
ABSL_FLAG(bool, pingpong, false, "socket client: measure round-trip latency instead of GB/s");
ABSL_FLAG(bool, busy_poll, false, "socket ping-pong client: spin on the reply instead of sleeping");
ABSL_FLAG(int32_t, timeout_ms, 30000, "transfer: per-request deadline and WaitBatch bound");
ABSL_FLAG(int32_t, tcp_connections_per_peer, 0, "transfer: engine TCP pool size (0: default)");
ABSL_FLAG(std::string, tcp_slice_size, "", "transfer: engine TCP slice size (empty: default)");

namespace yuebing::bench {

absl::StatusOr<uint64_t> BlockSizeFlag() {
  absl::StatusOr<uint64_t> size = ParseSize(absl::GetFlag(FLAGS_block_size));
  if (!size.ok()) return size.status();
  if (*size == 0) return absl::InvalidArgumentError("--block_size must be > 0");
  return size;
}

absl::StatusOr<uint64_t> BufferSizeFlag(uint64_t min_bytes) {
  absl::StatusOr<uint64_t> size = ParseSize(absl::GetFlag(FLAGS_buffer_size));
  if (!size.ok()) return size.status();
  const uint64_t page = static_cast<uint64_t>(sysconf(_SC_PAGESIZE));
  const uint64_t ram = static_cast<uint64_t>(sysconf(_SC_PHYS_PAGES)) * page;
  const uint64_t cap = ram / 4;
  if (min_bytes > cap) {
    return absl::ResourceExhaustedError(
        absl::StrCat("the run needs ", FormatSize(min_bytes), " per buffer, above the cap of ",
                     FormatSize(cap), " (RAM/4); lower --block_size, --batch_size or --threads"));
  }
  uint64_t bytes = std::clamp(*size, min_bytes, cap);
  return (bytes + page - 1) / page * page;
}

int32_t DurationSeconds(int32_t fallback_s) {
  const int32_t duration = absl::GetFlag(FLAGS_duration);
  return duration >= 0 ? duration : fallback_s;
}

absl::StatusOr<bool> ReportJson() {
  const std::string report = absl::GetFlag(FLAGS_report);
  if (report == "json") return true;
  if (report == "text") return false;
  return absl::InvalidArgumentError(absl::StrCat("--report must be text or json, not ", report));
}

}  // namespace yuebing::bench
