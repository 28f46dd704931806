#include "yuebing/common/checksum.h"

#include "common/xxh3_kernel.h"

namespace yuebing {

uint64_t ObjectChecksum(absl::Span<const absl::string_view> pieces) {
  const internal::Xxh3Kernel& kernel = internal::BestXxh3Kernel();
  internal::Xxh3State state;
  kernel.reset(&state);
  for (absl::string_view piece : pieces) kernel.update(&state, piece.data(), piece.size());
  const uint64_t value = kernel.digest(&state);
  return value == kNoChecksum ? 1 : value;
}

bool ChecksumMatches(uint64_t recorded, absl::Span<const absl::string_view> pieces) {
  return recorded == kNoChecksum || ObjectChecksum(pieces) == recorded;
}

}  // namespace yuebing
