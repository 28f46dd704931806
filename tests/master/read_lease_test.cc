// Read leases that end with the read: MasterService::ReleaseLeases against the lease rules
// (removal, eviction, replaced and dropped versions, dead readers, stale ids), driven
// deterministically with a FakeClock.
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

class ReadLeaseTest : public ::testing::Test {
 protected:
  ReadLeaseTest() {
    options_.num_shards = 4;
    options_.default_kv_lease_ttl = 2s;
    options_.client_ttl = 3600s;
    master_ = std::make_unique<MasterService>(options_, clock_);
    epoch_ = master_->MountSegment("c1", Segment{"seg1", 0x100000, 16 * kBlock}).value_or(0);
    EXPECT_NE(epoch_, 0u);
  }

  void Put(const std::string& key, bool upsert = false) {
    auto started = upsert ? master_->UpsertStart("c1", key, kBlock, {})
                          : master_->PutStart("c1", key, kBlock, {});
    ASSERT_TRUE(started.ok()) << key << ": " << started.status();
    ASSERT_TRUE(master_->PutEnd("c1", key, 1).ok());
  }
  // Reads `key` (grants a lease) and returns the lease id.
  uint64_t Read(const std::string& key) {
    absl::StatusOr<ObjectLocation> location = master_->GetReplicaList(key);
    EXPECT_TRUE(location.ok()) << key << ": " << location.status();
    if (!location.ok()) return 0;
    EXPECT_NE(location->lease_id, 0u);
    return location->lease_id;
  }
  uint64_t Release(std::vector<uint64_t> ids) {
    absl::StatusOr<uint64_t> released = master_->ReleaseLeases(ids);
    EXPECT_TRUE(released.ok()) << released.status();
    return released.value_or(0);
  }
  ErrorCode RemoveCode(const std::string& key, bool force = false) {
    return ToErrorCode(master_->Remove(key, force));
  }
  uint64_t Used() { return master_->Stats().used_bytes; }

  FakeClock clock_;
  MasterOptions options_;
  std::unique_ptr<MasterService> master_;
  uint64_t epoch_ = 0;
};

TEST_F(ReadLeaseTest, ReleaseEndsTheLeaseAtOnce) {
  Put("k");
  const uint64_t id = Read("k");
  EXPECT_EQ(RemoveCode("k"), ErrorCode::kObjectHasLease);
  EXPECT_EQ(Release({id}), 1u);
  EXPECT_EQ(RemoveCode("k"), ErrorCode::kOk);
  EXPECT_EQ(Used(), 0u);
}

TEST_F(ReadLeaseTest, TheLastOfSeveralReadersEndsIt) {
  Put("k");
  const uint64_t first = Read("k");
  const uint64_t second = Read("k");
  EXPECT_EQ(Release({first}), 1u);
  EXPECT_EQ(RemoveCode("k"), ErrorCode::kObjectHasLease);
  EXPECT_EQ(Release({second}), 1u);
  EXPECT_EQ(RemoveCode("k"), ErrorCode::kOk);
}

TEST_F(ReadLeaseTest, AForcedRemoveKeepsTheBytesUntilTheLastReaderReleases) {
  Put("k");
  const uint64_t first = Read("k");
  const uint64_t second = Read("k");
  EXPECT_EQ(RemoveCode("k", /*force=*/true), ErrorCode::kOk);
  EXPECT_FALSE(master_->Exist("k"));
  EXPECT_EQ(Used(), kBlock);
  EXPECT_EQ(Release({first}), 1u);
  EXPECT_EQ(Used(), kBlock);
  EXPECT_EQ(Release({second}), 1u);
  EXPECT_EQ(Used(), 0u);
  EXPECT_EQ(Release({second}), 0u);  // its hold is gone: nothing left to end
}

TEST_F(ReadLeaseTest, AReplacedVersionIsFreedByItsReadersOnlyAndTheirIdsMissTheNewOne) {
  Put("k");
  const uint64_t old_reader = Read("k");
  Put("k", /*upsert=*/true);
  EXPECT_EQ(Used(), 2 * kBlock);  // the old version stays for its reader
  const uint64_t new_reader = Read("k");
  EXPECT_NE(new_reader, old_reader);
  EXPECT_EQ(Release({old_reader}), 1u);
  EXPECT_EQ(Used(), kBlock);
  EXPECT_EQ(Release({old_reader}), 0u);  // stale: does not end the new version's reader
  EXPECT_EQ(RemoveCode("k"), ErrorCode::kObjectHasLease);
  EXPECT_EQ(Release({new_reader}), 1u);
  EXPECT_EQ(RemoveCode("k"), ErrorCode::kOk);
  EXPECT_EQ(Used(), 0u);
}

TEST_F(ReadLeaseTest, AReaderThatNeverReleasesIsBoundedByTheLease) {
  Put("k");
  const uint64_t id = Read("k");
  EXPECT_EQ(RemoveCode("k", /*force=*/true), ErrorCode::kOk);
  EXPECT_EQ(Used(), kBlock);
  clock_.Advance(options_.default_kv_lease_ttl - 1ms);
  master_->Tick();
  EXPECT_EQ(Used(), kBlock);
  clock_.Advance(1ms);
  master_->Tick();
  EXPECT_EQ(Used(), 0u);
  EXPECT_EQ(Release({id}), 0u);  // too late: ignored
}

TEST_F(ReadLeaseTest, ReleasesFromAnExpiredRoundMissTheNextReaders) {
  Put("k");
  const uint64_t expired = Read("k");
  clock_.Advance(options_.default_kv_lease_ttl);
  const uint64_t current = Read("k");
  EXPECT_NE(current, expired);
  EXPECT_EQ(Release({expired}), 0u);
  EXPECT_EQ(RemoveCode("k"), ErrorCode::kObjectHasLease);
  EXPECT_EQ(Release({current}), 1u);
  EXPECT_EQ(RemoveCode("k"), ErrorCode::kOk);
}

TEST_F(ReadLeaseTest, ReleasedObjectsAreEvictableAndLeasedOnesAreNot) {
  // Fill the 16-block segment, read everything, then ask for more room.
  std::vector<uint64_t> ids;
  for (int i = 0; i < 16; ++i) {
    Put(absl::StrCat("k", i));
    ids.push_back(Read(absl::StrCat("k", i)));
  }
  EXPECT_EQ(ToErrorCode(master_->PutStart("c1", "more", kBlock, {}).status()),
            ErrorCode::kNoAvailableHandle);
  EXPECT_EQ(Release(ids), 16u);
  clock_.Advance(200ms);  // past the back-off after an eviction pass that found nothing
  EXPECT_TRUE(master_->PutStart("c1", "more", kBlock, {}).ok());
}

TEST_F(ReadLeaseTest, ChurnOfTwiceTheCapacityWithinOneLeaseNeverRunsOutOfSpace) {
  // put, read, release, remove: 40 x the 16-block segment without time passing.
  for (int i = 0; i < 40 * 16; ++i) {
    const std::string key = absl::StrCat("churn", i);
    Put(key);
    EXPECT_EQ(Release({Read(key)}), 1u);
    ASSERT_EQ(RemoveCode(key), ErrorCode::kOk) << key;
  }
  EXPECT_EQ(Used(), 0u);
}

TEST_F(ReadLeaseTest, BytesHeldOnAnUnmountedSegmentAreNeverFreedIntoItsSuccessor) {
  Put("k");
  const uint64_t id = Read("k");
  EXPECT_EQ(RemoveCode("k", /*force=*/true), ErrorCode::kOk);
  ASSERT_TRUE(master_->UnmountSegment("c1", "seg1").ok());
  ASSERT_TRUE(master_->MountSegment("c1", Segment{"seg1", 0x100000, 16 * kBlock}).ok());
  Put("fresh");
  EXPECT_EQ(Used(), kBlock);
  EXPECT_EQ(Release({id}), 1u);  // its hold ends; the range belonged to the old mount
  EXPECT_EQ(Used(), kBlock);
  EXPECT_TRUE(master_->Exist("fresh"));
}

TEST_F(ReadLeaseTest, BadIdsAreIgnoredAndTooManyAreRefused) {
  Put("k");
  const uint64_t id = Read("k");
  EXPECT_EQ(Release({0, 1, ~uint64_t{0}, id ^ 1, id + (uint64_t{1} << 28)}), 0u);
  EXPECT_EQ(RemoveCode("k"), ErrorCode::kObjectHasLease);
  std::vector<uint64_t> too_many(limits::kMaxBatchKeys + 1, id);
  EXPECT_EQ(ToErrorCode(master_->ReleaseLeases(too_many).status()), ErrorCode::kInvalidParams);
  EXPECT_EQ(RemoveCode("k"), ErrorCode::kObjectHasLease);  // nothing of it was applied
}

TEST_F(ReadLeaseTest, DiskOnlyAndMissingObjectsHaveNoLeaseId) {
  EXPECT_FALSE(master_->GetReplicaList("missing").ok());
  Put("k");
  EXPECT_NE(Read("k"), 0u);
}

}  // namespace
}  // namespace yuebing::master
