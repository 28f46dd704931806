#include "yuebing/common/clock.h"

#include <gtest/gtest.h>

#include <chrono>
#include <thread>
#include <vector>

namespace yuebing {
namespace {

using namespace std::chrono_literals;

TEST(FakeClockTest, StartsWhereToldAndStandsStill) {
  const SteadyTime start(5s);
  FakeClock clock(start);
  EXPECT_EQ(clock.Now(), start);
  std::this_thread::sleep_for(2ms);
  EXPECT_EQ(clock.Now(), start);
  EXPECT_EQ(clock.WallMillis(), 5000);
}

TEST(FakeClockTest, DefaultStartIsNotZero) {
  FakeClock clock;
  EXPECT_GT(clock.Now().time_since_epoch(), 0s);
}

TEST(FakeClockTest, AdvanceMovesNowAndWallMillis) {
  FakeClock clock(SteadyTime(1s));
  clock.Advance(1500ms);
  EXPECT_EQ(clock.Now(), SteadyTime(2500ms));
  EXPECT_EQ(clock.WallMillis(), 2500);
  clock.Advance(1ns);
  EXPECT_EQ(clock.Now(), SteadyTime(2500ms + 1ns));
  clock.Advance(0ns);
  EXPECT_EQ(clock.Now(), SteadyTime(2500ms + 1ns));
}

TEST(FakeClockTest, ConcurrentAdvancesAreAllApplied) {
  FakeClock clock(SteadyTime(0s));
  constexpr int kThreads = 4;
  constexpr int kSteps = 10000;
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&clock] {
      for (int i = 0; i < kSteps; ++i) clock.Advance(1us);
    });
  }
  for (std::thread& thread : threads) thread.join();
  EXPECT_EQ(clock.Now(), SteadyTime(std::chrono::microseconds(kThreads * kSteps)));
}

TEST(FakeClockTest, UsableThroughClockInterface) {
  FakeClock fake(SteadyTime(10s));
  Clock& clock = fake;
  const SteadyTime before = clock.Now();
  fake.Advance(3s);
  EXPECT_EQ(clock.Now() - before, 3s);
}

TEST(RealClockTest, IsMonotonicAndWallClockIsRecent) {
  Clock& clock = Clock::Real();
  EXPECT_EQ(&clock, &Clock::Real());
  const SteadyTime first = clock.Now();
  std::this_thread::sleep_for(1ms);
  EXPECT_GT(clock.Now(), first);
  // 2020-01-01T00:00:00Z in Unix milliseconds.
  EXPECT_GT(clock.WallMillis(), int64_t{1577836800000});
}

}  // namespace
}  // namespace yuebing
