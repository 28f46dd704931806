// memcpy baseline: one thread copies block_size chunks between two pre-faulted buffers larger
// than the caches, at rotating offsets; the ceiling for a one-copy shared-memory transfer.
#include <cstring>

#include "absl/flags/flag.h"
#include "bench_buffer.h"
#include "bench_flags.h"
#include "report.h"
#include "subcommands.h"
#include "yuebing/common/status.h"

namespace yuebing::bench {

absl::Status RunMemcpyBench() {
  YB_ASSIGN_OR_RETURN(const bool json, ReportJson());
  YB_ASSIGN_OR_RETURN(const uint64_t block, BlockSizeFlag());
  YB_ASSIGN_OR_RETURN(const uint64_t size, BufferSizeFlag(block));
  const int32_t duration_s = DurationSeconds(10);
  // Source and destination share one mapping, the destination an odd number of pages past the
  // end of the source. Two separate mappings usually sit exactly `size` apart, so src+off and
  // dst+off would share their low address bits and compete for the same cache sets, which
  // understates memcpy by 10-30% on the machines we measured.
  constexpr uint64_t kDstSkew = 37 * 4096;
  YB_ASSIGN_OR_RETURN(MappedBuffer mapping, MappedBuffer::Create(2 * size + kDstSkew, 0x5a));
  const char* const src = mapping.data();
  char* const dst = mapping.data() + size + kDstSkew;
  std::memset(dst, 0xa5, size);

  // Look at the clock about once per MiB copied so its cost stays negligible for small blocks.
  const uint64_t copies_per_check = block >= (1u << 20) ? 1 : (1u << 20) / block;
  const uint64_t start = NowNanos();
  const uint64_t end = start + static_cast<uint64_t>(duration_s) * 1'000'000'000ull;
  uint64_t offset = 0;
  uint64_t bytes = 0;
  uint64_t now = start;
  while (now < end) {
    for (uint64_t i = 0; i < copies_per_check; ++i) {
      std::memcpy(dst + offset, src + offset, block);
      offset += block;
      if (offset + block > size) offset = 0;
    }
    asm volatile("" ::: "memory");  // the copies are observable: keep them
    bytes += copies_per_check * block;
    now = NowNanos();
  }
  const double seconds = static_cast<double>(now - start) / 1e9;

  Report report;
  report.Add("test", "memcpy");
  report.Add("block_size", block);
  report.Add("buffer_size", size);
  report.Add("seconds", seconds);
  report.Add("bytes", bytes);
  report.Add("gbps", seconds > 0 ? static_cast<double>(bytes) / seconds / 1e9 : 0.0);
  report.Print(json);
  return absl::OkStatus();
}

}  // namespace yuebing::bench
