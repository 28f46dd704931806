// HashedTransfers against two real engines in one process (TCP over 127.0.0.1, and same-host shared
// memory): every object read or written is hashed whichever path ran it, a corrupted object is the
// only one whose checksum differs, and on the synchronous path (shm) the large objects are hashed
// by the helper thread.
#include "store/hashed_transfers.h"

#include <gtest/gtest.h>

#include <string>
#include <thread>
#include <vector>

#include "transport/engine_test_util.h"
#include "yuebing/common/checksum.h"

namespace yuebing::store {
namespace {

using transport::OpCode;
using transport::SegmentHandle;
using transport::TransferEngine;
using transport::TransferRequest;
using transport::TransferState;
using transport::testing::EnginePair;
using transport::testing::FillPattern;
using transport::testing::MatchesPattern;
using transport::testing::Path;
using transport::testing::Request;

constexpr size_t kObjectBytes = 512 << 10;  // above the helper's threshold
constexpr size_t kObjects = 6;

// A target whose buffer holds kObjects patterned objects (object i has seed i), and an initiator.
class Remote {
 public:
  explicit Remote(Path path) : pair_(path, kObjects * kObjectBytes) {
    for (size_t i = 0; i < kObjects; ++i) FillPattern(Object(i), kObjectBytes, i);
  }
  char* Object(size_t i) { return pair_.remote + i * kObjectBytes; }
  uint64_t Address(size_t i) { return pair_.RemoteAddr(i * kObjectBytes); }
  TransferEngine* initiator() { return pair_.initiator.get(); }
  std::string SegmentName() const { return pair_.target->LocalSegmentName(); }
  SegmentHandle handle() const { return pair_.handle; }

 private:
  EnginePair pair_;
};

uint64_t ChecksumOfPattern(size_t length, uint64_t seed) {
  std::string bytes(length, '\0');
  FillPattern(bytes.data(), length, seed);
  return ObjectChecksum(bytes);
}

// A transfer of every object whole between `local` and the remote (object i split in two requests
// when split(i)), each to be hashed; `expected[i]` is the checksum of object i's pattern. Reads
// land in `local`; for writes, `local[i]` holds pattern i + kObjects.
struct TransferAll {
  std::vector<TransferRequest> requests;
  std::vector<HashedTransfers::Object> objects;
  std::vector<std::string> local;
  std::vector<uint64_t> expected;

  TransferAll(Remote& remote, bool (*split)(size_t), OpCode opcode = OpCode::kRead)
      : local(kObjects, std::string(kObjectBytes, 0)) {
    for (size_t i = 0; i < kObjects; ++i) {
      const uint64_t seed = opcode == OpCode::kRead ? i : i + kObjects;
      if (opcode == OpCode::kWrite) FillPattern(local[i].data(), kObjectBytes, seed);
      expected.push_back(ChecksumOfPattern(kObjectBytes, seed));
      HashedTransfers::Object object;
      object.first_request = requests.size();
      object.hash = true;
      const size_t half = split(i) ? kObjectBytes / 2 : kObjectBytes;
      for (size_t offset = 0; offset < kObjectBytes; offset += half) {
        requests.push_back(Request(opcode, local[i].data() + offset, remote.handle(),
                                   remote.Address(i) + offset, half));
        object.bytes.emplace_back(local[i].data() + offset, half);
      }
      object.request_count = requests.size() - object.first_request;
      objects.push_back(std::move(object));
    }
  }
};

bool Whole(size_t) { return false; }
bool OddOnesSplit(size_t i) { return i % 2 == 1; }

class HashedTransfersTest : public ::testing::TestWithParam<Path> {};

TEST_P(HashedTransfersTest, HashesEveryObjectReadAndOnlyTheCorruptedOneDiffers) {
  Remote remote(GetParam());
  remote.Object(3)[kObjectBytes / 3] ^= 0x5a;  // the store's copy no longer matches its record
  ChecksumWorker worker;
  HashedTransfers reads(remote.initiator(), &worker);
  TransferAll call(remote, OddOnesSplit);
  HashedTransfers::Outcome outcome = reads.Run(call.requests, call.objects);
  ASSERT_EQ(outcome.statuses.size(), call.requests.size());
  for (const auto& status : outcome.statuses) {
    EXPECT_EQ(status.state, TransferState::kCompleted) << status.reason;
  }
  for (size_t i = 0; i < kObjects; ++i) {
    EXPECT_EQ(outcome.checksums[i] == call.expected[i], i != 3) << "object " << i;
    EXPECT_NE(outcome.checksums[i], kNoChecksum) << i;
    if (i != 3) {
      EXPECT_TRUE(MatchesPattern(call.local[i].data(), kObjectBytes, i)) << i;
    }
  }
  // Shared memory copies inside SubmitTransfer: each object went to the checksum worker as soon
  // as it was copied (the helper or, at the end, the caller hashed it). Over TCP the caller
  // hashes each object once it is in.
  EXPECT_EQ(worker.JobsAdded(), GetParam() == Path::kShm ? kObjects : 0u);
}

TEST_P(HashedTransfersTest, ObjectsNotToBeHashedAreNot) {
  Remote remote(GetParam());
  remote.Object(1)[7] ^= 1;
  ChecksumWorker worker;
  HashedTransfers reads(remote.initiator(), &worker);
  TransferAll call(remote, Whole);
  call.objects[1].hash = false;
  HashedTransfers::Outcome outcome = reads.Run(call.requests, call.objects);
  for (size_t i = 0; i < kObjects; ++i) {
    EXPECT_EQ(outcome.checksums[i], i == 1 ? kNoChecksum : call.expected[i]) << i;
  }
  // Nothing to hash at all: the round is run whole, and still says which path took it.
  for (HashedTransfers::Object& object : call.objects) object.hash = false;
  outcome = reads.Run(call.requests, call.objects);
  for (size_t i = 0; i < kObjects; ++i) EXPECT_EQ(outcome.checksums[i], kNoChecksum) << i;
  EXPECT_EQ(outcome.synchronous, GetParam() == Path::kShm);
  EXPECT_FALSE(MatchesPattern(call.local[1].data(), kObjectBytes, 1));  // read as it is
}

TEST_P(HashedTransfersTest, ConcurrentCallsShareTheHelperAndEachGetsItsOwnResults) {
  Remote remote(GetParam());
  remote.Object(5)[0] ^= 1;
  ChecksumWorker worker;
  HashedTransfers reads(remote.initiator(), &worker);
  std::vector<std::thread> threads;
  std::vector<int> wrong(4, 0);
  for (size_t t = 0; t < wrong.size(); ++t) {
    threads.emplace_back([&, t] {
      for (int round = 0; round < 5; ++round) {
        TransferAll call(remote, t % 2 == 0 ? Whole : OddOnesSplit);
        HashedTransfers::Outcome outcome = reads.Run(call.requests, call.objects);
        for (size_t i = 0; i < kObjects; ++i) {
          const bool intact = MatchesPattern(call.local[i].data(), kObjectBytes, i);
          const bool matches = outcome.checksums[i] == call.expected[i];
          if (matches != (i != 5) || intact != (i != 5)) ++wrong[t];
        }
      }
    });
  }
  for (auto& thread : threads) thread.join();
  for (size_t t = 0; t < wrong.size(); ++t) EXPECT_EQ(wrong[t], 0) << "thread " << t;
}

// A put's values are hashed while they are written: the checksums are those of the sources, and
// the bytes land intact.
TEST_P(HashedTransfersTest, WritesHashTheirSourcesAndLandIntact) {
  Remote remote(GetParam());
  ChecksumWorker worker;
  HashedTransfers writes(remote.initiator(), &worker);
  TransferAll call(remote, OddOnesSplit, OpCode::kWrite);
  HashedTransfers::Outcome outcome = writes.Run(call.requests, call.objects);
  for (const auto& status : outcome.statuses) {
    EXPECT_EQ(status.state, TransferState::kCompleted) << status.reason;
  }
  for (size_t i = 0; i < kObjects; ++i) {
    EXPECT_EQ(outcome.checksums[i], call.expected[i]) << "object " << i;
    EXPECT_TRUE(MatchesPattern(remote.Object(i), kObjectBytes, i + kObjects)) << i;
  }
  EXPECT_EQ(worker.JobsAdded(), GetParam() == Path::kShm ? kObjects : 0u);
  EXPECT_EQ(outcome.synchronous, GetParam() == Path::kShm);
}

INSTANTIATE_TEST_SUITE_P(Paths, HashedTransfersTest, ::testing::Values(Path::kTcp, Path::kShm),
                         [](const auto& info) { return info.param == Path::kTcp ? "Tcp" : "Shm"; });

TEST(HashedTransfersTcpTest, ObjectsOnTwoPeersAreNotReadOneAtATime) {
  // Each of the first two objects is alone on its peer: TCP may send it and read its reply on the
  // submitting thread, so both can be final when SubmitTransfer returns. That must not be taken
  // for a synchronous path (which would submit the rest one object at a time).
  Remote first(Path::kTcp), second(Path::kTcp);
  auto handle = first.initiator()->OpenSegment(second.SegmentName());
  ASSERT_TRUE(handle.ok()) << handle.status();
  for (int call = 0; call < 5; ++call) {
    ChecksumWorker worker;
    HashedTransfers reads(first.initiator(), &worker);
    TransferAll all(first, Whole);
    for (size_t i = 1; i < kObjects; i += 2) {  // odd objects from the second peer
      all.requests[all.objects[i].first_request].target_id = *handle;
      all.requests[all.objects[i].first_request].target_offset = second.Address(i);
    }
    HashedTransfers::Outcome outcome = reads.Run(all.requests, all.objects);
    for (size_t i = 0; i < kObjects; ++i) {
      EXPECT_EQ(outcome.checksums[i], all.expected[i]) << i;
      EXPECT_TRUE(MatchesPattern(all.local[i].data(), kObjectBytes, i)) << i;
    }
    EXPECT_EQ(worker.JobsAdded(), 0u) << "call " << call;
  }
}

TEST(HashedTransfersShmTest, ARefusedSubmissionFailsOnlyItsObject) {
  Remote remote(Path::kShm);
  ChecksumWorker worker;
  HashedTransfers reads(remote.initiator(), &worker);
  TransferAll call(remote, Whole);
  call.requests[call.objects[3].first_request].target_id = remote.handle() + 1000;  // no segment
  HashedTransfers::Outcome outcome = reads.Run(call.requests, call.objects);
  for (size_t i = 0; i < kObjects; ++i) {
    const auto& status = outcome.statuses[call.objects[i].first_request];
    if (i == 3) {
      EXPECT_EQ(status.state, TransferState::kFailed);
      EXPECT_FALSE(status.reason.empty());
      EXPECT_EQ(outcome.checksums[i], kNoChecksum);
    } else {
      EXPECT_EQ(status.state, TransferState::kCompleted) << i << ": " << status.reason;
      EXPECT_EQ(outcome.checksums[i], call.expected[i]);
      EXPECT_TRUE(MatchesPattern(call.local[i].data(), kObjectBytes, i)) << i;
    }
  }
}

}  // namespace
}  // namespace yuebing::store
