// Fuzzes DecodeFrameHeader: any 40 bytes decode or fail cleanly; a decoded header re-encodes to
// the same bytes (except the reserved word) and decodes to the same fields.
#include <cstdint>
#include <cstdlib>
#include <cstring>

#include "transport/wire_format.h"

using yuebing::transport::DecodeFrameHeader;
using yuebing::transport::EncodeFrameHeader;
using yuebing::transport::FrameHeader;
using yuebing::transport::kFrameHeaderBytes;

namespace {

bool SameHeader(const FrameHeader& a, const FrameHeader& b) {
  return a.type == b.type && a.flags == b.flags && a.status == b.status &&
         a.request_id == b.request_id && a.addr == b.addr && a.length == b.length;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  uint8_t in[kFrameHeaderBytes] = {};
  std::memcpy(in, data, size < kFrameHeaderBytes ? size : kFrameHeaderBytes);
  absl::StatusOr<FrameHeader> header = DecodeFrameHeader(in);
  if (!header.ok()) return 0;
  uint8_t out[kFrameHeaderBytes];
  EncodeFrameHeader(*header, out);
  if (std::memcmp(in, out, 12) != 0 || std::memcmp(in + 16, out + 16, 24) != 0) std::abort();
  absl::StatusOr<FrameHeader> again = DecodeFrameHeader(out);
  if (!again.ok() || !SameHeader(*header, *again)) std::abort();
  (void)yuebing::transport::WireStatusText(header->status);
  return 0;
}
