// MasterService::BatchReplicaClear: whole objects or the replicas on one segment, never under a
// reader, a replacing put or an unfinished put; the space comes back at once and the segment
// lists stay right (a later unmount drops exactly what is left). FakeClock, no threads.
#include <gtest/gtest.h>

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "yuebing/common/clock.h"
#include "yuebing/common/error_code.h"
#include "yuebing/common/limits.h"
#include "yuebing/master/master_service.h"

namespace yuebing::master {
namespace {

using namespace std::chrono_literals;

constexpr uint64_t kBlock = 1024;

class ReplicaClearTest : public ::testing::Test {
 protected:
  ReplicaClearTest() {
    options_.num_shards = 4;
    options_.default_kv_lease_ttl = 2s;
    options_.client_ttl = 3600s;
    master_ = std::make_unique<MasterService>(options_, clock_);
    for (const char* name : {"seg1", "seg2"}) {
      EXPECT_TRUE(master_->MountSegment("c1", Segment{name, 0x100000, 16 * kBlock}).ok());
    }
  }

  void Put(const std::string& key, uint32_t replicas = 1) {
    ReplicateConfig config;
    config.replica_num = replicas;
    config.preferred_segment = "seg1";
    ASSERT_TRUE(master_->PutStart("c1", key, kBlock, config).ok()) << key;
    ASSERT_TRUE(master_->PutEnd("c1", key, 1).ok()) << key;
  }
  std::vector<std::string> SegmentsOf(const std::string& key) {
    std::vector<std::string> names;
    absl::StatusOr<ObjectLocation> location = master_->QueryReplicas(key);
    if (location.ok()) {
      for (const Replica& r : location->replicas) names.push_back(r.segment_name);
    }
    return names;
  }
  std::vector<ErrorCode> Clear(const std::vector<std::string>& keys,
                               const std::string& segment = "") {
    std::vector<ErrorCode> codes;
    for (const absl::Status& s : master_->BatchReplicaClear(keys, segment)) {
      codes.push_back(ToErrorCode(s));
    }
    return codes;
  }
  uint64_t Used() { return master_->Stats().used_bytes; }

  FakeClock clock_;
  MasterOptions options_;
  std::unique_ptr<MasterService> master_;
};

TEST_F(ReplicaClearTest, ClearsWholeObjectsAndFreesTheirSpaceAtOnce) {
  Put("a", 2);
  Put("b");
  EXPECT_EQ(Used(), 3 * kBlock);
  EXPECT_EQ(Clear({"a", "missing", "", "b"}),
            (std::vector<ErrorCode>{ErrorCode::kOk, ErrorCode::kObjectNotFound,
                                    ErrorCode::kInvalidParams, ErrorCode::kOk}));
  EXPECT_EQ(Used(), 0u);
  EXPECT_FALSE(master_->Exist("a"));
  EXPECT_FALSE(master_->Exist("b"));
}

TEST_F(ReplicaClearTest, OneSegmentKeepsTheOtherReplicaAndItsListEntry) {
  Put("a", 2);
  ASSERT_EQ(SegmentsOf("a"), (std::vector<std::string>{"seg1", "seg2"}));
  EXPECT_EQ(Clear({"a"}, "seg3"), std::vector<ErrorCode>{ErrorCode::kObjectNotFound});
  EXPECT_EQ(Clear({"a"}, "seg1"), std::vector<ErrorCode>{ErrorCode::kOk});
  EXPECT_EQ(SegmentsOf("a"), std::vector<std::string>{"seg2"});
  EXPECT_EQ(Used(), kBlock);
  EXPECT_EQ(Clear({"a"}, "seg1"), std::vector<ErrorCode>{ErrorCode::kObjectNotFound});
  // The object is listed on seg2 only: unmounting seg1 keeps it, unmounting seg2 drops it.
  ASSERT_TRUE(master_->UnmountSegment("c1", "seg1").ok());
  EXPECT_TRUE(master_->Exist("a"));
  ASSERT_TRUE(master_->UnmountSegment("c1", "seg2").ok());
  EXPECT_FALSE(master_->Exist("a"));
}

TEST_F(ReplicaClearTest, TheLastReplicaTakesTheObject) {
  Put("a");
  EXPECT_EQ(Clear({"a"}, "seg1"), std::vector<ErrorCode>{ErrorCode::kOk});
  EXPECT_FALSE(master_->Exist("a"));
  EXPECT_EQ(Used(), 0u);
}

TEST_F(ReplicaClearTest, NothingIsClearedUnderAReader) {
  Put("read");
  absl::StatusOr<ObjectLocation> reading = master_->GetReplicaList("read");
  ASSERT_TRUE(reading.ok());
  EXPECT_EQ(Clear({"read"}), std::vector<ErrorCode>{ErrorCode::kObjectHasLease});
  EXPECT_EQ(Clear({"read"}, "seg1"), std::vector<ErrorCode>{ErrorCode::kObjectHasLease});
  EXPECT_TRUE(master_->Exist("read"));
  ASSERT_EQ(master_->ReleaseLeases({reading->lease_id}).value_or(0), 1u);
  EXPECT_EQ(Clear({"read"}), std::vector<ErrorCode>{ErrorCode::kOk});
}

TEST_F(ReplicaClearTest, NothingIsClearedUnderAReplacingOrUnfinishedPut) {
  Put("up");
  ASSERT_TRUE(master_->UpsertStart("c1", "up", kBlock, {}).ok());
  ASSERT_TRUE(master_->PutStart("c1", "new", kBlock, {}).ok());
  EXPECT_EQ(Clear({"up", "new"}),
            (std::vector<ErrorCode>{ErrorCode::kObjectHasLease, ErrorCode::kObjectNotFound}));
  // Both puts finish as if nothing happened, and then clear.
  ASSERT_TRUE(master_->PutEnd("c1", "up", 2).ok());
  ASSERT_TRUE(master_->PutEnd("c1", "new", 3).ok());
  EXPECT_EQ(Clear({"up", "new"}), (std::vector<ErrorCode>{ErrorCode::kOk, ErrorCode::kOk}));
  EXPECT_EQ(Used(), 0u);
}

TEST_F(ReplicaClearTest, ABatchTooLargeIsRefusedWhole) {
  std::vector<std::string> keys(limits::kMaxBatchKeys + 1, "k");
  for (const absl::Status& s : master_->BatchReplicaClear(keys, "")) {
    EXPECT_EQ(ToErrorCode(s), ErrorCode::kInvalidParams);
  }
}

}  // namespace
}  // namespace yuebing::master
