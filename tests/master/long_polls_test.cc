// LongPolls: parked calls finish when an attempt succeeds after Notify or RunNow, at their
// deadline, or at Stop, exactly once each, with several threads parking and notifying at once.
#include "master/long_polls.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <thread>
#include <vector>

namespace yuebing::master {
namespace {

using namespace std::chrono_literals;
using Clock = LongPolls::Clock;

TEST(LongPollsTest, AnAttemptFinishesWhenItsConditionHoldsAfterANotify) {
  LongPolls polls;
  std::atomic<bool> ready{false};
  std::atomic<int> finished{0};
  std::atomic<bool> forced{false};
  polls.Park(
      [&](bool must_finish) {
        if (!must_finish && !ready.load()) return false;
        forced = must_finish;
        ++finished;
        return true;
      },
      Clock::now() + 10s, polls.Changes());
  std::this_thread::sleep_for(20ms);
  EXPECT_EQ(finished.load(), 0);
  ready = true;
  polls.Notify();
  for (int i = 0; i < 200 && finished.load() == 0; ++i) std::this_thread::sleep_for(5ms);
  EXPECT_EQ(finished.load(), 1);
  EXPECT_FALSE(forced.load());
}

// The caller's attempt failed, then the change it waits for was announced while nothing was
// parked (no one to wake), then it parked: it must not sleep until its deadline.
TEST(LongPollsTest, AChangeBetweenAFailedAttemptAndParkIsNotLost) {
  LongPolls polls(/*tick=*/1h);  // no periodic retry hides a lost change
  std::atomic<bool> ready{false};
  std::atomic<int> finished{0};
  auto attempt = [&](bool must_finish) {
    if (!must_finish && !ready.load()) return false;
    ++finished;
    return true;
  };
  const uint64_t seen = polls.Changes();
  ASSERT_FALSE(attempt(false));
  ready = true;
  polls.Notify();
  const auto start = Clock::now();
  polls.Park(attempt, start + 10s, seen);
  for (int i = 0; i < 400 && finished.load() == 0; ++i) std::this_thread::sleep_for(5ms);
  EXPECT_EQ(finished.load(), 1);
}

// Parking calls whose deadlines come after the thread's next wake-up, and trying them again with
// RunNow while nothing they wait for has come, does not wake the poll thread (each wake-up is a
// context switch; a master woke it three times per put).
TEST(LongPollsTest, ParkingAndRetryingCallsThatAreNotDueDoesNotWakeThePollThread) {
  LongPolls polls(/*tick=*/1h);
  std::atomic<int> finished{0};
  auto never_ready = [&](bool must_finish) {
    if (must_finish) ++finished;
    return must_finish;
  };
  // The first call is due before the thread's next wake-up: it wakes the thread, which then
  // sleeps until that call's deadline.
  polls.Park(never_ready, Clock::now() + 10min, polls.Changes());
  std::this_thread::sleep_for(20ms);
  const uint64_t before = polls.Wakeups();
  for (int i = 0; i < 20; ++i) {
    polls.Park(never_ready, Clock::now() + 10min, polls.Changes());
    polls.RunNow();
    std::this_thread::sleep_for(2ms);  // time for a woken thread to run
  }
  EXPECT_EQ(polls.Wakeups(), before);
  polls.Stop();
  EXPECT_EQ(finished.load(), 21);
}

TEST(LongPollsTest, AnAttemptIsForcedAtItsDeadlineAndAtStop) {
  std::atomic<int> at_deadline{0};
  std::atomic<int> at_stop{0};
  {
    LongPolls polls;
    const auto start = Clock::now();
    polls.Park(
        [&](bool must_finish) {
          if (!must_finish) return false;
          ++at_deadline;
          EXPECT_GE(Clock::now() - start, 50ms);
          return true;
        },
        start + 50ms, polls.Changes());
    polls.Park(
        [&](bool must_finish) {
          if (!must_finish) return false;
          ++at_stop;
          return true;
        },
        start + 1h, polls.Changes());
    for (int i = 0; i < 200 && at_deadline.load() == 0; ++i) std::this_thread::sleep_for(5ms);
    EXPECT_EQ(at_deadline.load(), 1);
    EXPECT_EQ(at_stop.load(), 0);
  }  // the destructor stops: the second call is finished
  EXPECT_EQ(at_stop.load(), 1);
}

TEST(LongPollsTest, ManyThreadsParkingNotifyingAndRunningNowFinishEachCallOnce) {
  constexpr int kThreads = 4;
  constexpr int kCallsPerThread = 200;
  std::atomic<int> generation{0};
  std::vector<std::atomic<int>> finished(kThreads * kCallsPerThread);
  LongPolls polls;
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < kCallsPerThread; ++i) {
        const int id = t * kCallsPerThread + i;
        const int wanted = generation.load() + 1;
        polls.Park(
            [&, id, wanted](bool must_finish) {
              if (!must_finish && generation.load() < wanted) return false;
              ++finished[id];
              return true;
            },
            Clock::now() + 5s, polls.Changes());
        ++generation;
        if (i % 2 == 0) {
          polls.Notify();
        } else {
          polls.RunNow();
        }
      }
    });
  }
  for (std::thread& thread : threads) thread.join();
  polls.Stop();
  for (int id = 0; id < kThreads * kCallsPerThread; ++id) {
    EXPECT_EQ(finished[id].load(), 1) << "call " << id;
  }
  // After Stop an attempt runs at once, forced.
  bool ran = false;
  polls.Park([&](bool must_finish) { return ran = must_finish; }, Clock::now() + 1h,
             polls.Changes());
  EXPECT_TRUE(ran);
}

}  // namespace
}  // namespace yuebing::master
