// The engine's choice of transport per request (local, then shm, rdma, tcp in order, by locality)
// and the bound on its blocking waits, observed through fake transports put in place of the
// engine's own (CreateTransferEngine's test seam).
#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <thread>
#include <vector>

#include "absl/strings/match.h"
#include "engine_test_util.h"
#include "transport/transfer_engine_impl.h"
#include "transport/transport.h"
#include "yuebing/common/mutex.h"

namespace yuebing::transport {
namespace {

using testing::FillPattern;
using testing::MakeEngine;
using testing::MatchesPattern;
using testing::Request;

// Records the lengths of the requests it is offered; declines them, completes them at once, or
// holds them (accepts and never finishes them until told to).
class FakeTransport final : public Transport {
 public:
  enum class Mode { kDecline, kComplete, kHold };
  explicit FakeTransport(Mode mode) : mode_(mode) {}

  const char* name() const override { return "fake"; }
  void Submit(PeerSegment* target, TransferBatch* batch, absl::Span<TransportWork> work,
              SteadyTime deadline) override {
    yuebing::MutexLock lock(&mu_);
    for (TransportWork& item : work) {
      offered_.push_back(item.request->length);
      if (mode_ == Mode::kDecline) continue;
      item.task->Start(batch, 1);
      item.accepted = true;
      bytes_ += item.request->length;
      if (mode_ == Mode::kComplete) {
        item.task->FinishSlice(item.request->length, absl::OkStatus());
      } else {
        held_.push_back(item.task);
      }
    }
  }
  uint64_t bytes() const override {
    yuebing::MutexLock lock(&mu_);
    return bytes_;
  }
  std::vector<uint64_t> offered() const {
    yuebing::MutexLock lock(&mu_);
    return offered_;
  }
  // Finishes the request held longest (as a late transport would), if any.
  void ReleaseOldest() {
    yuebing::MutexLock lock(&mu_);
    if (held_.empty()) return;
    held_.front()->FinishSlice(0, absl::UnavailableError("released"));
    held_.erase(held_.begin());
  }
  // Finishes every held request (as a late transport would).
  void ReleaseHeld() {
    yuebing::MutexLock lock(&mu_);
    for (TransferTask* task : held_) task->FinishSlice(0, absl::UnavailableError("released"));
    held_.clear();
  }

 private:
  const Mode mode_;
  mutable yuebing::Mutex mu_;
  std::vector<uint64_t> offered_;
  std::vector<TransferTask*> held_;
  uint64_t bytes_ = 0;
};

TransportOverrides Overrides(std::shared_ptr<Transport> shm, std::shared_ptr<Transport> rdma,
                             std::shared_ptr<Transport> tcp) {
  TransportOverrides overrides;
  overrides.shm = std::move(shm);
  overrides.rdma = std::move(rdma);
  overrides.tcp = std::move(tcp);
  return overrides;
}

std::unique_ptr<TransferEngine> MakeEngineWith(TransportOverrides overrides, bool enable_shm,
                                               std::chrono::milliseconds timeout) {
  TransferEngineOptions options;
  options.local_server_name = "127.0.0.1";
  options.enable_shm = enable_shm;
  options.request_timeout = timeout;
  auto engine = CreateTransferEngine(options, std::move(overrides));
  EXPECT_TRUE(engine.ok()) << engine.status();
  return engine.ok() ? std::move(engine).value() : nullptr;
}

struct Target {
  std::unique_ptr<TransferEngine> engine = MakeEngine();
  std::unique_ptr<char, decltype(&std::free)> plain{
      static_cast<char*>(std::aligned_alloc(4096, 1 << 20)), &std::free};
  char* shm = nullptr;

  Target() {
    EXPECT_TRUE(engine->RegisterLocalMemory(plain.get(), 1 << 20).ok());
    shm = static_cast<char*>(*engine->AllocateSharedMemory(1 << 20));
  }
  uint64_t Plain() const { return reinterpret_cast<uint64_t>(plain.get()); }
  uint64_t Shm() const { return reinterpret_cast<uint64_t>(shm); }
};

TEST(TransportChoiceTest, EachRequestGoesToTheFirstTransportOfItsLocalityThatTakesIt) {
  Target target;
  auto rdma = std::make_shared<FakeTransport>(FakeTransport::Mode::kDecline);
  auto tcp = std::make_shared<FakeTransport>(FakeTransport::Mode::kComplete);
  auto initiator = MakeEngineWith(Overrides(nullptr, rdma, tcp), /*enable_shm=*/true,
                                  std::chrono::milliseconds(5000));
  ASSERT_NE(initiator, nullptr);
  std::vector<char> own(8192), data(8192);
  FillPattern(data.data(), data.size(), 7);
  ASSERT_TRUE(initiator->RegisterLocalMemory(own.data(), own.size()).ok());
  auto handle = initiator->OpenSegment(target.engine->LocalSegmentName());
  ASSERT_TRUE(handle.ok()) << handle.status();

  // Own segment: the local path, nothing else is offered anything.
  ASSERT_TRUE(initiator
                  ->TransferSync({Request(OpCode::kWrite, data.data(), kLocalSegmentHandle,
                                          reinterpret_cast<uint64_t>(own.data()), 100)})
                  .ok());
  EXPECT_EQ(initiator->Stats().local_bytes, 100u);
  EXPECT_TRUE(rdma->offered().empty());
  EXPECT_TRUE(tcp->offered().empty());

  // Same host, range in an shm buffer: shm takes it; the bytes land in the target's memory.
  ASSERT_TRUE(
      initiator->TransferSync({Request(OpCode::kWrite, data.data(), *handle, target.Shm(), 200)})
          .ok());
  EXPECT_EQ(initiator->Stats().shm_bytes, 200u);
  EXPECT_TRUE(MatchesPattern(target.shm, 200, 7));
  EXPECT_TRUE(rdma->offered().empty());

  // Same host, range in a plain buffer: shm declines, then rdma (declines), then tcp.
  ASSERT_TRUE(
      initiator->TransferSync({Request(OpCode::kWrite, data.data(), *handle, target.Plain(), 300)})
          .ok());
  EXPECT_EQ(rdma->offered(), std::vector<uint64_t>{300});
  EXPECT_EQ(tcp->offered(), std::vector<uint64_t>{300});
  EXPECT_EQ(initiator->Stats().tcp_bytes, 300u);
  EXPECT_EQ(initiator->Stats().shm_bytes, 200u);

  // A batch mixing the three: each request on its own path, remote-style ones offered in order.
  ASSERT_TRUE(
      initiator
          ->TransferSync({Request(OpCode::kWrite, data.data(), *handle, target.Plain(), 11),
                          Request(OpCode::kWrite, data.data(), *handle, target.Shm(), 12),
                          Request(OpCode::kWrite, data.data(), kLocalSegmentHandle,
                                  reinterpret_cast<uint64_t>(own.data()), 13),
                          Request(OpCode::kWrite, data.data(), *handle, target.Plain(), 14)})
          .ok());
  EXPECT_EQ(tcp->offered(), (std::vector<uint64_t>{300, 11, 14}));
  EXPECT_EQ(initiator->Stats().shm_bytes, 212u);
  EXPECT_EQ(initiator->Stats().local_bytes, 113u);
}

TEST(TransportChoiceTest, WithoutShmEveryPeerIsRemoteAndRdmaIsTriedBeforeTcp) {
  Target target;
  auto shm = std::make_shared<FakeTransport>(FakeTransport::Mode::kComplete);
  auto rdma = std::make_shared<FakeTransport>(FakeTransport::Mode::kComplete);
  auto tcp = std::make_shared<FakeTransport>(FakeTransport::Mode::kComplete);
  auto initiator = MakeEngineWith(Overrides(shm, rdma, tcp), /*enable_shm=*/false,
                                  std::chrono::milliseconds(5000));
  ASSERT_NE(initiator, nullptr);
  auto handle = initiator->OpenSegment(target.engine->LocalSegmentName());
  ASSERT_TRUE(handle.ok()) << handle.status();
  std::vector<char> data(4096);
  ASSERT_TRUE(
      initiator->TransferSync({Request(OpCode::kWrite, data.data(), *handle, target.Shm(), 400)})
          .ok());
  EXPECT_TRUE(shm->offered().empty());
  EXPECT_EQ(rdma->offered(), std::vector<uint64_t>{400});
  EXPECT_TRUE(tcp->offered().empty());
  EXPECT_EQ(initiator->Stats().rdma_bytes, 400u);
}

TEST(BoundedWaitTest, TransferSyncReturnsWhenATransportNeverFinishesARequest) {
  Target target;
  auto tcp = std::make_shared<FakeTransport>(FakeTransport::Mode::kHold);
  const auto timeout = std::chrono::milliseconds(300);
  auto initiator = MakeEngineWith(Overrides(nullptr, nullptr, tcp), /*enable_shm=*/false, timeout);
  ASSERT_NE(initiator, nullptr);
  auto handle = initiator->OpenSegment(target.engine->LocalSegmentName());
  ASSERT_TRUE(handle.ok()) << handle.status();
  std::vector<char> data(4096);

  auto started = std::chrono::steady_clock::now();
  auto statuses = initiator->TransferSyncStatuses(
      {Request(OpCode::kWrite, data.data(), *handle, target.Plain(), 4096)});
  auto waited = std::chrono::steady_clock::now() - started;
  ASSERT_TRUE(statuses.ok()) << statuses.status();
  ASSERT_EQ(statuses->size(), 1u);
  EXPECT_EQ((*statuses)[0].state, TransferState::kTimeout);
  EXPECT_TRUE(absl::StrContains((*statuses)[0].reason, "after its deadline"))
      << (*statuses)[0].reason;
  EXPECT_GE(waited, timeout + kFinalWaitMargin - std::chrono::milliseconds(50));
  EXPECT_LT(waited, timeout + kFinalWaitMargin + std::chrono::seconds(2));
  EXPECT_EQ(initiator->Stats().overdue_requests, 1u);

  // TransferSync reports the same as kDeadlineExceeded.
  absl::Status status =
      initiator->TransferSync({Request(OpCode::kRead, data.data(), *handle, target.Plain(), 64)});
  EXPECT_EQ(status.code(), absl::StatusCode::kDeadlineExceeded) << status;
  EXPECT_EQ(initiator->Stats().overdue_requests, 2u);

  // The retired batches are still alive: a late finish lands in them, not in freed memory.
  tcp->ReleaseHeld();
  std::this_thread::sleep_for(std::chrono::milliseconds(50));  // the watchdog frees them
}

TEST(BoundedWaitTest, WaitAndFreeBatchFreesTheBatchAndRefusesUnknownOnes) {
  auto engine = MakeEngine();
  std::vector<char> own(4096), data(4096);
  ASSERT_TRUE(engine->RegisterLocalMemory(own.data(), own.size()).ok());
  auto batch = engine->AllocateBatch(2);
  ASSERT_TRUE(batch.ok());
  ASSERT_TRUE(
      engine
          ->SubmitTransfer(*batch, {Request(OpCode::kWrite, data.data(), kLocalSegmentHandle,
                                            reinterpret_cast<uint64_t>(own.data()), 64)})
          .ok());
  auto statuses = engine->WaitAndFreeBatch(*batch);
  ASSERT_TRUE(statuses.ok()) << statuses.status();
  ASSERT_EQ(statuses->size(), 1u);
  EXPECT_EQ((*statuses)[0].state, TransferState::kCompleted);
  EXPECT_EQ(engine->WaitAndFreeBatch(*batch).status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(engine->FreeBatch(*batch).code(), absl::StatusCode::kNotFound);
}

TEST(BoundedWaitTest, WaitTransferReturnsWhenItsRequestIsFinalOrItsTimeoutPasses) {
  Target target;
  auto tcp = std::make_shared<FakeTransport>(FakeTransport::Mode::kHold);
  auto initiator = MakeEngineWith(Overrides(nullptr, nullptr, tcp), /*enable_shm=*/false,
                                  std::chrono::milliseconds(30000));
  ASSERT_NE(initiator, nullptr);
  auto handle = initiator->OpenSegment(target.engine->LocalSegmentName());
  ASSERT_TRUE(handle.ok()) << handle.status();
  std::vector<char> data(4096);
  auto batch = initiator->AllocateBatch(2);
  ASSERT_TRUE(batch.ok()) << batch.status();
  ASSERT_TRUE(initiator
                  ->SubmitTransfer(
                      *batch, {Request(OpCode::kWrite, data.data(), *handle, target.Plain(), 100),
                               Request(OpCode::kWrite, data.data(), *handle, target.Plain(), 200)})
                  .ok());
  using std::chrono::milliseconds;
  // Nothing final: the wait lasts its timeout and reports the request still in flight.
  auto started = std::chrono::steady_clock::now();
  auto status = initiator->WaitTransfer(*batch, 0, milliseconds(60));
  ASSERT_TRUE(status.ok()) << status.status();
  EXPECT_EQ(status->state, TransferState::kPending);
  EXPECT_GE(std::chrono::steady_clock::now() - started, milliseconds(55));
  EXPECT_EQ(initiator->WaitTransfer(*batch, 2, milliseconds(10)).status().code(),
            absl::StatusCode::kInvalidArgument);
  // The request ends while the batch does not: the waiter wakes then, not at its timeout.
  std::thread release([&] {
    std::this_thread::sleep_for(milliseconds(100));
    tcp->ReleaseOldest();
  });
  started = std::chrono::steady_clock::now();
  status = initiator->WaitTransfer(*batch, 0, milliseconds(20000));
  const auto waited = std::chrono::steady_clock::now() - started;
  release.join();
  ASSERT_TRUE(status.ok()) << status.status();
  EXPECT_EQ(status->state, TransferState::kFailed);
  EXPECT_EQ(status->reason, "released");
  EXPECT_LT(waited, milliseconds(5000));
  EXPECT_EQ(initiator->WaitTransfer(*batch, 1, milliseconds(10))->state, TransferState::kPending);
  tcp->ReleaseHeld();
  EXPECT_EQ(initiator->WaitTransfer(*batch, 1, milliseconds(10))->state, TransferState::kFailed);
  EXPECT_TRUE(initiator->WaitAndFreeBatch(*batch).ok());
}

}  // namespace
}  // namespace yuebing::transport
