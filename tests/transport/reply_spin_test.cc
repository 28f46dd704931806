// SpinUntilReadable over a real loopback TCP connection (bytes already there, bytes arriving
// during the spin, none, EOF; nothing consumed), and AdaptiveSpin's decision to poll: it stops
// after polls keep missing, probes now and then, and resumes once probes are answered again.
#include "transport/reply_spin.h"

#include <gtest/gtest.h>
#include <sys/socket.h>

#include <chrono>
#include <cstdlib>
#include <thread>
#include <utility>

#include "transport/socket_util.h"

namespace yuebing::transport {
namespace {

using std::chrono::microseconds;
using std::chrono::milliseconds;
using std::chrono::steady_clock;

// A connected pair of loopback TCP sockets: `near` polls, `far` sends.
class LoopbackConnection : public ::testing::Test {
 protected:
  void SetUp() override {
    uint16_t port = 0;
    absl::StatusOr<int> listener = ListenTcp("127.0.0.1", 0, &port);
    ASSERT_TRUE(listener.ok()) << listener.status();
    absl::StatusOr<int> far = ConnectTcp("127.0.0.1", port, milliseconds(2000));
    ASSERT_TRUE(far.ok()) << far.status();
    far_ = *far;
    near_ = accept(*listener, nullptr, nullptr);
    CloseFd(*listener);
    ASSERT_GE(near_, 0);
  }
  void TearDown() override {
    CloseFd(near_);
    CloseFd(far_);
  }
  void SendByte(char byte) { ASSERT_TRUE(SendAll(far_, &byte, 1).ok()); }

  int near_ = -1;
  int far_ = -1;
};

TEST_F(LoopbackConnection, ReadableAtOnceWhenBytesWaitAndConsumesNothing) {
  SendByte('x');
  // The byte may still be on its way through the loopback: allow the spin its budget.
  EXPECT_TRUE(SpinUntilReadable(near_, milliseconds(1000)));
  EXPECT_TRUE(SpinUntilReadable(near_, microseconds(1)));  // still there
  char got = 0;
  ASSERT_TRUE(RecvAll(near_, &got, 1).ok());
  EXPECT_EQ(got, 'x');
}

TEST_F(LoopbackConnection, GivesUpAfterItsBudgetWhenNothingComes) {
  const auto start = steady_clock::now();
  EXPECT_FALSE(SpinUntilReadable(near_, microseconds(3000)));
  EXPECT_GE(steady_clock::now() - start, microseconds(3000));
}

TEST_F(LoopbackConnection, ZeroBudgetDoesNotPoll) {
  SendByte('x');
  char got = 0;
  ASSERT_TRUE(RecvAll(near_, &got, 1).ok());  // the byte has arrived; now nothing waits
  SendByte('y');
  EXPECT_TRUE(SpinUntilReadable(near_, milliseconds(1000)));
  EXPECT_FALSE(SpinUntilReadable(near_, microseconds(0)));  // readable, but no poll is made
}

TEST_F(LoopbackConnection, SeesBytesThatArriveDuringTheSpin) {
  std::thread sender([this] {
    std::this_thread::sleep_for(milliseconds(20));
    SendByte('z');
  });
  const auto start = steady_clock::now();
  const bool readable = SpinUntilReadable(near_, milliseconds(5000));
  const auto waited = steady_clock::now() - start;
  sender.join();
  EXPECT_TRUE(readable);
  EXPECT_LT(waited, milliseconds(5000));
  EXPECT_GE(waited, milliseconds(15));
}

TEST_F(LoopbackConnection, ReportsEndOfStreamAsReadable) {
  CloseFd(far_);
  far_ = -1;
  EXPECT_TRUE(SpinUntilReadable(near_, milliseconds(1000)));
  char got = 0;
  EXPECT_FALSE(RecvAll(near_, &got, 1).ok());
}

TEST(AdaptiveSpinTest, ZeroBudgetNeverPolls) {
  AdaptiveSpin spin(microseconds(0));
  for (int i = 0; i < 100; ++i) EXPECT_EQ(spin.Next().count(), 0);
}

TEST(AdaptiveSpinTest, PollsWhileAnsweredStopsAfterMissesAndProbes) {
  AdaptiveSpin spin(microseconds(80));
  for (int i = 0; i < 50; ++i) {
    ASSERT_EQ(spin.Next(), microseconds(80));
    spin.Record(true);
  }
  // Misses: after a few the score falls below the threshold and polling stops.
  int misses = 0;
  while (spin.Next().count() > 0) {
    spin.Record(false);
    ++misses;
    ASSERT_LT(misses, 10);
  }
  EXPECT_GE(misses, 2);
  EXPECT_LT(spin.score(), AdaptiveSpin::kScoreToPoll);
  // Stopped: one wait in kProbeEvery still polls (the one above that returned 0 counted).
  int probes = 0;
  for (uint32_t i = 1; i < 4 * AdaptiveSpin::kProbeEvery; ++i) {
    if (spin.Next().count() > 0) {
      ++probes;
      spin.Record(false);  // a loaded host: the probes miss too
    }
  }
  EXPECT_EQ(probes, 4);
  EXPECT_LT(spin.score(), AdaptiveSpin::kScoreToPoll);
  // Probes answered again: polling resumes after a few of them.
  int waits = 0;
  while (spin.score() < AdaptiveSpin::kScoreToPoll) {
    if (spin.Next().count() > 0) spin.Record(true);
    ASSERT_LT(++waits, 100 * static_cast<int>(AdaptiveSpin::kProbeEvery));
  }
  EXPECT_EQ(spin.Next(), microseconds(80));
}

TEST_F(LoopbackConnection, WaitRecordsWhetherTheReplyCameInTime) {
  AdaptiveSpin spin(microseconds(2000));
  const uint32_t before = spin.score();
  EXPECT_FALSE(spin.Wait(near_));  // nothing comes: a miss
  EXPECT_LT(spin.score(), before);
  SendByte('r');
  const uint32_t after_miss = spin.score();
  EXPECT_TRUE(SpinUntilReadable(near_, milliseconds(1000)));
  EXPECT_TRUE(spin.Wait(near_));  // answered within the budget: a hit
  EXPECT_GT(spin.score(), after_miss);
}

// The budget from the environment: a number of microseconds, capped at one second; anything
// else (unset, not a number, negative) gives the fallback.
TEST(ReplySpinFromEnvironmentTest, ReadsCapsAndFallsBack) {
  constexpr const char* kName = "YUEBING_TEST_REPLY_SPIN_US";
  const std::chrono::microseconds fallback(100);
  unsetenv(kName);
  EXPECT_EQ(ReplySpinFromEnvironment(kName, fallback), fallback);
  const std::pair<const char*, int64_t> cases[] = {{"250", 250}, {"0", 0},    {"5000000", 1000000},
                                                   {"abc", 100}, {"-5", 100}, {"", 100}};
  for (const auto& [value, expected_us] : cases) {
    SCOPED_TRACE(value);
    setenv(kName, value, 1);
    EXPECT_EQ(ReplySpinFromEnvironment(kName, fallback).count(), expected_us);
  }
  unsetenv(kName);
}

}  // namespace
}  // namespace yuebing::transport
