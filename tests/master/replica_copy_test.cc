// MasterService::ReplicaCopyStart / ReplicaCopyEnd: new replicas reserved on the targets and
// added at the end, a move dropping its source (held while readers may use it), revokes and the
// cancellations shared with replacing puts (removal, target unmount). FakeClock, no threads.
#include <gtest/gtest.h>

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "yuebing/common/clock.h"
#include "yuebing/common/error_code.h"
#include "yuebing/common/limits.h"
#include "yuebing/master/master_service.h"

namespace yuebing::master {
namespace {

using namespace std::chrono_literals;

constexpr uint64_t kBlock = 1024;

class ReplicaCopyTest : public ::testing::Test {
 protected:
  ReplicaCopyTest() {
    options_.num_shards = 4;
    options_.default_kv_lease_ttl = 2s;
    options_.client_ttl = 3600s;
    master_ = std::make_unique<MasterService>(options_, clock_);
    for (const char* name : {"seg1", "seg2", "seg3"}) {
      EXPECT_TRUE(master_->MountSegment("c1", Segment{name, 0x100000, 16 * kBlock}).ok());
    }
  }

  void Put(const std::string& key) {
    ReplicateConfig config;
    config.preferred_segment = "seg1";
    ASSERT_TRUE(master_->PutStart("c1", key, kBlock, config).ok()) << key;
    ASSERT_TRUE(master_->PutEnd("c1", key, 7).ok()) << key;
  }
  std::vector<std::string> SegmentsOf(const std::string& key) {
    std::vector<std::string> names;
    absl::StatusOr<ObjectLocation> location = master_->QueryReplicas(key);
    if (location.ok()) {
      for (const Replica& r : location->replicas) names.push_back(r.segment_name);
    }
    return names;
  }
  ErrorCode StartCode(const std::string& key, const std::string& source,
                      const std::vector<std::string>& targets, bool move) {
    return ToErrorCode(master_->ReplicaCopyStart("c1", key, source, targets, move).status());
  }
  uint64_t Used() { return master_->Stats().used_bytes; }

  FakeClock clock_;
  MasterOptions options_;
  std::unique_ptr<MasterService> master_;
};

TEST_F(ReplicaCopyTest, ACopyIsReadableFromItsNewReplicasOnlyAfterItsEnd) {
  Put("a");
  absl::StatusOr<CopyPlan> plan = master_->ReplicaCopyStart("c1", "a", "", {"seg2", "seg3"}, false);
  ASSERT_TRUE(plan.ok()) << plan.status();
  EXPECT_EQ(plan->size, kBlock);
  EXPECT_EQ(plan->checksum, 7u);
  ASSERT_EQ(plan->targets.size(), 2u);
  EXPECT_EQ(plan->targets[0].segment_name, "seg2");
  EXPECT_EQ(Used(), 3 * kBlock);
  EXPECT_EQ(SegmentsOf("a"), std::vector<std::string>{"seg1"});  // not yet
  // Nothing else may replace or copy the object meanwhile.
  EXPECT_EQ(StartCode("a", "", {"seg2"}, false), ErrorCode::kObjectHasReplicationTask);
  EXPECT_EQ(ToErrorCode(master_->UpsertStart("c1", "a", kBlock, {}).status()),
            ErrorCode::kObjectAlreadyExists);
  EXPECT_EQ(ToErrorCode(master_->PutEnd("c1", "a", 7)), ErrorCode::kObjectHasReplicationTask);
  EXPECT_EQ(ToErrorCode(master_->ReplicaCopyEnd("c2", "a", false)), ErrorCode::kIllegalClient);
  ASSERT_TRUE(master_->ReplicaCopyEnd("c1", "a", false).ok());
  EXPECT_EQ(SegmentsOf("a"), (std::vector<std::string>{"seg1", "seg2", "seg3"}));
  EXPECT_EQ(ToErrorCode(master_->ReplicaCopyEnd("c1", "a", false)), ErrorCode::kObjectNotFound);
  // The new replicas are listed on their segments: unmounting seg1 leaves the object.
  ASSERT_TRUE(master_->UnmountSegment("c1", "seg1").ok());
  EXPECT_EQ(SegmentsOf("a"), (std::vector<std::string>{"seg2", "seg3"}));
}

TEST_F(ReplicaCopyTest, TargetsHoldingAReplicaAreSkipped) {
  Put("a");
  absl::StatusOr<CopyPlan> plan = master_->ReplicaCopyStart("c1", "a", "", {"seg1"}, false);
  ASSERT_TRUE(plan.ok());
  EXPECT_TRUE(plan->targets.empty());  // nothing to do, nothing reserved
  EXPECT_EQ(StartCode("a", "", {"seg2"}, false), ErrorCode::kOk);  // not blocked
}

TEST_F(ReplicaCopyTest, AMoveDropsItsSourceAtTheEnd) {
  Put("a");
  ASSERT_TRUE(master_->ReplicaCopyStart("c1", "a", "seg1", {"seg2"}, true).ok());
  EXPECT_EQ(SegmentsOf("a"), std::vector<std::string>{"seg1"});
  ASSERT_TRUE(master_->ReplicaCopyEnd("c1", "a", false).ok());
  EXPECT_EQ(SegmentsOf("a"), std::vector<std::string>{"seg2"});
  EXPECT_EQ(Used(), kBlock);  // no reader: the source's space is free at once
}

TEST_F(ReplicaCopyTest, AMovedSourceStaysAllocatedWhileAReaderMayUseIt) {
  Put("a");
  ASSERT_TRUE(master_->GetReplicaList("a").ok());  // a reader, lease 2 s
  ASSERT_TRUE(master_->ReplicaCopyStart("c1", "a", "seg1", {"seg2"}, true).ok());
  ASSERT_TRUE(master_->ReplicaCopyEnd("c1", "a", false).ok());
  EXPECT_EQ(SegmentsOf("a"), std::vector<std::string>{"seg2"});
  EXPECT_EQ(Used(), 2 * kBlock);
  clock_.Advance(3s);
  master_->Tick();
  EXPECT_EQ(Used(), kBlock);
}

TEST_F(ReplicaCopyTest, AMoveToASegmentHoldingAReplicaOnlyDropsTheSource) {
  Put("a");
  ASSERT_TRUE(master_->ReplicaCopyStart("c1", "a", "", {"seg2"}, false).ok());
  ASSERT_TRUE(master_->ReplicaCopyEnd("c1", "a", false).ok());
  absl::StatusOr<CopyPlan> plan = master_->ReplicaCopyStart("c1", "a", "seg1", {"seg2"}, true);
  ASSERT_TRUE(plan.ok());
  EXPECT_TRUE(plan->targets.empty());
  EXPECT_EQ(SegmentsOf("a"), std::vector<std::string>{"seg2"});
  EXPECT_EQ(Used(), kBlock);
}

TEST_F(ReplicaCopyTest, BadRequestsAreRefusedAndReserveNothing) {
  Put("a");
  EXPECT_EQ(StartCode("missing", "", {"seg2"}, false), ErrorCode::kObjectNotFound);
  EXPECT_EQ(StartCode("a", "", {}, false), ErrorCode::kInvalidParams);
  EXPECT_EQ(StartCode("a", "", {"seg2", "nowhere"}, false), ErrorCode::kInvalidParams);
  EXPECT_EQ(StartCode("a", "seg2", {"seg3"}, true), ErrorCode::kInvalidParams);  // no replica
  EXPECT_EQ(StartCode("a", "nowhere", {"seg3"}, true), ErrorCode::kInvalidParams);
  EXPECT_EQ(StartCode("a", "seg1", {"seg1"}, true), ErrorCode::kInvalidParams);
  EXPECT_EQ(StartCode("a", "seg1", {"seg2", "seg3"}, true), ErrorCode::kInvalidParams);
  EXPECT_EQ(StartCode("a", "", {"seg2"}, true), ErrorCode::kInvalidParams);
  EXPECT_EQ(Used(), kBlock);
  // A target without room fails the whole start.
  ASSERT_TRUE(master_->MountSegment("c1", Segment{"tiny", 0x900000, 512}).ok());
  EXPECT_EQ(StartCode("a", "", {"seg2", "tiny"}, false), ErrorCode::kNoAvailableHandle);
  EXPECT_EQ(Used(), kBlock);
}

TEST_F(ReplicaCopyTest, AnObjectKeepsAtMostTheReplicaLimit) {
  Put("a");
  std::vector<std::string> targets;
  for (uint32_t i = 0; i < limits::kMaxReplicas; ++i) {
    targets.push_back(absl::StrCat("extra", i));
    ASSERT_TRUE(
        master_->MountSegment("c1", Segment{targets.back(), 0x1000000 * (i + 2), kBlock}).ok());
  }
  EXPECT_EQ(StartCode("a", "", targets, false), ErrorCode::kInvalidParams);  // 1 + 64
  targets.pop_back();
  EXPECT_EQ(StartCode("a", "", targets, false), ErrorCode::kOk);  // 64 in all
}

TEST_F(ReplicaCopyTest, RevokeRemovalAndTargetUnmountCancelTheCopy) {
  Put("a");
  ASSERT_TRUE(master_->ReplicaCopyStart("c1", "a", "", {"seg2"}, false).ok());
  ASSERT_TRUE(master_->ReplicaCopyEnd("c1", "a", true).ok());
  EXPECT_EQ(Used(), kBlock);
  EXPECT_EQ(SegmentsOf("a"), std::vector<std::string>{"seg1"});

  ASSERT_TRUE(master_->ReplicaCopyStart("c1", "a", "", {"seg3"}, false).ok());
  ASSERT_TRUE(master_->UnmountSegment("c1", "seg3").ok());
  EXPECT_EQ(ToErrorCode(master_->ReplicaCopyEnd("c1", "a", false)), ErrorCode::kObjectNotFound);
  EXPECT_EQ(SegmentsOf("a"), std::vector<std::string>{"seg1"});

  ASSERT_TRUE(master_->ReplicaCopyStart("c1", "a", "", {"seg2"}, false).ok());
  ASSERT_TRUE(master_->Remove("a").ok());
  EXPECT_EQ(ToErrorCode(master_->ReplicaCopyEnd("c1", "a", false)), ErrorCode::kObjectNotFound);
  EXPECT_FALSE(master_->Exist("a"));
}

}  // namespace
}  // namespace yuebing::master
