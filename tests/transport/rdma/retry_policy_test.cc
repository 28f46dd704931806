#include "transport/rdma/retry_policy.h"

#include <gtest/gtest.h>

namespace yuebing::transport::rdma {
namespace {

auto AllUsable() {
  return [](uint32_t) { return true; };
}

TEST(RetryPolicyTest, RetriesOnAnotherPathFirst) {
  SliceAttempts attempts{1, {0}};
  EXPECT_EQ(NextPath(attempts, true, 3, 5, AllUsable()), 1u);
  attempts = {2, {0, 1}};
  EXPECT_EQ(NextPath(attempts, true, 3, 5, AllUsable()), 2u);
}

TEST(RetryPolicyTest, SkipsUnhealthyNicsWhileOthersRemain) {
  SliceAttempts attempts{1, {0}};
  auto usable = [](uint32_t path) { return path != 1; };
  EXPECT_EQ(NextPath(attempts, true, 3, 5, usable), 2u);
}

TEST(RetryPolicyTest, UsesAnUnhealthyUntriedPathBeforeGivingUp) {
  SliceAttempts attempts{1, {0}};
  auto none = [](uint32_t) { return false; };
  EXPECT_EQ(NextPath(attempts, true, 2, 5, none), 1u);
}

TEST(RetryPolicyTest, AfterEveryPathFailedRetriesAnotherOneThenTheSame) {
  SliceAttempts attempts{2, {0, 1}};
  EXPECT_EQ(NextPath(attempts, true, 2, 5, AllUsable()), 0u);  // not the one that just failed
  attempts = {1, {0}};
  EXPECT_EQ(NextPath(attempts, true, 1, 5, AllUsable()), 0u);  // single path: same again
}

TEST(RetryPolicyTest, GivesUpAfterMaxAttemptsOrOnFatalErrors) {
  SliceAttempts attempts{3, {0, 1, 2}};
  EXPECT_EQ(NextPath(attempts, true, 4, 3, AllUsable()), std::nullopt);
  attempts = {1, {0}};
  EXPECT_EQ(NextPath(attempts, false, 4, 3, AllUsable()), std::nullopt);
  EXPECT_EQ(NextPath(attempts, true, 0, 3, AllUsable()), std::nullopt);
}

TEST(NicHealthTest, QuarantinesAfterConsecutiveFailuresUntilCooldown) {
  FakeClock clock;
  NicHealth health(2, 3, std::chrono::milliseconds(500), clock);
  health.RecordFailure(0);
  health.RecordFailure(0);
  EXPECT_TRUE(health.Usable(0));
  health.RecordFailure(0);
  EXPECT_FALSE(health.Usable(0));
  EXPECT_TRUE(health.Usable(1));
  clock.Advance(std::chrono::milliseconds(499));
  EXPECT_FALSE(health.Usable(0));
  clock.Advance(std::chrono::milliseconds(1));
  EXPECT_TRUE(health.Usable(0));
  EXPECT_FALSE(health.Usable(2));  // out of range
}

TEST(NicHealthTest, SuccessResetsTheFailureCount) {
  FakeClock clock;
  NicHealth health(1, 2, std::chrono::milliseconds(100), clock);
  health.RecordFailure(0);
  health.RecordSuccess(0);
  health.RecordFailure(0);
  EXPECT_TRUE(health.Usable(0));
}

}  // namespace
}  // namespace yuebing::transport::rdma
