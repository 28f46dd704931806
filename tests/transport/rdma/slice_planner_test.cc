#include "transport/rdma/slice_planner.h"

#include <gtest/gtest.h>

#include <map>

namespace yuebing::transport::rdma {
namespace {

TEST(SlicePlannerTest, CoversTheRequestInOrderWithAShortLastSlice) {
  auto plan =
      PlanSlices({.length = 10 * 1000 + 7, .slice_bytes = 1000, .paths = 1, .qps_per_path = 1});
  ASSERT_TRUE(plan.ok()) << plan.status();
  ASSERT_EQ(plan->size(), 11u);
  uint64_t next = 0;
  for (const PlannedSlice& s : *plan) {
    EXPECT_EQ(s.offset, next);
    next += s.length;
  }
  EXPECT_EQ(next, 10 * 1000 + 7u);
  EXPECT_EQ(plan->back().length, 7u);
}

TEST(SlicePlannerTest, ExactMultipleHasNoEmptySlice) {
  auto plan = PlanSlices({.length = 4096, .slice_bytes = 1024, .paths = 2, .qps_per_path = 2});
  ASSERT_TRUE(plan.ok());
  ASSERT_EQ(plan->size(), 4u);
  for (const PlannedSlice& s : *plan) EXPECT_EQ(s.length, 1024u);
}

TEST(SlicePlannerTest, StripesOverPathsAndQpsEvenly) {
  auto plan =
      PlanSlices({.length = 24 << 10, .slice_bytes = 1 << 10, .paths = 3, .qps_per_path = 2});
  ASSERT_TRUE(plan.ok());
  std::map<std::pair<uint32_t, uint32_t>, int> per_qp;
  for (const PlannedSlice& s : *plan) {
    ASSERT_LT(s.path, 3u);
    ASSERT_LT(s.qp, 2u);
    ++per_qp[{s.path, s.qp}];
  }
  ASSERT_EQ(per_qp.size(), 6u);  // every (NIC, QP) is used
  for (auto& [key, count] : per_qp) EXPECT_EQ(count, 4) << key.first << "/" << key.second;
  // Consecutive slices go to different NICs.
  for (size_t i = 1; i < plan->size(); ++i) EXPECT_NE((*plan)[i].path, (*plan)[i - 1].path);
}

TEST(SlicePlannerTest, RotationSpreadsSmallRequests) {
  std::map<uint32_t, int> first_path;
  for (uint64_t r = 0; r < 8; ++r) {
    auto plan = PlanSlices(
        {.length = 100, .slice_bytes = 4096, .paths = 4, .qps_per_path = 1, .rotation = r});
    ASSERT_TRUE(plan.ok());
    ASSERT_EQ(plan->size(), 1u);
    ++first_path[plan->front().path];
  }
  EXPECT_EQ(first_path.size(), 4u);
}

TEST(SlicePlannerTest, RejectsBadInput) {
  EXPECT_EQ(
      PlanSlices({.length = 0, .slice_bytes = 1, .paths = 1, .qps_per_path = 1}).status().code(),
      absl::StatusCode::kInvalidArgument);
  EXPECT_FALSE(PlanSlices({.length = 1, .slice_bytes = 0, .paths = 1, .qps_per_path = 1}).ok());
  EXPECT_FALSE(PlanSlices({.length = 1, .slice_bytes = 1, .paths = 0, .qps_per_path = 1}).ok());
  EXPECT_FALSE(PlanSlices({.length = 1, .slice_bytes = 1, .paths = 1, .qps_per_path = 0}).ok());
  EXPECT_EQ(
      PlanSlices(
          {.length = 1 << 20, .slice_bytes = 1, .paths = 1, .qps_per_path = 1, .max_slices = 1000})
          .status()
          .code(),
      absl::StatusCode::kResourceExhausted);
}

TEST(SlicePlannerTest, PairsLocalNicsWithRemoteRails) {
  EXPECT_EQ(PairRemoteNics(4, 2), (std::vector<uint32_t>{0, 1, 0, 1}));
  EXPECT_EQ(PairRemoteNics(2, 4), (std::vector<uint32_t>{0, 1}));
  EXPECT_TRUE(PairRemoteNics(3, 0).empty());
}

}  // namespace
}  // namespace yuebing::transport::rdma
