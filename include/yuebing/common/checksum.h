// The object checksum rule, shared by every writer and reader of object bytes: the store client
// computes it over the bytes it puts and records it with PutEnd; the client's reads (memory and
// disk replicas) and the disk tier's spill copies verify against the recorded value.
//
// Rule: XXH3-64 (seed 0) over the object's bytes in order, where an object written from several
// pieces is their concatenation. XXH3's value 0 is recorded as 1, because kNoChecksum (0) means
// "no checksum recorded" (a writer with checksums off): such an object is never verified.
//
// FileStore's own header and value hashes belong to its file format, not to this rule.
//
// Thread-safe (pure functions).
#pragma once

#include <cstdint>

#include "absl/strings/string_view.h"
#include "absl/types/span.h"

namespace yuebing {

// The recorded value meaning "the writer recorded no checksum; do not verify".
inline constexpr uint64_t kNoChecksum = 0;

// The checksum of the concatenation of `pieces`; never kNoChecksum.
uint64_t ObjectChecksum(absl::Span<const absl::string_view> pieces);
inline uint64_t ObjectChecksum(absl::string_view bytes) {
  return ObjectChecksum(absl::MakeConstSpan(&bytes, 1));
}

// True when `recorded` is kNoChecksum or equals the checksum of `pieces`: the bytes may be served.
bool ChecksumMatches(uint64_t recorded, absl::Span<const absl::string_view> pieces);
inline bool ChecksumMatches(uint64_t recorded, absl::string_view bytes) {
  return ChecksumMatches(recorded, absl::MakeConstSpan(&bytes, 1));
}

}  // namespace yuebing
