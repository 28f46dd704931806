// What a peer needs to reach a segment: where its TCP server listens, which host and process own
// it (for the shared-memory path), its epoch (new on every engine start) and its buffers.
// Encoded as JSON: published to the metadata store under SegmentMetadataKey(name), or returned by
// the DESCRIBE frame in P2P mode.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace yuebing::transport {

struct BufferDescriptor {
  uint64_t addr = 0;
  uint64_t length = 0;
  std::string location;
  int32_t shm_fd = -1;  // descriptor number in the owner process of the memfd backing the buffer
  uint64_t shm_id = 0;  // unique per shm allocation of the owner; a new id means a new memfd
};

struct SegmentDescriptor {
  std::string name;  // "host:port"
  std::string tcp_host;
  uint16_t tcp_port = 0;
  std::string host_id;  // equal on two processes that can share memory through /proc/<pid>/fd
  int32_t pid = 0;
  uint64_t epoch = 0;    // random, nonzero, fixed for the engine's life
  uint64_t version = 0;  // bumped on every change of `buffers`
  std::vector<BufferDescriptor> buffers;

  // The buffer holding [addr, addr+length), or nullptr.
  const BufferDescriptor* FindBuffer(uint64_t addr, uint64_t length) const;
};

std::string EncodeSegmentDescriptor(const SegmentDescriptor& descriptor);

// Parses and validates (types, ranges, non-overlapping buffers). Errors: kInvalidArgument.
absl::StatusOr<SegmentDescriptor> DecodeSegmentDescriptor(absl::string_view json);

// Metadata-store key of a segment's descriptor.
std::string SegmentMetadataKey(absl::string_view segment_name);

}  // namespace yuebing::transport
