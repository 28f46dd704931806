// The master's fast path: the hot calls of master.proto (the messages themselves, serialized)
// in length-prefixed frames over a plain TCP connection, one call at a time per connection, so a
// call costs one request write and one reply read instead of gRPC's HTTP/2 machinery.
//
//   request: header {magic, method, status 0, length} + the serialized request message
//   reply:   header {magic, method (echoed), status, length} + the serialized reply message
//
// A reply whose status is not kOk carries no message; the client treats it as a failed call in
// transport (the request did not reach the MasterService). The master advertises the port in
// DescribeReply.fast_rpc_port and serves it only without a cluster secret and TLS: the frames
// carry no credential and travel in clear text.
//
// Header fields are little-endian. Thread safety: plain functions on caller-owned buffers.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>

namespace yuebing::rpc {

enum class FastMethod : uint8_t {
  kBatchPutStart = 1,        // BatchPutStartRequest -> BatchPutStartReply
  kBatchPutEnd = 2,          // BatchPutEndRequest -> BatchStatusReply
  kBatchPutRevoke = 3,       // BatchKeysRequest -> BatchStatusReply
  kBatchGetReplicaList = 4,  // BatchKeysRequest -> BatchGetReplicaListReply
  kBatchExist = 5,           // BatchKeysRequest -> BatchExistReply
  kBatchRemove = 6,          // BatchKeysRequest -> BatchStatusReply
  kReleaseLeases = 7,        // ReleaseLeasesRequest -> ReleaseLeasesReply
  kPullJournal = 8,  // PullJournalRequest -> PullJournalReply (a long poll: held up to wait_ms)
};

enum class FastStatus : uint8_t {
  kOk = 0,
  kUnknownMethod = 1,  // a method this master does not serve on the fast path
  kBadRequest = 2,     // the message did not parse
  kShuttingDown = 3,   // the master is stopping
  // The call ran but its reply is over kFastMaxPayloadBytes: the caller must not run it again
  // another way (the only refusal that comes after the call ran).
  kReplyTooLarge = 4,
};

inline constexpr uint32_t kFastMagic = 0x31464259;  // "YBF1"
inline constexpr size_t kFastHeaderBytes = 12;
// The largest message either way, as for gRPC (GrpcMasterServer::Options::max_message_bytes).
inline constexpr uint32_t kFastMaxPayloadBytes = 64u << 20;

struct FastHeader {
  uint8_t method = 0;
  FastStatus status = FastStatus::kOk;
  uint32_t length = 0;  // bytes of message after the header
};

// Writes `header` into out[0, kFastHeaderBytes).
void EncodeFastHeader(const FastHeader& header, uint8_t* out);
// Reads a header; nullopt when the magic is wrong or the length is over kFastMaxPayloadBytes (the
// connection cannot be trusted after that and is closed).
std::optional<FastHeader> DecodeFastHeader(const uint8_t* in);

}  // namespace yuebing::rpc
