#include "transport/wire_format.h"

#include <bit>
#include <cstring>

#include "absl/strings/str_cat.h"

namespace yuebing::transport {
namespace {

static_assert(std::endian::native == std::endian::little,
              "frames are little-endian; a big-endian port needs byte swaps here");

template <typename T>
void Put(uint8_t* out, size_t offset, T value) {
  std::memcpy(out + offset, &value, sizeof(T));
}

template <typename T>
T Get(const uint8_t* in, size_t offset) {
  T value;
  std::memcpy(&value, in + offset, sizeof(T));
  return value;
}

uint64_t MaxPayload(FrameType type) {
  switch (type) {
    case FrameType::kHello:
      return kMaxNameBytes;
    case FrameType::kWrite:
    case FrameType::kReadReply:
      return kMaxDataFrameBytes;
    case FrameType::kDescribeReply:
      return kMaxDescriptorBytes;
    case FrameType::kAuthHello:
    case FrameType::kAuthProof:
      return kAuthNonceBytes;
    case FrameType::kAuthChallenge:
      return kAuthNonceBytes + kAuthMacBytes;
    case FrameType::kRdmaConnect:
    case FrameType::kRdmaConnectReply:
      return kMaxRdmaConnectBytes;
    case FrameType::kRead:  // length is what is asked for, no payload follows
    case FrameType::kReadObjectReply:
      return kMaxDataFrameBytes;
    case FrameType::kReadObject:
      return kMaxObjectKeyBytes;
    default:
      return 0;
  }
}

}  // namespace

void EncodeFrameHeader(const FrameHeader& header, uint8_t out[kFrameHeaderBytes]) {
  Put<uint32_t>(out, 0, kFrameMagic);
  Put<uint8_t>(out, 4, kFrameVersion);
  Put<uint8_t>(out, 5, static_cast<uint8_t>(header.type));
  Put<uint16_t>(out, 6, header.flags);
  Put<int32_t>(out, 8, static_cast<int32_t>(header.status));
  Put<uint32_t>(out, 12, 0);
  Put<uint64_t>(out, 16, header.request_id);
  Put<uint64_t>(out, 24, header.addr);
  Put<uint64_t>(out, 32, header.length);
}

absl::StatusOr<FrameHeader> DecodeFrameHeader(const uint8_t in[kFrameHeaderBytes]) {
  if (uint32_t magic = Get<uint32_t>(in, 0); magic != kFrameMagic) {
    return absl::InvalidArgumentError(absl::StrCat("bad frame magic 0x", absl::Hex(magic)));
  }
  if (uint8_t version = Get<uint8_t>(in, 4); version != kFrameVersion) {
    return absl::InvalidArgumentError(absl::StrCat("unsupported frame version ", version));
  }
  uint8_t type = Get<uint8_t>(in, 5);
  if (type < static_cast<uint8_t>(FrameType::kHello) ||
      type > static_cast<uint8_t>(FrameType::kReadObjectReply)) {
    return absl::InvalidArgumentError(absl::StrCat("unknown frame type ", type));
  }
  int32_t status = Get<int32_t>(in, 8);
  if (status < 0 || status > static_cast<int32_t>(WireStatus::kCorrupt)) {
    return absl::InvalidArgumentError(absl::StrCat("unknown frame status ", status));
  }
  FrameHeader header;
  header.type = static_cast<FrameType>(type);
  header.flags = Get<uint16_t>(in, 6);
  header.status = static_cast<WireStatus>(status);
  header.request_id = Get<uint64_t>(in, 16);
  header.addr = Get<uint64_t>(in, 24);
  header.length = Get<uint64_t>(in, 32);
  if (header.length > MaxPayload(header.type)) {
    return absl::InvalidArgumentError(
        absl::StrCat("frame length ", header.length, " over the limit for type ", type));
  }
  return header;
}

const char* WireStatusText(WireStatus status) {
  switch (status) {
    case WireStatus::kOk:
      return "ok";
    case WireStatus::kOutOfRange:
      return "address range is not inside a registered buffer of the target";
    case WireStatus::kStaleEpoch:
      return "target segment name or epoch differs (peer restarted?)";
    case WireStatus::kProtocolError:
      return "protocol error";
    case WireStatus::kInternal:
      return "internal error at the target";
    case WireStatus::kUnauthenticated:
      return "cluster authentication failed (secret missing on one side, or different)";
    case WireStatus::kNotFound:
      return "no object with this key at the target";
    case WireStatus::kTooSmall:
      return "the object is larger than the reader's buffer";
    case WireStatus::kNoObjectSource:
      return "the target serves no objects by key";
    case WireStatus::kCorrupt:
      return "the target's copy of the object failed verification";
  }
  return "unknown";
}

}  // namespace yuebing::transport
