#include "yuebing/common/check.h"

#include <gtest/gtest.h>

namespace yuebing {
namespace {

TEST(CheckTest, HoldingConditionEvaluatesOnceAndContinues) {
  int evaluations = 0;
  YB_CHECK(++evaluations == 1, "evaluated once");
  EXPECT_EQ(evaluations, 1);
}

TEST(CheckDeathTest, FailingConditionAbortsWithLocationConditionAndMessage) {
  const int queued = 3;
  EXPECT_DEATH(YB_CHECK(queued <= 2, "queue bound"),
               "check failed at .*check_test.cc:[0-9]+: queued <= 2 \\(queue bound\\)");
}

}  // namespace
}  // namespace yuebing
