// --verify for the transfer benchmark: write a seeded pattern from a local slice to the remote
// slice, clear the local slice, read it back and compare byte for byte.
#pragma once

#include <cstdint>
#include <string>

#include "absl/functional/function_ref.h"
#include "absl/status/statusor.h"
#include "yuebing/transport/transfer_engine.h"

namespace yuebing::bench {

struct VerifyTarget {
  char* local = nullptr;  // local slice; slot i is local + i * block, mirrored remotely
  uint64_t slots = 0;
  uint64_t block = 0;
  uint32_t batch = 0;  // requests per batch
  uint64_t seed = 0;   // distinct per run and thread, so stale bytes cannot pass
};

// Transfers slots [first, first + count) in one batch; OK only if every request completed.
using BatchRunner = absl::FunctionRef<absl::Status(transport::OpCode, uint64_t, uint32_t)>;

// Covers at most the first 256 MiB of the slice. Returns "" when every byte matched, otherwise
// a description of the first mismatch; an error when a transfer failed.
absl::StatusOr<std::string> VerifyRoundTrip(const VerifyTarget& target, BatchRunner run);

// Pattern helpers, exposed for tests. The byte at offset i depends on (seed, i) only.
void FillPattern(char* data, uint64_t length, uint64_t seed);
// `size` bytes of FillPattern(seed): the values the store benchmarks put and check.
inline std::string PatternValue(uint64_t seed, size_t size) {
  std::string out(size, '\0');
  FillPattern(out.data(), size, seed);
  return out;
}
// Offset of the first byte differing from the pattern, or `length` when all match.
uint64_t FirstPatternMismatch(const char* data, uint64_t length, uint64_t seed);

}  // namespace yuebing::bench
