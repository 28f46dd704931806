// Fuzzes DecodeSegmentDescriptor (the metadata-store value and the DESCRIBE reply): any text
// decodes or fails cleanly; a decoded descriptor re-encodes to JSON that decodes equal, and
// FindBuffer agrees with the decoded buffers.
#include <cstdint>
#include <cstdlib>
#include <string>

#include "absl/strings/string_view.h"
#include "transport/segment_descriptor.h"

using yuebing::transport::BufferDescriptor;
using yuebing::transport::DecodeSegmentDescriptor;
using yuebing::transport::EncodeSegmentDescriptor;
using yuebing::transport::SegmentDescriptor;

namespace {

bool SameBuffer(const BufferDescriptor& a, const BufferDescriptor& b) {
  return a.addr == b.addr && a.length == b.length && a.location == b.location &&
         a.shm_fd == b.shm_fd && a.shm_id == b.shm_id;
}

bool SameDescriptor(const SegmentDescriptor& a, const SegmentDescriptor& b) {
  if (a.name != b.name || a.tcp_host != b.tcp_host || a.tcp_port != b.tcp_port ||
      a.host_id != b.host_id || a.pid != b.pid || a.epoch != b.epoch || a.version != b.version ||
      a.buffers.size() != b.buffers.size()) {
    return false;
  }
  for (size_t i = 0; i < a.buffers.size(); ++i) {
    if (!SameBuffer(a.buffers[i], b.buffers[i])) return false;
  }
  return true;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  absl::string_view text(reinterpret_cast<const char*>(data), size);
  absl::StatusOr<SegmentDescriptor> decoded = DecodeSegmentDescriptor(text);
  if (!decoded.ok()) return 0;
  if (decoded->name.empty() || decoded->tcp_port == 0 || decoded->epoch == 0) std::abort();
  std::string encoded = EncodeSegmentDescriptor(*decoded);
  absl::StatusOr<SegmentDescriptor> again = DecodeSegmentDescriptor(encoded);
  if (!again.ok() || !SameDescriptor(*decoded, *again)) std::abort();
  for (const BufferDescriptor& b : decoded->buffers) {
    if (decoded->FindBuffer(b.addr, b.length) != &b) std::abort();
    if (decoded->FindBuffer(b.addr + b.length - 1, 2) == &b) std::abort();
  }
  return 0;
}
