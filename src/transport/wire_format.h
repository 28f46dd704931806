// The TCP transport's frame format. Every frame starts with a fixed 40-byte little-endian header;
// WRITE requests and READ replies are followed by `length` payload bytes, HELLO requests by the
// expected segment name, DESCRIBE replies by the segment descriptor JSON, RDMA_CONNECT frames and
// their replies by QP information, READ_OBJECT requests by the object's key and their OK replies
// by the object's bytes.
//
// A connection must start with HELLO (naming the target segment and the epoch the initiator
// expects) before any READ, WRITE, READ_OBJECT or RDMA_CONNECT; DESCRIBE is allowed first (the P2P
// handshake).
// Replies come in request order. With a cluster secret, the connection starts instead with the
// mutual challenge-response AUTH_HELLO -> AUTH_CHALLENGE -> AUTH_PROOF -> AUTH_RESULT (tcp_auth.h);
// any other frame before it succeeds is answered with kUnauthenticated and the connection is
// closed. A malformed header (bad magic/version/type, oversize length) makes the receiver close the
// connection: the stream cannot be trusted after it.
#pragma once

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "yuebing/common/limits.h"

namespace yuebing::transport {

inline constexpr uint32_t kFrameMagic = 0x31544259;  // "YBT1"
inline constexpr uint8_t kFrameVersion = 1;
inline constexpr size_t kFrameHeaderBytes = 40;
// Largest payload of one READ/WRITE frame; slices are much smaller.
inline constexpr uint64_t kMaxDataFrameBytes = 1ull << 30;
// Largest HELLO name / DESCRIBE reply.
inline constexpr uint64_t kMaxNameBytes = 1024;
inline constexpr uint64_t kMaxDescriptorBytes = 16ull << 20;
inline constexpr uint64_t kMaxRdmaConnectBytes = 64ull << 10;
// Largest key of a READ_OBJECT request (a scoped key: limits::kMaxScopedKeyBytes).
inline constexpr uint64_t kMaxObjectKeyBytes = limits::kMaxScopedKeyBytes;

enum class FrameType : uint8_t {
  kHello = 1,
  kHelloReply = 2,
  kWrite = 3,
  kWriteReply = 4,
  kRead = 5,
  kReadReply = 6,
  kDescribe = 7,
  kDescribeReply = 8,
  kAuthHello = 9,       // payload: initiator nonce
  kAuthChallenge = 10,  // payload: target nonce + target proof (status kUnauthenticated: no secret)
  kAuthProof = 11,      // payload: initiator proof
  kAuthResult = 12,     // no payload; status says whether the initiator was accepted
  // RDMA QP exchange (after HELLO): request and reply carry QP info as JSON (rdma/qp_exchange.h);
  // a reply with a non-OK status carries an error message instead.
  kRdmaConnect = 13,
  kRdmaConnectReply = 14,
  // Read a whole object by key from the target's object source (after HELLO). Request: addr = the
  // reader's capacity in bytes, payload = the key. Reply: addr = the object's size (also when it
  // does not fit: status kTooSmall), payload = the object's bytes when the status is kOk.
  kReadObject = 15,
  kReadObjectReply = 16,
};

// Payload sizes of the authentication frames.
inline constexpr uint64_t kAuthNonceBytes = 32;
inline constexpr uint64_t kAuthMacBytes = 32;

// Outcome carried by reply frames.
enum class WireStatus : int32_t {
  kOk = 0,
  kOutOfRange = 1,     // address range not inside one registered buffer
  kStaleEpoch = 2,     // HELLO named another segment or an older epoch
  kProtocolError = 3,  // request not allowed in this state
  kInternal = 4,
  kUnauthenticated = 5,  // cluster secret missing on one side, or different
  kNotFound = 6,         // READ_OBJECT: the target's object source has no such key
  kTooSmall = 7,         // READ_OBJECT: the object is larger than the reader's capacity
  kNoObjectSource = 8,   // READ_OBJECT: the target serves no objects by key
  kCorrupt = 9,          // READ_OBJECT: the target's copy failed its verification (not served)
};

struct FrameHeader {
  FrameType type = FrameType::kHello;
  uint16_t flags = 0;
  WireStatus status = WireStatus::kOk;
  uint64_t request_id = 0;
  // Target address (READ/WRITE); epoch (HELLO, HELLO reply); capacity (READ_OBJECT); object size
  // (READ_OBJECT reply).
  uint64_t addr = 0;
  uint64_t length = 0;  // payload length that follows (or that is asked for, for READ)
};

void EncodeFrameHeader(const FrameHeader& header, uint8_t out[kFrameHeaderBytes]);

// Validates magic, version, type, status and the length bound of the frame's type.
// Errors: kInvalidArgument describing what is wrong.
absl::StatusOr<FrameHeader> DecodeFrameHeader(const uint8_t in[kFrameHeaderBytes]);

// Human-readable meaning of a reply status.
const char* WireStatusText(WireStatus status);

}  // namespace yuebing::transport
