// Multi-process tests of the transfer engine: a target engine in a child process (real process,
// real sockets on 127.0.0.1), killed or stopped mid-transfer; cross-process shared memory; etcd
// metadata with a real etcd server.
#include <gtest/gtest.h>
#include <signal.h>

#include <atomic>
#include <memory>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "engine_test_util.h"
#include "support/child_process.h"
#include "support/etcd_process.h"
#include "transport/tcp_peer.h"
#include "transport/transfer_batch.h"
#include "yuebing/transport/transfer_engine.h"

namespace yuebing::transport {
namespace {

using test_support::BuildPath;
using test_support::ChildProcess;
using testing::FillPattern;
using testing::MakeEngine;
using testing::MatchesPattern;
using testing::Request;

struct Target {
  std::unique_ptr<ChildProcess> process;
  std::string segment;
  uint64_t addr = 0;
  size_t length = 0;
};

Target StartTarget(std::vector<std::string> extra_args) {
  std::vector<std::string> argv = {BuildPath("tests/transport/yb_test_target")};
  argv.insert(argv.end(), extra_args.begin(), extra_args.end());
  Target target;
  auto child = ChildProcess::Start(argv);
  EXPECT_TRUE(child.ok()) << child.status();
  if (!child.ok()) return target;
  target.process = std::move(child).value();
  auto line = target.process->WaitForLine("READY ", std::chrono::seconds(20));
  EXPECT_TRUE(line.ok()) << line.status();
  if (line.ok()) {
    std::istringstream in(line->substr(6));
    in >> target.segment >> target.addr >> target.length;
  }
  return target;
}

bool IsFinal(TransferState s) {
  return s == TransferState::kCompleted || s == TransferState::kFailed ||
         s == TransferState::kTimeout;
}

// Submits batches of large writes in a loop until told to stop; records every batch's outcome.
struct WriteLoad {
  std::atomic<bool> stop{false};
  std::atomic<int> completed{0}, failed{0}, timed_out{0}, not_final{0};
  std::thread thread;

  void Start(TransferEngine* engine, SegmentHandle handle, uint64_t addr, size_t length) {
    thread = std::thread([=, this] {
      constexpr size_t kBlock = 8 << 20;
      std::vector<char> local(kBlock * 4, 3);
      while (!stop) {
        auto batch = engine->AllocateBatch(4);
        if (!batch.ok()) break;
        std::vector<TransferRequest> requests;
        for (size_t i = 0; i < 4; ++i) {
          requests.push_back(Request(OpCode::kWrite, &local[i * kBlock], handle,
                                     addr + (i * kBlock) % length, kBlock));
        }
        if (!engine->SubmitTransfer(*batch, requests).ok()) break;
        auto statuses = engine->WaitBatch(*batch, std::chrono::seconds(15));
        for (const TransferStatus& s : *statuses) {
          if (!IsFinal(s.state)) ++not_final;
          if (s.state == TransferState::kCompleted) ++completed;
          if (s.state == TransferState::kFailed) ++failed;
          if (s.state == TransferState::kTimeout) ++timed_out;
        }
        (void)engine->FreeBatch(*batch);
      }
    });
  }
  void Join() {
    stop = true;
    thread.join();
  }
};

TEST(MultiProcessTest, KilledPeerFailsInFlightRequestsWithinDeadline) {
  Target target = StartTarget({"--size=67108864"});
  ASSERT_FALSE(target.segment.empty());
  auto initiator = MakeEngine("P2PHANDSHAKE", /*enable_shm=*/false, std::chrono::seconds(5));
  auto handle = initiator->OpenSegment(target.segment);
  ASSERT_TRUE(handle.ok()) << handle.status();
  WriteLoad load;
  load.Start(initiator.get(), *handle, target.addr, target.length);
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  target.process->Signal(SIGKILL);
  auto killed_at = std::chrono::steady_clock::now();
  ASSERT_TRUE(target.process->Wait(std::chrono::seconds(5)).ok());
  // Every batch must end, with FAILED for what was cut off, well before the 5 s deadline.
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  load.Join();
  double seconds_after_kill =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - killed_at).count();
  EXPECT_LT(seconds_after_kill, 3.0);
  EXPECT_GT(load.completed.load(), 0) << "no transfer completed before the kill";
  EXPECT_GT(load.failed.load(), 0) << "the kill should fail in-flight or later requests";
  EXPECT_EQ(load.not_final.load(), 0);
  // New requests to the dead peer fail fast with a reason.
  std::vector<char> local(4096);
  auto started = std::chrono::steady_clock::now();
  absl::Status status =
      initiator->TransferSync({Request(OpCode::kWrite, local.data(), *handle, target.addr, 4096)});
  EXPECT_FALSE(status.ok());
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count(), 2.0);
}

TEST(MultiProcessTest, StoppedPeerGivesTimeoutByTheDeadline) {
  Target target = StartTarget({"--size=67108864"});
  ASSERT_FALSE(target.segment.empty());
  auto initiator = MakeEngine("P2PHANDSHAKE", false, std::chrono::milliseconds(1000));
  auto handle = initiator->OpenSegment(target.segment);
  ASSERT_TRUE(handle.ok()) << handle.status();
  WriteLoad load;
  load.Start(initiator.get(), *handle, target.addr, target.length);
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  target.process->Signal(SIGSTOP);
  std::this_thread::sleep_for(std::chrono::milliseconds(2500));
  auto stopped_batches = load.timed_out.load();
  load.Join();
  EXPECT_GT(stopped_batches, 0) << "requests to a stopped peer must end as TIMEOUT";
  EXPECT_EQ(load.not_final.load(), 0);
  target.process->Signal(SIGCONT);
}

// Large slices go to the connection with the least in flight. A read's request takes moments to
// send, so one sender could take a whole batch before the other woke (reads then ran at one
// connection's rate). With the target stopped, nothing comes back and nothing leaves the pool's
// counts: 16 reads of 1 MiB are 8 on each of the two connections. Once the target resumes, every
// read completes.
TEST(MultiProcessTest, LargeSlicesAreSpreadOverThePoolsConnections) {
  Target target = StartTarget({"--size=33554432"});
  ASSERT_FALSE(target.segment.empty());
  TcpPeerOptions options;
  options.segment_name = target.segment;
  options.host = "127.0.0.1";
  options.port =
      static_cast<uint16_t>(std::stoi(target.segment.substr(target.segment.rfind(':') + 1)));
  options.connections = 2;
  TcpPeer peer(options);
  constexpr size_t kReads = 16, kSlice = 1 << 20;
  std::vector<char> local(kReads * kSlice);
  auto submit = [&](const std::shared_ptr<TransferBatch>& batch, OpCode op, size_t count,
                    uint64_t length) {
    absl::StatusOr<size_t> first = batch->Reserve(count);
    ASSERT_TRUE(first.ok()) << first.status();
    std::vector<TcpSlice> slices;
    for (size_t i = 0; i < count; ++i) {
      TransferTask& task = batch->task(*first + i);
      task.Start(batch.get(), 1);
      TcpSlice slice;
      slice.task = &task;
      slice.opcode = op;
      slice.local = &local[i * kSlice];
      slice.remote_addr = target.addr + i * kSlice;
      slice.length = length;
      slice.deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
      slices.push_back(slice);
    }
    ASSERT_TRUE(peer.Submit(std::move(slices)).ok());
  };
  // Small writes open the pool until both connections are ready, and all of them are answered.
  const auto opening_deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (peer.SlicesSentPerReadyConnection().size() < 2) {
    ASSERT_LT(std::chrono::steady_clock::now(), opening_deadline) << "the pool did not open";
    auto opening = std::make_shared<TransferBatch>(4);
    submit(opening, OpCode::kWrite, 4, 4096);
    ASSERT_TRUE(opening->WaitIdle(std::chrono::seconds(10)));
  }
  const std::vector<uint64_t> before = peer.SlicesSentPerReadyConnection();
  target.process->Signal(SIGSTOP);
  ASSERT_TRUE(test_support::WaitStopped(target.process->pid()));
  auto reads = std::make_shared<TransferBatch>(kReads);
  submit(reads, OpCode::kRead, kReads, kSlice);
  std::vector<uint64_t> sent;
  const auto sending_deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  do {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
    sent = peer.SlicesSentPerReadyConnection();
    ASSERT_EQ(sent.size(), 2u);
  } while (sent[0] + sent[1] - before[0] - before[1] < kReads &&
           std::chrono::steady_clock::now() < sending_deadline);
  EXPECT_EQ(sent[0] - before[0], kReads / 2) << "connection 1";
  EXPECT_EQ(sent[1] - before[1], kReads / 2) << "connection 2";
  target.process->Signal(SIGCONT);
  ASSERT_TRUE(reads->WaitIdle(std::chrono::seconds(30)));
  for (size_t i = 0; i < kReads; ++i) {
    EXPECT_EQ(reads->task(i).Status().state, TransferState::kCompleted) << "read " << i;
  }
}

// A stopped target still has its kernel accept connections, so the first connection to it hangs
// in its handshake: the transfer must still end by its deadline (plus the engine's margin), and
// closing the segment must not wait on the stuck connection longer than the connect timeout.
TEST(MultiProcessTest, TransferSyncToAStoppedPeerEndsAndTheSegmentCloses) {
  Target target = StartTarget({"--size=16777216"});
  ASSERT_FALSE(target.segment.empty());
  auto initiator = MakeEngine("P2PHANDSHAKE", false, std::chrono::milliseconds(1000));
  auto handle = initiator->OpenSegment(target.segment);
  ASSERT_TRUE(handle.ok()) << handle.status();
  target.process->Signal(SIGSTOP);
  std::vector<char> local(1 << 20, 5);
  auto started = std::chrono::steady_clock::now();
  absl::Status status = initiator->TransferSync(
      {Request(OpCode::kWrite, local.data(), *handle, target.addr, local.size())});
  double waited = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  EXPECT_EQ(status.code(), absl::StatusCode::kDeadlineExceeded) << status;
  EXPECT_LT(waited, 1.0 + 2.0 + 1.0) << "past the deadline plus the engine's margin";
  started = std::chrono::steady_clock::now();
  EXPECT_TRUE(initiator->CloseSegment(*handle).ok());
  double closing =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  EXPECT_LT(closing, 5.0) << "closing waited on a connection stuck in its handshake";
  target.process->Signal(SIGCONT);
}

TEST(MultiProcessTest, SharedMemoryReachesAnotherProcess) {
  Target target = StartTarget({"--size=33554432", "--shm"});
  ASSERT_FALSE(target.segment.empty());
  auto via_shm = MakeEngine("P2PHANDSHAKE", /*enable_shm=*/true);
  auto via_tcp = MakeEngine("P2PHANDSHAKE", /*enable_shm=*/false);
  auto shm_handle = via_shm->OpenSegment(target.segment);
  auto tcp_handle = via_tcp->OpenSegment(target.segment);
  ASSERT_TRUE(shm_handle.ok() && tcp_handle.ok());
  constexpr size_t kSize = 4 << 20;
  std::vector<char> out(kSize), in(kSize);
  FillPattern(out.data(), kSize, 77);
  ASSERT_TRUE(via_shm
                  ->TransferSync(
                      {Request(OpCode::kWrite, out.data(), *shm_handle, target.addr + 4096, kSize)})
                  .ok());
  // Read through TCP: the target process itself serves these bytes from its memory.
  ASSERT_TRUE(via_tcp
                  ->TransferSync(
                      {Request(OpCode::kRead, in.data(), *tcp_handle, target.addr + 4096, kSize)})
                  .ok());
  EXPECT_TRUE(MatchesPattern(in.data(), kSize, 77));
  std::fill(in.begin(), in.end(), 0);
  ASSERT_TRUE(via_shm
                  ->TransferSync(
                      {Request(OpCode::kRead, in.data(), *shm_handle, target.addr + 4096, kSize)})
                  .ok());
  EXPECT_TRUE(MatchesPattern(in.data(), kSize, 77));
  EXPECT_EQ(via_shm->Stats().shm_bytes, 2 * kSize) << "the shm path was not used";
  EXPECT_EQ(via_shm->Stats().tcp_bytes, 0u);
  EXPECT_EQ(via_tcp->Stats().shm_bytes, 0u);
  // Out of range stays refused on the shm path too.
  EXPECT_FALSE(via_shm
                   ->TransferSync({Request(OpCode::kWrite, out.data(), *shm_handle,
                                           target.addr + target.length - 10, 4096)})
                   .ok());
}

TEST(MultiProcessTest, SharedMemoryOfAKilledPeerIsNotATarget) {
  Target target = StartTarget({"--size=8388608", "--shm"});
  ASSERT_FALSE(target.segment.empty());
  auto initiator = MakeEngine("P2PHANDSHAKE", /*enable_shm=*/true, std::chrono::seconds(3));
  auto handle = initiator->OpenSegment(target.segment);
  ASSERT_TRUE(handle.ok());
  std::vector<char> local(4096, 1);
  ASSERT_TRUE(
      initiator->TransferSync({Request(OpCode::kWrite, local.data(), *handle, target.addr, 4096)})
          .ok());
  ASSERT_GT(initiator->Stats().shm_bytes, 0u) << "the mapping was not established";
  target.process->Signal(SIGKILL);
  ASSERT_TRUE(target.process->Wait(std::chrono::seconds(5)).ok());
  // The mapping still exists in this process, but the owner is gone: the request must fail
  // rather than report a write nobody will ever read.
  EXPECT_FALSE(
      initiator->TransferSync({Request(OpCode::kWrite, local.data(), *handle, target.addr, 4096)})
          .ok());
}

TEST(MultiProcessTest, EtcdMetadataBackendWithRealEtcd) {
  auto etcd = test_support::EtcdProcess::Start();
  ASSERT_TRUE(etcd.ok()) << etcd.status();
  std::string metadata = "etcd://" + (*etcd)->endpoint();
  Target target = StartTarget({"--size=8388608", "--metadata=" + metadata});
  ASSERT_FALSE(target.segment.empty());
  auto initiator = MakeEngine(metadata, /*enable_shm=*/false);
  auto handle = initiator->OpenSegment(target.segment);
  ASSERT_TRUE(handle.ok()) << handle.status();
  std::vector<char> out(1 << 20), in(1 << 20);
  FillPattern(out.data(), out.size(), 5);
  ASSERT_TRUE(
      initiator
          ->TransferSync({Request(OpCode::kWrite, out.data(), *handle, target.addr, out.size())})
          .ok());
  ASSERT_TRUE(
      initiator->TransferSync({Request(OpCode::kRead, in.data(), *handle, target.addr, in.size())})
          .ok());
  EXPECT_TRUE(MatchesPattern(in.data(), in.size(), 5));
  EXPECT_EQ(initiator->OpenSegment("127.0.0.1:9").status().code(), absl::StatusCode::kNotFound);
}

}  // namespace
}  // namespace yuebing::transport
