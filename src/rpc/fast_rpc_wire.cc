#include "rpc/fast_rpc_wire.h"

namespace yuebing::rpc {
namespace {

void PutU32(uint32_t value, uint8_t* out) {
  for (int i = 0; i < 4; ++i) out[i] = static_cast<uint8_t>(value >> (8 * i));
}

uint32_t GetU32(const uint8_t* in) {
  uint32_t value = 0;
  for (int i = 0; i < 4; ++i) value |= static_cast<uint32_t>(in[i]) << (8 * i);
  return value;
}

}  // namespace

void EncodeFastHeader(const FastHeader& header, uint8_t* out) {
  PutU32(kFastMagic, out);
  out[4] = header.method;
  out[5] = static_cast<uint8_t>(header.status);
  out[6] = 0;
  out[7] = 0;
  PutU32(header.length, out + 8);
}

std::optional<FastHeader> DecodeFastHeader(const uint8_t* in) {
  if (GetU32(in) != kFastMagic) return std::nullopt;
  FastHeader header;
  header.method = in[4];
  header.status = static_cast<FastStatus>(in[5]);
  header.length = GetU32(in + 8);
  if (header.length > kFastMaxPayloadBytes) return std::nullopt;
  return header;
}

}  // namespace yuebing::rpc
