// Command-line flags of yuebing-bench, shared by its subcommands (transfer, socket, memcpy).
// Flag names follow Mooncake's transfer_engine_bench where the concept exists.
#pragma once

#include <cstdint>
#include <string>

#include "absl/flags/declare.h"
#include "absl/status/statusor.h"

ABSL_DECLARE_FLAG(std::string, mode);
ABSL_DECLARE_FLAG(std::string, metadata_server);
ABSL_DECLARE_FLAG(std::string, local_server_name);
ABSL_DECLARE_FLAG(int32_t, port);
ABSL_DECLARE_FLAG(std::string, segment_id);
ABSL_DECLARE_FLAG(std::string, target_buffer);
ABSL_DECLARE_FLAG(std::string, target_buffer_size);
ABSL_DECLARE_FLAG(std::string, operation);
ABSL_DECLARE_FLAG(std::string, protocol);
ABSL_DECLARE_FLAG(std::string, block_size);
ABSL_DECLARE_FLAG(int32_t, batch_size);
ABSL_DECLARE_FLAG(int32_t, threads);
ABSL_DECLARE_FLAG(int32_t, duration);
ABSL_DECLARE_FLAG(std::string, buffer_size);
ABSL_DECLARE_FLAG(std::string, report);
ABSL_DECLARE_FLAG(bool, verify);
ABSL_DECLARE_FLAG(bool, pingpong);
ABSL_DECLARE_FLAG(bool, busy_poll);
ABSL_DECLARE_FLAG(int32_t, timeout_ms);
ABSL_DECLARE_FLAG(int32_t, tcp_connections_per_peer);
ABSL_DECLARE_FLAG(std::string, tcp_slice_size);

namespace yuebing::bench {

// --block_size in bytes. Errors: kInvalidArgument for a malformed or zero size.
absl::StatusOr<uint64_t> BlockSizeFlag();

// --buffer_size in bytes, capped at a quarter of physical memory and at least `min_bytes`
// (rounded up to a page). Errors: kInvalidArgument for a malformed size, kResourceExhausted
// when `min_bytes` exceeds the cap.
absl::StatusOr<uint64_t> BufferSizeFlag(uint64_t min_bytes);

// Seconds to run: --duration when given (>= 0), otherwise `fallback_s`.
int32_t DurationSeconds(int32_t fallback_s);

// True when --report=json; false for "text". Errors: kInvalidArgument for another value.
absl::StatusOr<bool> ReportJson();

}  // namespace yuebing::bench
