// The master's disk-tier contract (spill tasks, disk-only objects, reports), driven with a
// FakeClock and the MasterService API directly.
#include <gtest/gtest.h>

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
constexpr uint64_t kBase = 0x100000;

class DiskTierTest : public ::testing::Test {
 protected:
  DiskTierTest() {
    MasterOptions options;
    options.num_shards = 4;
    options.default_kv_lease_ttl = 2s;
    options.client_ttl = 10s;
    options.spill_timeout = 3s;
    options.eviction_high_watermark_ratio = 0.5;
    options.eviction_ratio = 0.25;
    master_ = std::make_unique<MasterService>(options, clock_);
    EXPECT_TRUE(master_->MountSegment("store", Segment{"seg", kBase, 8 * kBlock}).ok());
  }

  void PutObject(const std::string& key, uint64_t checksum) {
    ASSERT_TRUE(master_->PutStart("writer", key, kBlock, {}).ok()) << key;
    ASSERT_TRUE(master_->PutEnd("writer", key, checksum).ok());
  }

  DiskSyncReply Sync(DiskSyncRequest request, const std::string& client = "store") {
    if (request.endpoint.empty()) request.endpoint = "127.0.0.1:9000";
    if (request.tier_id.empty()) request.tier_id = "tier-a";
    auto reply = master_->SyncDiskTier(client, request);
    EXPECT_TRUE(reply.ok()) << reply.status();
    return reply.value_or(DiskSyncReply{});
  }

  FakeClock clock_;
  std::unique_ptr<MasterService> master_;
};

TEST_F(DiskTierTest, SpillMakesObjectsDiskOnlyAndFreesMemory) {
  DiskSyncRequest hello;
  hello.full = true;
  EXPECT_FALSE(Sync(hello).need_full_sync);
  for (int i = 0; i < 6; ++i) PutObject(absl::StrCat("k", i), 100 + i);
  master_->Tick();  // above the 50% watermark: eviction queues spills instead of dropping
  DiskSyncReply reply = Sync({});
  ASSERT_FALSE(reply.spill.empty());
  const uint64_t used_before = master_->Stats().used_bytes;
  // Objects being spilled stay readable from memory.
  for (const SpillTask& task : reply.spill) {
    auto location = master_->GetReplicaList(task.key);
    ASSERT_TRUE(location.ok());
    EXPECT_TRUE(location->replicas[0].disk_endpoint.empty());
    EXPECT_EQ(task.address, location->replicas[0].address);
    EXPECT_EQ(task.size, kBlock);
  }
  clock_.Advance(3s);  // past the read leases just taken (but spills were handed out before)
  DiskSyncRequest done;
  for (const SpillTask& task : reply.spill) {
    done.spilled.push_back(DiskObject{task.key, task.size, task.checksum});
  }
  // The spill_timeout counts from hand-out: 3 s passed, so these are too late...
  master_->Tick();
  DiskSyncReply late = Sync(done);
  EXPECT_EQ(late.drop.size(), reply.spill.size());  // ...and come back as drops
  EXPECT_EQ(master_->Stats().disk_objects, 0u);

  // A second round reported in time.
  for (int i = 6; i < 10; ++i) PutObject(absl::StrCat("k", i), 100 + i);
  master_->Tick();
  reply = Sync({});
  ASSERT_FALSE(reply.spill.empty());
  done.spilled.clear();
  for (const SpillTask& task : reply.spill) {
    done.spilled.push_back(DiskObject{task.key, task.size, task.checksum});
  }
  const uint64_t used_mid = master_->Stats().used_bytes;
  EXPECT_TRUE(Sync(done).drop.empty());
  EXPECT_EQ(master_->Stats().disk_objects, reply.spill.size());
  EXPECT_LT(master_->Stats().used_bytes, used_mid);
  (void)used_before;
  for (const SpillTask& task : reply.spill) {
    auto location = master_->GetReplicaList(task.key);
    ASSERT_TRUE(location.ok());
    ASSERT_EQ(location->replicas.size(), 1u);
    EXPECT_EQ(location->replicas[0].disk_endpoint, "127.0.0.1:9000");
    EXPECT_EQ(location->checksum, task.checksum);
    EXPECT_TRUE(master_->Exist(task.key));
    EXPECT_EQ(master_->GetSize(task.key).value_or(0), kBlock);
    // Put keeps the disk copy; Upsert replaces it (and the store is told to drop the file).
    EXPECT_EQ(ToErrorCode(master_->PutStart("writer", task.key, kBlock, {}).status()),
              ErrorCode::kObjectAlreadyExists);
  }
  const std::string removed = reply.spill[0].key;
  EXPECT_TRUE(master_->Remove(removed).ok());
  EXPECT_FALSE(master_->Exist(removed));
  DiskSyncReply after = Sync({});
  EXPECT_EQ(after.drop, std::vector<std::string>{removed});
}

TEST_F(DiskTierTest, ReportsThatDoNotMatchAreDropped) {
  DiskSyncRequest hello;
  hello.full = true;
  Sync(hello);
  PutObject("mem", 7);
  DiskSyncRequest bogus;
  bogus.spilled.push_back(DiskObject{"mem", kBlock, 7});     // never asked for
  bogus.spilled.push_back(DiskObject{"absent", kBlock, 7});  // no such object
  bogus.announced.push_back(DiskObject{"mem", kBlock, 7});   // memory copy wins
  bogus.announced.push_back(DiskObject{"old", 5000, 9});     // accepted: unknown key
  DiskSyncReply reply = Sync(bogus);
  EXPECT_EQ(reply.drop.size(), 3u);
  EXPECT_TRUE(master_->Exist("old"));
  EXPECT_EQ(master_->GetReplicaList("mem")->replicas[0].disk_endpoint, "");
  // Another directory announcing the same key is redundant; the same directory after a
  // restart (new client id, new port) takes it back.
  DiskSyncRequest other;
  other.full = true;
  other.tier_id = "tier-b";
  other.endpoint = "127.0.0.1:9001";
  other.announced.push_back(DiskObject{"old", 5000, 9});
  EXPECT_EQ(Sync(other, "store-b").drop, std::vector<std::string>{"old"});
  DiskSyncRequest restarted;
  restarted.full = true;
  restarted.endpoint = "127.0.0.1:9002";
  restarted.announced.push_back(DiskObject{"old", 5000, 9});
  EXPECT_TRUE(Sync(restarted, "store-2").drop.empty());
  EXPECT_EQ(master_->GetReplicaList("old")->replicas[0].disk_endpoint, "127.0.0.1:9002");
  // The lost file is reported: the key is gone.
  DiskSyncRequest lost;
  lost.endpoint = "127.0.0.1:9002";
  lost.removed.push_back("old");
  Sync(lost, "store-2");
  EXPECT_FALSE(master_->Exist("old"));
}

TEST_F(DiskTierTest, AdminQueriesSeeDiskOnlyObjects) {
  PutObject("mem", 7);
  DiskSyncRequest hello;
  hello.full = true;
  hello.announced.push_back(DiskObject{"disk", 5000, 9});
  Sync(hello);
  auto location = master_->QueryReplicas("disk");
  ASSERT_TRUE(location.ok()) << location.status();
  EXPECT_EQ(location->size, 5000u);
  EXPECT_EQ(location->checksum, 9u);
  EXPECT_EQ(location->lease_id, 0u);
  EXPECT_EQ(location->lease_ttl.count(), 0);
  ASSERT_EQ(location->replicas.size(), 1u);
  EXPECT_EQ(location->replicas[0].disk_endpoint, "127.0.0.1:9000");
  location = master_->QueryReplicas("mem");
  ASSERT_TRUE(location.ok()) << location.status();
  EXPECT_EQ(location->lease_id, 0u);
  ASSERT_EQ(location->replicas.size(), 1u);
  EXPECT_EQ(location->replicas[0].segment_name, "seg");
  EXPECT_TRUE(master_->Remove("mem").ok());  // the query granted no lease
  std::vector<std::string> keys = master_->ListKeys(10);
  EXPECT_EQ(keys, std::vector<std::string>{"disk"});
}

TEST_F(DiskTierTest, UnknownStoreMustResyncAndExpiredStoresLoseTheirObjects) {
  DiskSyncRequest partial;
  partial.announced.push_back(DiskObject{"x", 10, 1});
  EXPECT_TRUE(Sync(partial).need_full_sync);
  EXPECT_FALSE(master_->Exist("x"));
  partial.full = true;
  EXPECT_FALSE(Sync(partial).need_full_sync);
  EXPECT_TRUE(master_->Exist("x"));
  EXPECT_EQ(master_->Stats().disk_objects, 1u);
  clock_.Advance(11s);  // "store" stops pinging
  master_->Tick();
  EXPECT_FALSE(master_->Exist("x"));
  EXPECT_EQ(master_->Stats().disk_objects, 0u);
}

TEST_F(DiskTierTest, BadRequestsAreRefused) {
  DiskSyncRequest request;
  EXPECT_EQ(ToErrorCode(master_->SyncDiskTier("store", request).status()),
            ErrorCode::kInvalidParams);  // no endpoint
  request.tier_id = "t";
  request.endpoint = "no-port";  // not a segment name (host:port)
  EXPECT_EQ(ToErrorCode(master_->SyncDiskTier("store", request).status()),
            ErrorCode::kInvalidParams);
  request.tier_id.clear();
  request.endpoint = "h:1";
  EXPECT_EQ(ToErrorCode(master_->SyncDiskTier("store", request).status()),
            ErrorCode::kInvalidParams);  // no tier id
  request.tier_id = "t";
  EXPECT_EQ(ToErrorCode(master_->SyncDiskTier("", request).status()), ErrorCode::kInvalidParams);
  request.full = true;
  request.announced.push_back(DiskObject{"", 10, 1});  // bad keys are skipped
  request.announced.push_back(DiskObject{"zero", 0, 1});
  EXPECT_TRUE(master_->SyncDiskTier("store", request).ok());
  EXPECT_EQ(master_->Stats().disk_objects, 0u);
}

}  // namespace
}  // namespace yuebing::master
