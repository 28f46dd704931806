#include "yuebing/common/checksum.h"

#define XXH_STATIC_LINKING_ONLY  // XXH3_state_t on the stack
#include <xxhash.h>

namespace yuebing {

uint64_t ObjectChecksum(absl::Span<const absl::string_view> pieces) {
  XXH3_state_t state;
  XXH3_64bits_reset(&state);
  for (absl::string_view piece : pieces) XXH3_64bits_update(&state, piece.data(), piece.size());
  const uint64_t value = XXH3_64bits_digest(&state);
  return value == kNoChecksum ? 1 : value;
}

bool ChecksumMatches(uint64_t recorded, absl::Span<const absl::string_view> pieces) {
  return recorded == kNoChecksum || ObjectChecksum(pieces) == recorded;
}

}  // namespace yuebing
