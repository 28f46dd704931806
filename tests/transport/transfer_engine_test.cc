// In-process tests of the transfer engine: two engines in one process talking over real sockets on
// 127.0.0.1 (TCP path), through shared memory, and locally.
#include "yuebing/transport/transfer_engine.h"

#include <gtest/gtest.h>
#include <sys/socket.h>

#include <array>
#include <atomic>
#include <cstdlib>
#include <thread>

#include "engine_test_util.h"
#include "transport/socket_util.h"
#include "transport/tcp_peer.h"
#include "transport/wire_format.h"
#include "yuebing/common/http_metadata_server.h"

namespace yuebing::transport {
namespace {

using testing::EnginePair;
using testing::FillPattern;
using testing::MakeEngine;
using testing::MatchesPattern;
using testing::Path;
using testing::Request;

class RoundTripTest : public ::testing::TestWithParam<Path> {};

TEST_P(RoundTripTest, WriteThenReadBackAcrossBlockSizes) {
  constexpr size_t kMax = 64 << 20;
  EnginePair pair(GetParam(), kMax + 8192);
  std::vector<char> out(kMax), in(kMax);
  for (size_t size : {size_t{4096}, size_t{65536}, size_t{1} << 20, size_t{3} << 20 | 17,
                      size_t{16} << 20, kMax}) {
    SCOPED_TRACE(size);
    FillPattern(out.data(), size, size);
    ASSERT_TRUE(pair.initiator
                    ->TransferSync({Request(OpCode::kWrite, out.data(), pair.handle,
                                            pair.RemoteAddr(4096), size)})
                    .ok());
    ASSERT_TRUE(MatchesPattern(pair.remote + 4096, size, size)) << "target memory differs";
    std::memset(in.data(), 0, size);
    ASSERT_TRUE(pair.initiator
                    ->TransferSync({Request(OpCode::kRead, in.data(), pair.handle,
                                            pair.RemoteAddr(4096), size)})
                    .ok());
    ASSERT_TRUE(MatchesPattern(in.data(), size, size)) << "read-back differs";
  }
  TransferEngineStats stats = pair.initiator->Stats();
  EXPECT_EQ(GetParam() == Path::kShm ? stats.tcp_bytes : stats.shm_bytes, 0u)
      << "requests took the wrong path";
}

TEST_P(RoundTripTest, BatchOfManyRequestsWithStatuses) {
  constexpr size_t kBlock = 16 << 10, kCount = 200;
  EnginePair pair(GetParam(), kBlock * kCount);
  std::vector<char> local(kBlock * kCount);
  for (size_t i = 0; i < kCount; ++i) FillPattern(&local[i * kBlock], kBlock, i + 1000);
  std::vector<TransferRequest> requests;
  for (size_t i = 0; i < kCount; ++i) {
    requests.push_back(Request(OpCode::kWrite, &local[i * kBlock], pair.handle,
                               pair.RemoteAddr((kCount - 1 - i) * kBlock), kBlock));
  }
  auto batch = pair.initiator->AllocateBatch(kCount);
  ASSERT_TRUE(batch.ok());
  ASSERT_TRUE(pair.initiator->SubmitTransfer(*batch, requests).ok());
  auto statuses = pair.initiator->WaitBatch(*batch, std::chrono::seconds(10));
  ASSERT_TRUE(statuses.ok());
  ASSERT_EQ(statuses->size(), kCount);
  for (size_t i = 0; i < kCount; ++i) {
    EXPECT_EQ((*statuses)[i].state, TransferState::kCompleted) << (*statuses)[i].reason;
    EXPECT_EQ((*statuses)[i].transferred_bytes, kBlock);
    auto one = pair.initiator->GetTransferStatus(*batch, i);
    ASSERT_TRUE(one.ok());
    EXPECT_EQ(one->state, TransferState::kCompleted);
    EXPECT_TRUE(MatchesPattern(pair.remote + (kCount - 1 - i) * kBlock, kBlock, i + 1000));
  }
  EXPECT_FALSE(pair.initiator->GetTransferStatus(*batch, kCount).ok());
  EXPECT_EQ(pair.initiator->SubmitTransfer(*batch, {requests[0]}).code(),
            absl::StatusCode::kResourceExhausted);
  EXPECT_TRUE(pair.initiator->FreeBatch(*batch).ok());
  EXPECT_FALSE(pair.initiator->FreeBatch(*batch).ok());
}

// `threads` threads each write then read back their own range of `block` bytes for `rounds`
// rounds, `size(round)` bytes each time; returns how many rounds failed or read other bytes.
int WriteAndReadDisjointRanges(EnginePair& pair, size_t threads, size_t block, size_t rounds,
                               size_t (*size)(size_t round)) {
  std::atomic<int> failures{0};
  std::vector<std::thread> running;
  for (size_t t = 0; t < threads; ++t) {
    running.emplace_back([&, t] {
      std::vector<char> out(block), in(block);
      for (size_t round = 0; round < rounds; ++round) {
        const uint64_t seed = t * 1000 + round;
        const size_t bytes = size(round);
        FillPattern(out.data(), bytes, seed);
        const uint64_t addr = pair.RemoteAddr(t * block);
        if (!pair.initiator
                 ->TransferSync({Request(OpCode::kWrite, out.data(), pair.handle, addr, bytes)})
                 .ok() ||
            !pair.initiator
                 ->TransferSync({Request(OpCode::kRead, in.data(), pair.handle, addr, bytes)})
                 .ok() ||
            !MatchesPattern(in.data(), bytes, seed)) {
          ++failures;
        }
      }
    });
  }
  for (auto& thread : running) thread.join();
  return failures.load();
}

TEST_P(RoundTripTest, ManyThreadsWriteAndReadDisjointRanges) {
  constexpr size_t kThreads = 6, kBlock = 256 << 10;
  EnginePair pair(GetParam(), kThreads * kBlock);
  EXPECT_EQ(WriteAndReadDisjointRanges(pair, kThreads, kBlock, 20, [](size_t) { return kBlock; }),
            0);
}

TEST_P(RoundTripTest, OutOfRangeAddressIsRefusedAndNothingIsWritten) {
  constexpr size_t kSize = 1 << 20;
  EnginePair pair(GetParam(), kSize);
  std::memset(pair.remote, 0x5a, kSize);
  std::vector<char> local(8192, 1);
  for (auto [addr, len] : {std::pair<uint64_t, size_t>{pair.RemoteAddr(kSize - 100), 4096},
                           std::pair<uint64_t, size_t>{pair.RemoteAddr() - 4096, 4096},
                           std::pair<uint64_t, size_t>{0x10, 8},
                           std::pair<uint64_t, size_t>{pair.RemoteAddr(kSize), 1}}) {
    absl::Status status = pair.initiator->TransferSync(
        {Request(OpCode::kWrite, local.data(), pair.handle, addr, len)});
    EXPECT_FALSE(status.ok()) << "write to 0x" << std::hex << addr << " accepted";
    status = pair.initiator->TransferSync(
        {Request(OpCode::kRead, local.data(), pair.handle, addr, len)});
    EXPECT_FALSE(status.ok());
  }
  for (size_t i = 0; i < kSize; ++i) ASSERT_EQ(pair.remote[i], 0x5a) << "byte " << i << " changed";
  // The engine keeps working after refusals.
  EXPECT_TRUE(pair.initiator
                  ->TransferSync(
                      {Request(OpCode::kWrite, local.data(), pair.handle, pair.RemoteAddr(), 4096)})
                  .ok());
}

TEST_P(RoundTripTest, BatchFreedAsSoonAsItIsIdle) {
  // Regression: the finishing thread used to touch the batch after the waiter had seen it idle
  // and freed it.
  EnginePair pair(GetParam(), 1 << 20);
  std::vector<char> local(4096, 9);
  for (int i = 0; i < 3000; ++i) {
    auto batch = pair.initiator->AllocateBatch(1);
    ASSERT_TRUE(batch.ok());
    ASSERT_TRUE(pair.initiator
                    ->SubmitTransfer(*batch, {Request(OpCode::kWrite, local.data(), pair.handle,
                                                      pair.RemoteAddr(), local.size())})
                    .ok());
    while (!pair.initiator->FreeBatch(*batch).ok()) {
      auto status = pair.initiator->GetTransferStatus(*batch, 0);
      ASSERT_TRUE(status.ok());
      ASSERT_NE(status->state, TransferState::kFailed) << status->reason;
    }
  }
}

// One batch mixing small and large reads and writes with refused requests between them: over TCP
// small requests travel in bursts (one sendmsg) and their replies in batches read through a
// buffer, so a refusal or a size at a threshold (16 KiB read-ahead, 64 KiB burst) must not shift
// any other request's bytes or status.
TEST_P(RoundTripTest, MixedBatchKeepsEveryRequestsBytesAndStatus) {
  constexpr size_t kSizes[] = {1, 100, 4096, 16383, 16384, 16385, 40000, 65536, 65537, 300000};
  constexpr size_t kCount = 150, kSlot = 300 << 10, kHalf = kCount * kSlot;  // 4 KiB multiples
  EnginePair pair(GetParam(), 2 * kHalf);
  // Reads come from the first half (filled here), writes go to the second.
  for (size_t i = 0; i < kCount; ++i) FillPattern(pair.remote + i * kSlot, kSlot, i);
  std::vector<char> local(kCount * kSlot);
  std::vector<TransferRequest> requests;
  std::vector<bool> refused(kCount), is_read(kCount);
  for (size_t i = 0; i < kCount; ++i) {
    const size_t size = kSizes[(i * 7) % std::size(kSizes)];
    refused[i] = i % 11 == 5;
    is_read[i] = (i / 3) % 2 == 0;
    char* mine = &local[i * kSlot];
    uint64_t addr = pair.RemoteAddr((is_read[i] ? 0 : kHalf) + i * kSlot);
    if (refused[i]) addr = pair.RemoteAddr(2 * kHalf - size / 2);  // runs past the buffer
    if (!is_read[i]) FillPattern(mine, size, 100000 + i);
    requests.push_back(
        Request(is_read[i] ? OpCode::kRead : OpCode::kWrite, mine, pair.handle, addr, size));
  }
  auto batch = pair.initiator->AllocateBatch(kCount);
  ASSERT_TRUE(batch.ok());
  ASSERT_TRUE(pair.initiator->SubmitTransfer(*batch, requests).ok());
  auto statuses = pair.initiator->WaitBatch(*batch, std::chrono::seconds(20));
  ASSERT_TRUE(statuses.ok());
  ASSERT_EQ(statuses->size(), kCount);
  for (size_t i = 0; i < kCount; ++i) {
    SCOPED_TRACE(::testing::Message() << "request " << i << (is_read[i] ? " read " : " write ")
                                      << requests[i].length << " bytes");
    if (refused[i]) {
      EXPECT_EQ((*statuses)[i].state, TransferState::kFailed);
      continue;
    }
    ASSERT_EQ((*statuses)[i].state, TransferState::kCompleted) << (*statuses)[i].reason;
    EXPECT_EQ((*statuses)[i].transferred_bytes, requests[i].length);
    if (is_read[i]) {
      EXPECT_TRUE(MatchesPattern(&local[i * kSlot], requests[i].length, i)) << "read bytes differ";
    } else {
      EXPECT_TRUE(MatchesPattern(pair.remote + kHalf + i * kSlot, requests[i].length, 100000 + i))
          << "written bytes differ";
    }
  }
  EXPECT_TRUE(pair.initiator->FreeBatch(*batch).ok());
}

INSTANTIATE_TEST_SUITE_P(Paths, RoundTripTest, ::testing::Values(Path::kTcp, Path::kShm),
                         [](const auto& info) { return info.param == Path::kTcp ? "Tcp" : "Shm"; });

TEST(TransferEngineTest, LocalSegmentCopiesAndChecksRanges) {
  auto engine = MakeEngine();
  std::vector<char> registered(1 << 20), local(4096);
  ASSERT_TRUE(engine->RegisterLocalMemory(registered.data(), registered.size()).ok());
  auto handle = engine->OpenSegment(engine->LocalSegmentName());
  ASSERT_TRUE(handle.ok());
  EXPECT_EQ(*handle, kLocalSegmentHandle);
  FillPattern(local.data(), local.size(), 7);
  uint64_t addr = reinterpret_cast<uint64_t>(registered.data()) + 100;
  ASSERT_TRUE(
      engine->TransferSync({Request(OpCode::kWrite, local.data(), *handle, addr, 4096)}).ok());
  EXPECT_TRUE(MatchesPattern(registered.data() + 100, 4096, 7));
  EXPECT_FALSE(engine
                   ->TransferSync({Request(OpCode::kWrite, local.data(), *handle,
                                           addr + registered.size() - 200, 4096)})
                   .ok());
}

TEST(TransferEngineTest, RegistrationErrors) {
  auto engine = MakeEngine();
  std::vector<char> memory(1 << 16);
  EXPECT_EQ(engine->RegisterLocalMemory(memory.data(), 0).code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(engine->RegisterLocalMemory(nullptr, 10).code(), absl::StatusCode::kInvalidArgument);
  ASSERT_TRUE(engine->RegisterLocalMemory(memory.data(), 4096).ok());
  EXPECT_EQ(engine->RegisterLocalMemory(memory.data() + 100, 100).code(),
            absl::StatusCode::kAlreadyExists);
  EXPECT_TRUE(engine->RegisterLocalMemory(memory.data() + 4096, 4096).ok());
  EXPECT_EQ(engine->UnregisterLocalMemory(memory.data() + 1).code(), absl::StatusCode::kNotFound);
  EXPECT_TRUE(engine->UnregisterLocalMemory(memory.data()).ok());
  EXPECT_EQ(engine->UnregisterLocalMemory(memory.data()).code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(engine->FreeSharedMemory(memory.data()).code(), absl::StatusCode::kNotFound);
}

TEST(TransferEngineTest, InvalidRequestsAreRejectedWithoutSubmitting) {
  EnginePair pair(Path::kTcp, 1 << 16);
  std::vector<char> local(4096);
  auto batch = pair.initiator->AllocateBatch(4);
  ASSERT_TRUE(batch.ok());
  EXPECT_EQ(pair.initiator
                ->SubmitTransfer(
                    *batch, {Request(OpCode::kWrite, nullptr, pair.handle, pair.RemoteAddr(), 10)})
                .code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(pair.initiator
                ->SubmitTransfer(*batch, {Request(OpCode::kWrite, local.data(), pair.handle,
                                                  pair.RemoteAddr(), 0)})
                .code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(pair.initiator
                ->SubmitTransfer(
                    *batch, {Request(OpCode::kWrite, local.data(), 999, pair.RemoteAddr(), 10)})
                .code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_FALSE(pair.initiator->SubmitTransfer(*batch + 100, {}).ok());
  EXPECT_FALSE(pair.initiator->AllocateBatch(0).ok());
  auto statuses = pair.initiator->WaitBatch(*batch, std::chrono::milliseconds(10));
  ASSERT_TRUE(statuses.ok());
  EXPECT_TRUE(statuses->empty()) << "rejected submissions must not occupy batch slots";
  EXPECT_EQ(pair.initiator->OpenSegment("127.0.0.1:1").status().code(),
            absl::StatusCode::kUnavailable);
}

TEST(TransferEngineTest, HttpMetadataBackendPublishesAndResolvesSegments) {
  auto server = HttpMetadataServer::Start("127.0.0.1", 0);
  ASSERT_TRUE(server.ok()) << server.status();
  std::string metadata = "http://127.0.0.1:" + std::to_string((*server)->port()) + "/metadata";
  EnginePair pair(Path::kTcp, 1 << 20, metadata);
  ASSERT_GE(pair.handle, 1);
  std::vector<char> out(1 << 20);
  FillPattern(out.data(), out.size(), 3);
  ASSERT_TRUE(pair.initiator
                  ->TransferSync({Request(OpCode::kWrite, out.data(), pair.handle,
                                          pair.RemoteAddr(), out.size())})
                  .ok());
  EXPECT_TRUE(MatchesPattern(pair.remote, out.size(), 3));
  EXPECT_EQ(pair.initiator->OpenSegment("127.0.0.1:9").status().code(),
            absl::StatusCode::kNotFound);
  size_t keys = (*server)->KeyCount();
  pair.target.reset();
  EXPECT_EQ((*server)->KeyCount(), keys - 1) << "a stopped engine removes its descriptor";
}

// A request submitted alone on an idle connection is sent by the submitting thread; when its reply
// comes quickly (a read of any size, a small write), that thread polls for the reply and reads it
// itself: the transfer is final when SubmitTransfer returns (the receiver thread would finish it
// some microseconds later). A large write's reply is left to the receiver thread. With polling off
// the receiver thread reads every reply, and the bytes are the same.
TEST(TransferEngineTest, SubmittingThreadReadsTheReplyToItsLoneRequest) {
  constexpr size_t kLarge = 1 << 20;
  for (const char* spin_us : {"1000000", "0"}) {
    SCOPED_TRACE(spin_us);
    setenv(kTcpReplySpinEnv, spin_us, 1);  // read when the peer is opened
    EnginePair pair(Path::kTcp, kLarge);
    unsetenv(kTcpReplySpinEnv);
    const bool polling = std::string(spin_us) != "0";
    std::vector<char> out(kLarge), in(kLarge);
    // The first request opens the connections (it is queued for them, not sent inline).
    ASSERT_TRUE(pair.initiator
                    ->TransferSync(
                        {Request(OpCode::kWrite, out.data(), pair.handle, pair.RemoteAddr(), 4096)})
                    .ok());
    int final_at_return = 0, claimed = 0;
    for (uint64_t round = 0; round < 21; ++round) {
      const size_t size = std::array<size_t, 3>{4096, 65536, kLarge}[round % 3];
      FillPattern(out.data(), size, round);
      std::memset(in.data(), 0, size);
      for (auto [op, local] : {std::pair{OpCode::kWrite, out.data()}, {OpCode::kRead, in.data()}}) {
        auto batch_id = pair.initiator->AllocateBatch(1);
        ASSERT_TRUE(batch_id.ok()) << batch_id.status();
        ASSERT_TRUE(pair.initiator
                        ->SubmitTransfer(*batch_id,
                                         {Request(op, local, pair.handle, pair.RemoteAddr(), size)})
                        .ok());
        auto status = pair.initiator->GetTransferStatus(*batch_id, 0);
        ASSERT_TRUE(status.ok()) << status.status();
        // A large write's reply may or may not have been read by then: not counted.
        if (op == OpCode::kRead || size <= 65536) {
          final_at_return += status->state == TransferState::kCompleted;
          ++claimed;
        }
        auto waited = pair.initiator->WaitAndFreeBatch(*batch_id);
        ASSERT_TRUE(waited.ok()) << waited.status();
        ASSERT_EQ((*waited)[0].state, TransferState::kCompleted) << (*waited)[0].reason;
      }
      ASSERT_TRUE(MatchesPattern(in.data(), size, round)) << "read-back differs";
    }
    if (polling) {
      EXPECT_EQ(final_at_return, claimed) << "a reply was left to the receiver thread";
    }
  }
}

// Many threads sending small requests at once on one peer: replies read by their own senders and
// by the receiver threads interleave on the same connections, and every byte lands where it should.
TEST(TransferEngineTest, ConcurrentSmallRequestsKeepTheirReplies) {
  constexpr size_t kThreads = 8, kBlock = 16 << 10;
  EnginePair pair(Path::kTcp, kThreads * kBlock);
  EXPECT_EQ(WriteAndReadDisjointRanges(
                pair, kThreads, kBlock, 150,
                [](size_t round) -> size_t { return round % 3 == 0 ? kBlock : 4096; }),
            0);
}

// Whichever way the connections waited while idle (after a small request whose sender read the
// reply, or after a large one the receiver thread read), a restart of the target is noticed.
TEST(TransferEngineTest, RestartedPeerOnSamePortIsFencedByEpoch) {
  for (const uint64_t last_size : {uint64_t{4096}, uint64_t{1} << 20}) {
    SCOPED_TRACE(last_size);
    auto initiator = MakeEngine("P2PHANDSHAKE", /*enable_shm=*/false);
    std::vector<char> memory(2 << 20), local(1 << 20, 7);
    std::string name;
    SegmentHandle handle;
    uint16_t port;
    {
      auto target = MakeEngine();
      ASSERT_TRUE(target->RegisterLocalMemory(memory.data(), memory.size()).ok());
      name = target->LocalSegmentName();
      port = target->RpcPort();
      handle = *initiator->OpenSegment(name);
      ASSERT_TRUE(initiator
                      ->TransferSync({Request(OpCode::kWrite, local.data(), handle,
                                              reinterpret_cast<uint64_t>(memory.data()), 4096)})
                      .ok());
      ASSERT_TRUE(
          initiator
              ->TransferSync({Request(OpCode::kWrite, local.data(), handle,
                                      reinterpret_cast<uint64_t>(memory.data()), last_size)})
              .ok());
    }
    TransferEngineOptions options;
    options.local_server_name = "127.0.0.1:" + std::to_string(port);
    auto restarted = TransferEngine::Create(options);
    ASSERT_TRUE(restarted.ok()) << restarted.status();
    ASSERT_TRUE((*restarted)->RegisterLocalMemory(memory.data(), memory.size()).ok());
    std::memset(memory.data(), 0, memory.size());
    absl::Status status = initiator->TransferSync({Request(
        OpCode::kWrite, local.data(), handle, reinterpret_cast<uint64_t>(memory.data()), 4096)});
    EXPECT_FALSE(status.ok()) << "a write meant for the old process reached the new one";
    EXPECT_FALSE(initiator
                     ->TransferSync({Request(OpCode::kWrite, local.data(), handle,
                                             reinterpret_cast<uint64_t>(memory.data()), 4096)})
                     .ok())
        << "the old handle stays fenced";
    EXPECT_EQ(memory[0], 0);
    // Reopening reaches the new incarnation.
    ASSERT_TRUE(initiator->CloseSegment(handle).ok());
    auto reopened = initiator->OpenSegment(name);
    ASSERT_TRUE(reopened.ok()) << reopened.status();
    EXPECT_TRUE(initiator
                    ->TransferSync({Request(OpCode::kWrite, local.data(), *reopened,
                                            reinterpret_cast<uint64_t>(memory.data()), 4096)})
                    .ok());
    EXPECT_EQ(memory[0], 7);
  }
}

// Sends raw bytes to an engine's port and reports whether the engine closed the connection.
bool ServerClosesAfter(uint16_t port, const std::vector<uint8_t>& bytes) {
  auto fd = ConnectTcp("127.0.0.1", port, std::chrono::milliseconds(1000));
  if (!fd.ok()) return false;
  timeval tv{2, 0};
  setsockopt(*fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
  (void)SendAll(*fd, bytes.data(), bytes.size());
  char buffer[256];
  bool closed = false;
  while (true) {
    ssize_t n = recv(*fd, buffer, sizeof(buffer), 0);
    if (n == 0 || (n < 0 && errno != EINTR && errno != EAGAIN)) {
      closed = true;
      break;
    }
    if (n < 0) break;  // timed out: still open
  }
  CloseFd(*fd);
  return closed;
}

TEST(TransferEngineTest, MalformedFramesCloseTheConnectionAndNothingIsWritten) {
  EnginePair pair(Path::kTcp, 1 << 16);
  std::memset(pair.remote, 0x11, 1 << 16);
  std::vector<uint8_t> garbage(64, 0xab);
  EXPECT_TRUE(ServerClosesAfter(pair.target->RpcPort(), garbage));

  FrameHeader write;
  write.type = FrameType::kWrite;
  write.addr = pair.RemoteAddr();
  write.length = 16;
  std::vector<uint8_t> frame(kFrameHeaderBytes + 16, 0xee);
  EncodeFrameHeader(write, frame.data());
  EXPECT_TRUE(ServerClosesAfter(pair.target->RpcPort(), frame)) << "WRITE before HELLO";

  write.type = FrameType::kWriteReply;  // a reply type sent to a server
  EncodeFrameHeader(write, frame.data());
  EXPECT_TRUE(ServerClosesAfter(pair.target->RpcPort(), frame));

  write.type = FrameType::kHello;  // HELLO for another segment
  write.addr = 0;
  write.length = 3;
  std::vector<uint8_t> hello(kFrameHeaderBytes + 3, 'x');
  EncodeFrameHeader(write, hello.data());
  EXPECT_TRUE(ServerClosesAfter(pair.target->RpcPort(), hello));

  for (int i = 0; i < (1 << 16); ++i) ASSERT_EQ(pair.remote[i], 0x11);
  std::vector<char> local(4096, 2);
  EXPECT_TRUE(pair.initiator
                  ->TransferSync(
                      {Request(OpCode::kWrite, local.data(), pair.handle, pair.RemoteAddr(), 4096)})
                  .ok())
      << "the server keeps serving well-formed peers";
}

}  // namespace
}  // namespace yuebing::transport
