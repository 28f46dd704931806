// MasterService drain jobs: validation, placement closed on draining segments, the moves handed
// to each segment's owner (FetchDrainWork) and made as a store does (ReplicaCopyStart/End with
// move), re-offers after a timeout, failure after kMaxDrainAttempts, cancel, a source unmounted
// mid-job, and the segment statuses. FakeClock, no threads: the test plays the stores.
#include <gtest/gtest.h>

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "yuebing/common/clock.h"
#include "yuebing/common/error_code.h"
#include "yuebing/master/master_service.h"

namespace yuebing::master {
namespace {

using namespace std::chrono_literals;

constexpr uint64_t kBlock = 1024;

class DrainJobsTest : public ::testing::Test {
 protected:
  DrainJobsTest() {
    options_.num_shards = 4;
    options_.client_ttl = 3600s;
    master_ = std::make_unique<MasterService>(options_, clock_);
    // Each segment has its own owner, as stores do.
    for (uint64_t i = 1; i <= 3; ++i) {
      EXPECT_TRUE(master_
                      ->MountSegment(absl::StrCat("owner", i),
                                     Segment{absl::StrCat("seg", i), 0x100000 * i, 64 * kBlock})
                      .ok());
    }
  }

  void Put(const std::string& key, const std::string& segment) {
    ReplicateConfig config;
    config.preferred_segment = segment;
    ASSERT_TRUE(master_->PutStart("writer", key, kBlock, config).ok()) << key;
    ASSERT_TRUE(master_->PutEnd("writer", key, 7).ok()) << key;
  }
  std::vector<std::string> SegmentsOf(const std::string& key) {
    std::vector<std::string> names;
    absl::StatusOr<ObjectLocation> location = master_->QueryReplicas(key);
    if (location.ok()) {
      for (const Replica& r : location->replicas) names.push_back(r.segment_name);
    }
    return names;
  }
  std::string Create(std::vector<std::string> segments, std::vector<std::string> targets = {},
                     uint32_t max_concurrency = 4) {
    absl::StatusOr<std::string> id = master_->CreateDrainJob(
        DrainJobRequest{std::move(segments), std::move(targets), max_concurrency});
    EXPECT_TRUE(id.ok()) << id.status();
    return id.ok() ? *id : "";
  }
  ErrorCode CreateCode(std::vector<std::string> segments, std::vector<std::string> targets = {},
                       uint32_t max_concurrency = 4) {
    return ToErrorCode(master_
                           ->CreateDrainJob(DrainJobRequest{std::move(segments), std::move(targets),
                                                            max_concurrency})
                           .status());
  }
  // What a store's DrainWorker does with each unit (the bytes themselves are not simulated).
  size_t Work(const std::string& owner, bool succeed = true) {
    absl::StatusOr<std::vector<DrainUnit>> units = master_->FetchDrainWork(owner, 64);
    EXPECT_TRUE(units.ok()) << units.status();
    for (const DrainUnit& unit : *units) {
      absl::Status outcome = MakeError(ErrorCode::kTransferFail, "simulated");
      if (succeed) {
        absl::StatusOr<CopyPlan> plan =
            master_->ReplicaCopyStart(owner, unit.key, unit.source, {unit.target}, true);
        outcome = plan.status();
        if (plan.ok()) outcome = master_->ReplicaCopyEnd(owner, unit.key, false);
      }
      master_->ReportDrainWork(owner, unit.job_id, unit.key, outcome);
    }
    return units->size();
  }
  DrainJobInfo Query(const std::string& id) {
    absl::StatusOr<DrainJobInfo> info = master_->QueryDrainJob(id);
    EXPECT_TRUE(info.ok()) << info.status();
    return info.ok() ? *info : DrainJobInfo{};
  }
  SegmentStatus Status(const std::string& segment) {
    absl::StatusOr<SegmentStatus> status = master_->QuerySegmentStatus(segment);
    EXPECT_TRUE(status.ok()) << status.status();
    return status.ok() ? *status : SegmentStatus::kUndefined;
  }

  FakeClock clock_;
  MasterOptions options_;
  std::unique_ptr<MasterService> master_;
};

TEST_F(DrainJobsTest, RequestsAreChecked) {
  EXPECT_EQ(CreateCode({}), ErrorCode::kInvalidParams);
  EXPECT_EQ(CreateCode({"seg1", "seg1"}), ErrorCode::kInvalidParams);
  EXPECT_EQ(CreateCode({"seg1"}, {}, 0), ErrorCode::kInvalidParams);
  EXPECT_EQ(CreateCode({"seg1"}, {"seg1"}), ErrorCode::kInvalidParams);
  EXPECT_EQ(CreateCode({"nope"}), ErrorCode::kSegmentNotFound);
  EXPECT_EQ(CreateCode({"seg1"}, {"nope"}), ErrorCode::kSegmentNotFound);
  EXPECT_EQ(ToErrorCode(master_->QueryDrainJob("nope").status()), ErrorCode::kJobNotFound);
  EXPECT_EQ(ToErrorCode(master_->CancelDrainJob("nope")), ErrorCode::kJobNotFound);
  EXPECT_EQ(ToErrorCode(master_->QuerySegmentStatus("nope").status()), ErrorCode::kSegmentNotFound);
  // Nothing was marked by the refused requests.
  EXPECT_EQ(Status("seg1"), SegmentStatus::kOk);
  Create({"seg1"}, {"seg2"});
  EXPECT_EQ(CreateCode({"seg1"}), ErrorCode::kUnavailableInCurrentStatus);  // draining already
  EXPECT_EQ(CreateCode({"seg3"}, {"seg1"}), ErrorCode::kUnavailableInCurrentStatus);
}

TEST_F(DrainJobsTest, MovesEveryObjectToTheTargetAndEndsDrained) {
  for (int i = 0; i < 10; ++i) Put(absl::StrCat("k", i), "seg1");
  Put("elsewhere", "seg3");
  const std::string id = Create({"seg1"}, {"seg2"}, /*max_concurrency=*/3);
  EXPECT_EQ(Status("seg1"), SegmentStatus::kDraining);
  DrainJobInfo info = Query(id);
  EXPECT_EQ(info.status, DrainJobStatus::kRunning);
  EXPECT_EQ(info.segments, std::vector<std::string>{"seg1"});
  // A put preferring the draining segment goes elsewhere.
  Put("late", "seg1");
  EXPECT_NE(SegmentsOf("late"), std::vector<std::string>{"seg1"});
  // Only the segment's owner gets work, at most max_concurrency at a time.
  EXPECT_EQ(Work("owner2"), 0u);
  absl::StatusOr<std::vector<DrainUnit>> units = master_->FetchDrainWork("owner1", 64);
  ASSERT_TRUE(units.ok());
  ASSERT_EQ(units->size(), 3u);
  EXPECT_EQ(Query(id).active_units, 3u);
  EXPECT_TRUE(master_->FetchDrainWork("owner1", 64)->empty());  // all slots taken
  EXPECT_EQ(ToErrorCode(master_->CancelDrainJob(id)), ErrorCode::kUnavailableInCurrentStatus);
  for (const DrainUnit& unit : *units) {
    EXPECT_EQ(unit.source, "seg1");
    EXPECT_EQ(unit.target, "seg2");
    EXPECT_EQ(unit.size, kBlock);
    ASSERT_TRUE(master_->ReplicaCopyStart("owner1", unit.key, "seg1", {"seg2"}, true).ok());
    ASSERT_TRUE(master_->ReplicaCopyEnd("owner1", unit.key, false).ok());
    master_->ReportDrainWork("owner1", unit.job_id, unit.key, absl::OkStatus());
  }
  while (Work("owner1") > 0) {
  }
  info = Query(id);
  EXPECT_EQ(info.status, DrainJobStatus::kSucceeded) << info.message;
  EXPECT_EQ(info.succeeded_units, 10u);
  EXPECT_EQ(info.failed_units, 0u);
  EXPECT_EQ(info.active_units, 0u);
  EXPECT_EQ(info.migrated_bytes, 10 * kBlock);
  EXPECT_EQ(Status("seg1"), SegmentStatus::kDrained);
  for (int i = 0; i < 10; ++i) {
    EXPECT_EQ(SegmentsOf(absl::StrCat("k", i)), std::vector<std::string>{"seg2"}) << i;
  }
  EXPECT_EQ(SegmentsOf("elsewhere"), std::vector<std::string>{"seg3"});
  // Drained stays closed; a new job on it is refused; unmounting it loses nothing.
  Put("after", "seg1");
  EXPECT_NE(SegmentsOf("after"), std::vector<std::string>{"seg1"});
  EXPECT_EQ(CreateCode({"seg1"}), ErrorCode::kUnavailableInCurrentStatus);
  ASSERT_TRUE(master_->UnmountSegment("owner1", "seg1").ok());
  for (int i = 0; i < 10; ++i) EXPECT_TRUE(master_->QueryReplicas(absl::StrCat("k", i)).ok());
}

TEST_F(DrainJobsTest, AnObjectAlsoElsewhereIsDroppedFromTheSourceWithNoCopy) {
  ReplicateConfig config;
  config.replica_num = 2;
  config.preferred_segments = {"seg1", "seg3"};
  ASSERT_TRUE(master_->PutStart("writer", "two", kBlock, config).ok());
  ASSERT_TRUE(master_->PutEnd("writer", "two", 7).ok());
  const std::string id = Create({"seg1"});
  absl::StatusOr<std::vector<DrainUnit>> units = master_->FetchDrainWork("owner1", 64);
  ASSERT_TRUE(units.ok());
  ASSERT_EQ(units->size(), 1u);
  EXPECT_EQ(units->front().target, "seg3");  // where a replica already is
  absl::StatusOr<CopyPlan> plan =
      master_->ReplicaCopyStart("owner1", "two", "seg1", {"seg3"}, true);
  ASSERT_TRUE(plan.ok());
  EXPECT_TRUE(plan->targets.empty());  // nothing to write
  master_->ReportDrainWork("owner1", id, "two", absl::OkStatus());
  EXPECT_EQ(Query(id).status, DrainJobStatus::kSucceeded);
  EXPECT_EQ(SegmentsOf("two"), std::vector<std::string>{"seg3"});
}

TEST_F(DrainJobsTest, UnreportedMovesAreOfferedAgainAndRepeatedFailuresFailTheJob) {
  Put("k", "seg1");
  const std::string id = Create({"seg1"});
  ASSERT_EQ(master_->FetchDrainWork("owner1", 64)->size(), 1u);
  EXPECT_TRUE(master_->FetchDrainWork("owner1", 64)->empty());   // handed out already
  clock_.Advance(kDrainUnitTimeout + 1s);                        // its owner went quiet
  EXPECT_EQ(master_->FetchDrainWork("owner1", 64)->size(), 1u);  // offered again
  DrainJobInfo info = Query(id);
  EXPECT_EQ(info.failed_units, 1u);
  EXPECT_EQ(info.status, DrainJobStatus::kRunning);
  master_->ReportDrainWork("owner1", id, "k", MakeError(ErrorCode::kTransferFail, "x"));
  EXPECT_EQ(Work("owner1", /*succeed=*/false), 1u);  // the third attempt, the last
  info = Query(id);
  EXPECT_EQ(info.status, DrainJobStatus::kFailed);
  EXPECT_NE(info.message.find("'k'"), std::string::npos) << info.message;
  EXPECT_EQ(Status("seg1"), SegmentStatus::kOk);                 // open again
  EXPECT_EQ(SegmentsOf("k"), std::vector<std::string>{"seg1"});  // nothing lost
}

TEST_F(DrainJobsTest, NoRoomBlocksUntilCanceled) {
  Put("k", "seg1");
  const std::string id = Create({"seg1"}, {"seg2"});
  ASSERT_TRUE(master_->CreateDrainJob(DrainJobRequest{{"seg2"}, {"seg3"}, 1}).ok());
  // seg2, the only target, is draining itself: nowhere to go.
  EXPECT_EQ(Work("owner1"), 0u);
  DrainJobInfo info = Query(id);
  EXPECT_EQ(info.status, DrainJobStatus::kRunning);
  EXPECT_EQ(info.blocked_units, 1u);
  ASSERT_TRUE(master_->CancelDrainJob(id).ok());
  EXPECT_EQ(Query(id).status, DrainJobStatus::kCanceled);
  EXPECT_EQ(Status("seg1"), SegmentStatus::kOk);
  EXPECT_EQ(ToErrorCode(master_->CancelDrainJob(id)), ErrorCode::kUnavailableInCurrentStatus);
  Put("after", "seg1");
  EXPECT_EQ(SegmentsOf("after"), std::vector<std::string>{"seg1"});
}

TEST_F(DrainJobsTest, ASourceUnmountedMidJobFailsIt) {
  Put("k", "seg1");
  const std::string id = Create({"seg1"});
  ASSERT_TRUE(master_->UnmountSegment("owner1", "seg1").ok());
  master_->Tick();
  DrainJobInfo info = Query(id);
  EXPECT_EQ(info.status, DrainJobStatus::kFailed);
  EXPECT_NE(info.message.find("seg1"), std::string::npos) << info.message;
  // A new segment under the same name is not drained by the old job.
  ASSERT_TRUE(master_->MountSegment("owner1", Segment{"seg1", 0x900000, 64 * kBlock}).ok());
  EXPECT_EQ(Status("seg1"), SegmentStatus::kOk);
}

TEST_F(DrainJobsTest, TickEndsAJobWhoseSegmentEmptiedByItself) {
  Put("k", "seg1");
  const std::string id = Create({"seg1"});
  ASSERT_TRUE(master_->Remove("k", true).ok());
  master_->Tick();
  EXPECT_EQ(Query(id).status, DrainJobStatus::kSucceeded);
  EXPECT_EQ(Status("seg1"), SegmentStatus::kDrained);
}

}  // namespace
}  // namespace yuebing::master
