// The transport's optional cluster secret over real sockets on 127.0.0.1: matching secrets move
// bytes (TCP and same-host shm); a stranger without the secret, one with another secret, and a
// mismatch in either direction are refused with clear errors and the target's memory stays
// untouched; a silent connection is dropped after the handshake deadline; a target in another
// process reads its secret from the environment.
#include <gtest/gtest.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstring>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "engine_test_util.h"
#include "support/child_process.h"
#include "transport/metadata_store.h"
#include "transport/segment_descriptor.h"
#include "transport/socket_util.h"
#include "transport/tcp_auth.h"
#include "transport/wire_format.h"
#include "yuebing/common/http_metadata_server.h"
#include "yuebing/transport/transfer_engine.h"

namespace yuebing::transport {
namespace {

using testing::FillPattern;
using testing::MatchesPattern;
using testing::Request;

const std::string kSecret = "correct horse battery staple 42";
const std::string kOtherSecret = "another cluster's secret value";
constexpr size_t kBufferBytes = 1 << 20;

std::unique_ptr<TransferEngine> Engine(
    const std::string& secret, const std::string& metadata = "P2PHANDSHAKE",
    std::chrono::milliseconds handshake_timeout = std::chrono::milliseconds(5000)) {
  TransferEngineOptions options;
  options.metadata_conn = metadata;
  options.local_server_name = "127.0.0.1";
  options.request_timeout = std::chrono::milliseconds(10000);
  options.cluster_secret = secret;
  options.auth_handshake_timeout = handshake_timeout;
  auto engine = TransferEngine::Create(options);
  EXPECT_TRUE(engine.ok()) << engine.status();
  return engine.ok() ? std::move(engine).value() : nullptr;
}

// A target engine with one zeroed heap buffer.
struct Target {
  std::unique_ptr<TransferEngine> engine;
  std::vector<char> memory = std::vector<char>(kBufferBytes, 0);
  uint64_t addr() const { return reinterpret_cast<uint64_t>(memory.data()); }
  bool Untouched() const {
    for (char c : memory) {
      if (c != 0) return false;
    }
    return true;
  }
};

Target MakeTarget(const std::string& secret,
                  std::chrono::milliseconds handshake_timeout = std::chrono::milliseconds(5000)) {
  Target target;
  target.engine = Engine(secret, "P2PHANDSHAKE", handshake_timeout);
  if (target.engine != nullptr) {
    EXPECT_TRUE(target.engine->RegisterLocalMemory(target.memory.data(), kBufferBytes).ok());
  }
  return target;
}

int ConnectRaw(const TransferEngine& target) {
  auto fd = ConnectTcp("127.0.0.1", target.RpcPort(), std::chrono::milliseconds(3000));
  EXPECT_TRUE(fd.ok()) << fd.status();
  if (!fd.ok()) return -1;
  timeval tv{10, 0};  // bounds every read below
  setsockopt(*fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
  return *fd;
}

// Sends HELLO followed at once by a WRITE of `length` 0xAB bytes to `addr`.
void SendHelloAndWrite(int fd, const std::string& segment, uint64_t addr, size_t length) {
  uint8_t bytes[kFrameHeaderBytes];
  FrameHeader hello;
  hello.type = FrameType::kHello;
  hello.length = segment.size();
  EncodeFrameHeader(hello, bytes);
  std::string out(reinterpret_cast<char*>(bytes), kFrameHeaderBytes);
  out += segment;
  FrameHeader write;
  write.type = FrameType::kWrite;
  write.request_id = 1;
  write.addr = addr;
  write.length = length;
  EncodeFrameHeader(write, bytes);
  out.append(reinterpret_cast<char*>(bytes), kFrameHeaderBytes);
  out.append(length, static_cast<char>(0xAB));
  (void)SendAll(fd, out.data(), out.size());  // the target may close before reading it all
}

// True when the peer closed the connection (EOF or reset) before the socket's read timeout.
bool ClosedByPeer(int fd) {
  char byte;
  while (true) {
    ssize_t n = recv(fd, &byte, 1, 0);
    if (n == 0) return true;
    if (n < 0) return errno == ECONNRESET;
  }
}

TEST(TransportAuthTest, MatchingSecretsMoveBytes) {
  Target target = MakeTarget(kSecret);
  auto initiator = Engine(kSecret);
  ASSERT_NE(target.engine, nullptr);
  ASSERT_NE(initiator, nullptr);
  auto handle = initiator->OpenSegment(target.engine->LocalSegmentName());
  ASSERT_TRUE(handle.ok()) << handle.status();
  std::vector<char> data(kBufferBytes);
  FillPattern(data.data(), data.size(), 7);
  ASSERT_TRUE(initiator
                  ->TransferSync(
                      {Request(OpCode::kWrite, data.data(), *handle, target.addr(), data.size())})
                  .ok());
  EXPECT_TRUE(MatchesPattern(target.memory.data(), kBufferBytes, 7));
  std::vector<char> back(kBufferBytes, 0);
  ASSERT_TRUE(
      initiator
          ->TransferSync({Request(OpCode::kRead, back.data(), *handle, target.addr(), back.size())})
          .ok());
  EXPECT_TRUE(MatchesPattern(back.data(), back.size(), 7));
  EXPECT_GT(initiator->Stats().tcp_bytes, 0u);
}

TEST(TransportAuthTest, InitiatorWithoutSecretIsRefused) {
  Target target = MakeTarget(kSecret);
  auto stranger = Engine("");
  ASSERT_NE(target.engine, nullptr);
  ASSERT_NE(stranger, nullptr);
  // The P2P handshake (DESCRIBE) is refused: the stranger never learns the buffers.
  auto handle = stranger->OpenSegment(target.engine->LocalSegmentName());
  ASSERT_FALSE(handle.ok());
  EXPECT_TRUE(absl::StrContains(handle.status().message(), "requires cluster authentication"))
      << handle.status();
  EXPECT_TRUE(target.Untouched());
}

TEST(TransportAuthTest, RawWriteWithoutHandshakeNeverReachesMemory) {
  Target target = MakeTarget(kSecret);
  ASSERT_NE(target.engine, nullptr);
  int fd = ConnectRaw(*target.engine);
  ASSERT_GE(fd, 0);
  SendHelloAndWrite(fd, target.engine->LocalSegmentName(), target.addr(), 4096);
  uint8_t bytes[kFrameHeaderBytes];
  ASSERT_TRUE(RecvAll(fd, bytes, kFrameHeaderBytes).ok());
  auto reply = DecodeFrameHeader(bytes);
  ASSERT_TRUE(reply.ok()) << reply.status();
  EXPECT_EQ(reply->type, FrameType::kHelloReply);
  EXPECT_EQ(reply->status, WireStatus::kUnauthenticated);
  EXPECT_TRUE(ClosedByPeer(fd));
  CloseFd(fd);
  EXPECT_TRUE(target.Untouched());
}

TEST(TransportAuthTest, WrongSecretIsRefusedBothWays) {
  Target target = MakeTarget(kSecret);
  auto stranger = Engine(kOtherSecret);
  ASSERT_NE(target.engine, nullptr);
  ASSERT_NE(stranger, nullptr);
  auto handle = stranger->OpenSegment(target.engine->LocalSegmentName());
  ASSERT_FALSE(handle.ok());
  EXPECT_EQ(handle.status().code(), absl::StatusCode::kPermissionDenied) << handle.status();
  EXPECT_TRUE(absl::StrContains(handle.status().message(), "does not know this cluster's secret"))
      << handle.status();

  // A forged initiator proof (the stranger ignores the target's failed proof and answers anyway)
  // is refused by the target, and what follows never reaches memory.
  int fd = ConnectRaw(*target.engine);
  ASSERT_GE(fd, 0);
  uint8_t bytes[kFrameHeaderBytes];
  FrameHeader hello;
  hello.type = FrameType::kAuthHello;
  hello.length = kAuthNonceBytes;
  EncodeFrameHeader(hello, bytes);
  std::string out(reinterpret_cast<char*>(bytes), kFrameHeaderBytes);
  out.append(kAuthNonceBytes, 'n');
  ASSERT_TRUE(SendAll(fd, out.data(), out.size()).ok());
  ASSERT_TRUE(RecvAll(fd, bytes, kFrameHeaderBytes).ok());
  auto challenge = DecodeFrameHeader(bytes);
  ASSERT_TRUE(challenge.ok());
  ASSERT_EQ(challenge->type, FrameType::kAuthChallenge);
  ASSERT_EQ(challenge->status, WireStatus::kOk);
  std::string payload(challenge->length, '\0');
  ASSERT_TRUE(RecvAll(fd, payload.data(), payload.size()).ok());
  FrameHeader proof;
  proof.type = FrameType::kAuthProof;
  proof.length = kAuthMacBytes;
  EncodeFrameHeader(proof, bytes);
  out.assign(reinterpret_cast<char*>(bytes), kFrameHeaderBytes);
  out.append(kAuthMacBytes, 'p');
  ASSERT_TRUE(SendAll(fd, out.data(), out.size()).ok());
  ASSERT_TRUE(RecvAll(fd, bytes, kFrameHeaderBytes).ok());
  auto result = DecodeFrameHeader(bytes);
  ASSERT_TRUE(result.ok());
  EXPECT_EQ(result->type, FrameType::kAuthResult);
  EXPECT_EQ(result->status, WireStatus::kUnauthenticated);
  SendHelloAndWrite(fd, target.engine->LocalSegmentName(), target.addr(), 4096);
  EXPECT_TRUE(ClosedByPeer(fd));
  CloseFd(fd);
  EXPECT_TRUE(target.Untouched());
}

TEST(TransportAuthTest, ObjectsByKeyNeedTheSecret) {
  Target target = MakeTarget(kSecret);
  ASSERT_NE(target.engine, nullptr);
  std::atomic<int> source_calls{0};
  target.engine->SetObjectSource([&](absl::string_view key) -> absl::StatusOr<std::string> {
    ++source_calls;
    if (key != "spilled") return absl::NotFoundError("no such key");
    return std::string("secret bytes of a spilled object");
  });
  const std::string name = target.engine->LocalSegmentName();
  const auto deadline = [] { return std::chrono::steady_clock::now() + std::chrono::seconds(5); };
  std::string out(64, '\0');

  auto friendly = Engine(kSecret);
  ASSERT_NE(friendly, nullptr);
  absl::StatusOr<uint64_t> size =
      friendly->ReadObject(name, "spilled", out.data(), out.size(), deadline());
  ASSERT_TRUE(size.ok()) << size.status();
  EXPECT_EQ(out.substr(0, *size), "secret bytes of a spilled object");
  EXPECT_EQ(source_calls, 1);

  for (const std::string& secret : {kOtherSecret, std::string()}) {
    auto stranger = Engine(secret);
    ASSERT_NE(stranger, nullptr);
    std::string stolen(64, '\0');
    size = stranger->ReadObject(name, "spilled", stolen.data(), stolen.size(), deadline());
    EXPECT_EQ(size.status().code(), absl::StatusCode::kPermissionDenied) << size.status();
    EXPECT_EQ(stolen, std::string(64, '\0'));
  }

  // A raw READ_OBJECT without the handshake gets kUnauthenticated and a closed connection.
  int fd = ConnectRaw(*target.engine);
  ASSERT_GE(fd, 0);
  uint8_t bytes[kFrameHeaderBytes];
  FrameHeader request;
  request.type = FrameType::kReadObject;
  request.addr = 1 << 20;
  request.length = 7;
  EncodeFrameHeader(request, bytes);
  std::string frame(reinterpret_cast<char*>(bytes), kFrameHeaderBytes);
  frame += "spilled";
  ASSERT_TRUE(SendAll(fd, frame.data(), frame.size()).ok());
  ASSERT_TRUE(RecvAll(fd, bytes, kFrameHeaderBytes).ok());
  auto reply = DecodeFrameHeader(bytes);
  ASSERT_TRUE(reply.ok()) << reply.status();
  EXPECT_EQ(reply->type, FrameType::kReadObjectReply);
  EXPECT_EQ(reply->status, WireStatus::kUnauthenticated);
  EXPECT_EQ(reply->length, 0u);
  EXPECT_TRUE(ClosedByPeer(fd));
  CloseFd(fd);
  EXPECT_EQ(source_calls, 1);  // the strangers never reached the source
  target.engine->SetObjectSource(nullptr);
}

TEST(TransportAuthTest, TargetWithoutSecretIsRefusedByInitiatorWithOne) {
  Target target = MakeTarget("");
  auto initiator = Engine(kSecret);
  ASSERT_NE(target.engine, nullptr);
  ASSERT_NE(initiator, nullptr);
  auto handle = initiator->OpenSegment(target.engine->LocalSegmentName());
  ASSERT_FALSE(handle.ok());
  EXPECT_EQ(handle.status().code(), absl::StatusCode::kPermissionDenied) << handle.status();
  EXPECT_TRUE(absl::StrContains(handle.status().message(), "has no cluster secret configured"))
      << handle.status();
}

TEST(TransportAuthTest, WithoutSecretsTheProtocolIsUnchanged) {
  Target target = MakeTarget("");
  auto initiator = Engine("");
  ASSERT_NE(target.engine, nullptr);
  ASSERT_NE(initiator, nullptr);
  auto handle = initiator->OpenSegment(target.engine->LocalSegmentName());
  ASSERT_TRUE(handle.ok()) << handle.status();
  std::vector<char> data(4096);
  FillPattern(data.data(), data.size(), 3);
  ASSERT_TRUE(initiator
                  ->TransferSync(
                      {Request(OpCode::kWrite, data.data(), *handle, target.addr(), data.size())})
                  .ok());
  EXPECT_TRUE(MatchesPattern(target.memory.data(), data.size(), 3));
  // A raw HELLO + WRITE (the unauthenticated protocol) is served as before.
  int fd = ConnectRaw(*target.engine);
  ASSERT_GE(fd, 0);
  SendHelloAndWrite(fd, target.engine->LocalSegmentName(), target.addr() + 8192, 16);
  uint8_t bytes[kFrameHeaderBytes];
  ASSERT_TRUE(RecvAll(fd, bytes, kFrameHeaderBytes).ok());
  EXPECT_EQ(DecodeFrameHeader(bytes)->status, WireStatus::kOk);
  ASSERT_TRUE(RecvAll(fd, bytes, kFrameHeaderBytes).ok());
  EXPECT_EQ(DecodeFrameHeader(bytes)->type, FrameType::kWriteReply);
  EXPECT_EQ(DecodeFrameHeader(bytes)->status, WireStatus::kOk);
  CloseFd(fd);
  EXPECT_EQ(static_cast<uint8_t>(target.memory[8192]), 0xAB);
}

TEST(TransportAuthTest, SilentConnectionIsDroppedAfterHandshakeDeadline) {
  for (const std::string& secret : {kSecret, std::string()}) {
    Target target = MakeTarget(secret, std::chrono::milliseconds(300));
    ASSERT_NE(target.engine, nullptr);
    int fd = ConnectRaw(*target.engine);  // reads give up after 10 s, far past the deadline
    ASSERT_GE(fd, 0);
    EXPECT_TRUE(ClosedByPeer(fd)) << "secret set: " << !secret.empty();
    CloseFd(fd);
  }
}

// Same host: the shm path is used only after the authenticated DESCRIBE, and a metadata server
// never sees the memfd numbers when a secret is set.
TEST(TransportAuthTest, SharedMemoryNeedsTheHandshake) {
  auto metadata = HttpMetadataServer::Start("127.0.0.1", 0);
  ASSERT_TRUE(metadata.ok()) << metadata.status();
  for (const std::string& conn :
       {std::string("P2PHANDSHAKE"),
        absl::StrCat("http://127.0.0.1:", (*metadata)->port(), "/metadata")}) {
    SCOPED_TRACE(conn);
    auto target = Engine(kSecret, conn);
    ASSERT_NE(target, nullptr);
    auto shm = target->AllocateSharedMemory(kBufferBytes);
    ASSERT_TRUE(shm.ok()) << shm.status();
    std::memset(*shm, 0, kBufferBytes);
    const uint64_t addr = reinterpret_cast<uint64_t>(*shm);

    auto stranger = Engine(kOtherSecret, conn);
    ASSERT_NE(stranger, nullptr);
    // With a metadata server too: a same-host peer fetches the full descriptor by DESCRIBE.
    auto refused = stranger->OpenSegment(target->LocalSegmentName());
    EXPECT_FALSE(refused.ok());
    EXPECT_EQ(stranger->Stats().shm_bytes, 0u);

    auto initiator = Engine(kSecret, conn);
    ASSERT_NE(initiator, nullptr);
    auto handle = initiator->OpenSegment(target->LocalSegmentName());
    ASSERT_TRUE(handle.ok()) << handle.status();
    std::vector<char> data(64 << 10);
    FillPattern(data.data(), data.size(), 11);
    ASSERT_TRUE(
        initiator->TransferSync({Request(OpCode::kWrite, data.data(), *handle, addr, data.size())})
            .ok());
    EXPECT_TRUE(MatchesPattern(*shm, data.size(), 11));
    EXPECT_EQ(initiator->Stats().shm_bytes, data.size());
  }
}

// The published descriptor, fetched straight from the metadata server, names no memfd.
TEST(TransportAuthTest, MetadataServerNeverSeesMemfds) {
  auto metadata = HttpMetadataServer::Start("127.0.0.1", 0);
  ASSERT_TRUE(metadata.ok()) << metadata.status();
  const std::string conn = absl::StrCat("http://127.0.0.1:", (*metadata)->port(), "/metadata");
  auto target = Engine(kSecret, conn);
  ASSERT_NE(target, nullptr);
  ASSERT_TRUE(target->AllocateSharedMemory(kBufferBytes).ok());
  auto store = CreateMetadataStore(conn, std::chrono::milliseconds(3000));
  ASSERT_TRUE(store.ok()) << store.status();
  auto text = (*store)->Get(SegmentMetadataKey(target->LocalSegmentName()));
  ASSERT_TRUE(text.ok()) << text.status();
  auto descriptor = DecodeSegmentDescriptor(*text);
  ASSERT_TRUE(descriptor.ok()) << descriptor.status();
  ASSERT_EQ(descriptor->buffers.size(), 1u);
  EXPECT_EQ(descriptor->buffers[0].shm_fd, -1);
}

// A target in another process takes its secret from $YUEBING_CLUSTER_SECRET.
TEST(TransportAuthTest, TargetProcessReadsSecretFromEnvironment) {
  ASSERT_EQ(setenv("YUEBING_CLUSTER_SECRET", kSecret.c_str(), 1), 0);
  auto child = test_support::ChildProcess::Start(
      {test_support::BuildPath("tests/transport/yb_test_target"), "--size=1048576"});
  unsetenv("YUEBING_CLUSTER_SECRET");
  ASSERT_TRUE(child.ok()) << child.status();
  auto line = (*child)->WaitForLine("READY ", std::chrono::seconds(30));
  ASSERT_TRUE(line.ok()) << line.status();
  std::istringstream in(line->substr(6));
  std::string segment;
  uint64_t addr = 0;
  size_t length = 0;
  in >> segment >> addr >> length;
  ASSERT_GE(length, 4096u);

  auto stranger = Engine("");
  ASSERT_NE(stranger, nullptr);
  EXPECT_FALSE(stranger->OpenSegment(segment).ok());
  auto wrong = Engine(kOtherSecret);
  ASSERT_NE(wrong, nullptr);
  EXPECT_FALSE(wrong->OpenSegment(segment).ok());

  auto initiator = Engine(kSecret);
  ASSERT_NE(initiator, nullptr);
  auto handle = initiator->OpenSegment(segment);
  ASSERT_TRUE(handle.ok()) << handle.status();
  std::vector<char> zeros(4096, 1);
  ASSERT_TRUE(
      initiator->TransferSync({Request(OpCode::kRead, zeros.data(), *handle, addr, 4096)}).ok());
  EXPECT_EQ(std::count(zeros.begin(), zeros.end(), 0), 4096) << "refused peers wrote nothing";
  std::vector<char> data(4096);
  FillPattern(data.data(), data.size(), 5);
  ASSERT_TRUE(
      initiator->TransferSync({Request(OpCode::kWrite, data.data(), *handle, addr, 4096)}).ok());
  std::vector<char> back(4096, 0);
  ASSERT_TRUE(
      initiator->TransferSync({Request(OpCode::kRead, back.data(), *handle, addr, 4096)}).ok());
  EXPECT_TRUE(MatchesPattern(back.data(), back.size(), 5));
  (*child)->Signal(SIGTERM);
  EXPECT_TRUE((*child)->Wait(std::chrono::seconds(20)).ok());
}

}  // namespace
}  // namespace yuebing::transport
