// What a peer needs to reach a segment: where its TCP server listens, which host and process own
// it (for the shared-memory path), its epoch (new on every engine start), its buffers and, when it
// serves RDMA, its NICs and every buffer's rkey on each NIC.
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
  // RDMA remote keys, one per SegmentDescriptor::rdma_nics entry in the same order; empty when the
  // owner does not serve RDMA.
  std::vector<uint32_t> rkeys;
};

// An RDMA NIC of the segment's owner, as peers need it to connect QPs and pick a rail.
struct RdmaNicDescriptor {
  std::string name;  // e.g. "mlx5_0"
  uint16_t lid = 0;  // 0 on RoCE
  std::string gid;   // 32 lowercase hex digits
};

// Most NICs a descriptor may list.
inline constexpr size_t kMaxRdmaNics = 64;

struct SegmentDescriptor {
  std::string name;  // "host:port"
  std::string tcp_host;
  uint16_t tcp_port = 0;
  std::string host_id;  // equal on two processes that can share memory through /proc/<pid>/fd
  int32_t pid = 0;
  uint64_t epoch = 0;    // random, nonzero, fixed for the engine's life
  uint64_t version = 0;  // bumped on every change of `buffers`
  std::vector<BufferDescriptor> buffers;
  std::vector<RdmaNicDescriptor> rdma_nics;  // empty: reach this segment over TCP/shm only

  // The buffer holding [addr, addr+length), or nullptr.
  const BufferDescriptor* FindBuffer(uint64_t addr, uint64_t length) const;
};

std::string EncodeSegmentDescriptor(const SegmentDescriptor& descriptor);

// Parses and validates (types, ranges, non-overlapping buffers, RDMA NICs with distinct names and
// hex GIDs, exactly one rkey per NIC on every buffer when NICs are listed and none otherwise).
// "rdma_nics" and "rkeys" are optional, so descriptors of engines without RDMA still parse.
// Errors: kInvalidArgument.
absl::StatusOr<SegmentDescriptor> DecodeSegmentDescriptor(absl::string_view json);

// Metadata-store key of a segment's descriptor.
std::string SegmentMetadataKey(absl::string_view segment_name);

}  // namespace yuebing::transport
