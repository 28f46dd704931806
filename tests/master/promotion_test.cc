// Promotion on hit (MasterOptions::promotion_on_hit): counting reads of disk-only objects,
// handing promotions to their stores, and the promotion put against removes and new puts of the
// same key. Driven with a FakeClock and the MasterService API directly.
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "yuebing/common/clock.h"
#include "yuebing/common/error_code.h"
#include "yuebing/master/master_service.h"

namespace yuebing::master {
namespace {

using namespace std::chrono_literals;

constexpr uint64_t kBlock = 1024;
constexpr uint64_t kBase = 0x100000;
constexpr uint64_t kChecksum = 0x5eed;

class PromotionTest : public ::testing::Test {
 protected:
  void Start(bool promotion_on_hit, uint32_t threshold = 2, uint32_t queue_limit = 100) {
    MasterOptions options;
    options.num_shards = 4;
    options.client_ttl = 10s;
    options.promotion_on_hit = promotion_on_hit;
    options.promotion_admission_threshold = threshold;
    options.promotion_queue_limit = queue_limit;
    options.promotion_max_per_sync = 8;
    master_ = std::make_unique<MasterService>(options, clock_);
    ASSERT_TRUE(master_->MountSegment("store", Segment{"seg", kBase, 8 * kBlock}).ok());
  }

  DiskSyncReply Sync(DiskSyncRequest request, const std::string& client = "store") {
    request.endpoint = "127.0.0.1:9000";
    request.tier_id = "tier-a";
    auto reply = master_->SyncDiskTier(client, request);
    EXPECT_TRUE(reply.ok()) << reply.status();
    return reply.value_or(DiskSyncReply{});
  }

  // The store announces disk-only objects `keys` (as after a restart).
  void Announce(const std::vector<std::string>& keys) {
    DiskSyncRequest hello;
    hello.full = true;
    for (const std::string& key : keys) hello.announced.push_back({key, kBlock, kChecksum});
    EXPECT_TRUE(Sync(hello).drop.empty());
  }

  std::vector<std::string> PromotedKeys(const DiskSyncReply& reply) {
    std::vector<std::string> keys;
    for (const DiskObject& object : reply.promote) {
      EXPECT_EQ(object.size, kBlock);
      EXPECT_EQ(object.checksum, kChecksum);
      keys.push_back(object.key);
    }
    return keys;
  }

  static ReplicateConfig Promotion() {
    ReplicateConfig config;
    config.promotion = true;
    return config;
  }

  bool OnDisk(const std::string& key) {
    auto location = master_->GetReplicaList(key);
    return location.ok() && !location->replicas.empty() &&
           !location->replicas[0].disk_endpoint.empty();
  }

  FakeClock clock_;
  std::unique_ptr<MasterService> master_;
};

TEST_F(PromotionTest, OffByDefaultNothingIsHandedOut) {
  Start(/*promotion_on_hit=*/false);
  Announce({"cold"});
  for (int i = 0; i < 5; ++i) ASSERT_TRUE(OnDisk("cold"));
  EXPECT_TRUE(Sync({}).promote.empty());
}

TEST_F(PromotionTest, SecondReadQueuesAndThePutBringsTheObjectBack) {
  Start(/*promotion_on_hit=*/true);
  Announce({"hot", "other"});
  ASSERT_TRUE(OnDisk("hot"));
  EXPECT_TRUE(Sync({}).promote.empty());  // one read: under the threshold
  ASSERT_TRUE(OnDisk("hot"));
  ASSERT_TRUE(OnDisk("hot"));  // queued once, not twice
  EXPECT_EQ(PromotedKeys(Sync({})), std::vector<std::string>{"hot"});
  EXPECT_TRUE(Sync({}).promote.empty());

  // Only the store holding the file promotes it, with the object's size.
  EXPECT_EQ(ToErrorCode(master_->PutStart("writer", "hot", kBlock, Promotion()).status()),
            ErrorCode::kObjectNotFound);
  EXPECT_EQ(ToErrorCode(master_->PutStart("store", "hot", kBlock + 1, Promotion()).status()),
            ErrorCode::kObjectNotFound);
  EXPECT_EQ(ToErrorCode(master_->PutStart("store", "absent", kBlock, Promotion()).status()),
            ErrorCode::kObjectNotFound);
  auto replicas = master_->PutStart("store", "hot", kBlock, Promotion(), kChecksum);
  ASSERT_TRUE(replicas.ok()) << replicas.status();
  EXPECT_EQ(ToErrorCode(master_->PutStart("store", "hot", kBlock, Promotion()).status()),
            ErrorCode::kObjectAlreadyExists);
  // While its bytes are written, readers still go to the disk copy; a plain put still finds
  // the key taken.
  EXPECT_TRUE(OnDisk("hot"));
  EXPECT_TRUE(master_->Exist("hot"));
  EXPECT_EQ(master_->GetSize("hot").value_or(0), kBlock);
  EXPECT_EQ(ToErrorCode(master_->PutStart("writer", "hot", kBlock, {}).status()),
            ErrorCode::kObjectAlreadyExists);

  ASSERT_TRUE(master_->PutEnd("store", "hot", kChecksum).ok());
  auto location = master_->GetReplicaList("hot");
  ASSERT_TRUE(location.ok());
  ASSERT_EQ(location->replicas.size(), 1u);
  EXPECT_TRUE(location->replicas[0].disk_endpoint.empty());
  EXPECT_EQ(location->replicas[0].address, replicas->front().address);
  EXPECT_EQ(location->checksum, kChecksum);
  const MasterStats stats = master_->Stats();
  EXPECT_EQ(stats.promoted_objects, 1u);
  EXPECT_EQ(stats.disk_objects, 1u);  // "other"
  EXPECT_EQ(stats.objects, 1u);
  // The store deletes its own file; it is not told to drop it (nor anything else).
  EXPECT_TRUE(Sync({}).drop.empty());
  EXPECT_TRUE(OnDisk("other"));
}

TEST_F(PromotionTest, ThresholdOnePromotesOnTheFirstRead) {
  Start(/*promotion_on_hit=*/true, /*threshold=*/1);
  Announce({"a"});
  ASSERT_TRUE(OnDisk("a"));
  EXPECT_EQ(PromotedKeys(Sync({})), std::vector<std::string>{"a"});
}

TEST_F(PromotionTest, MetadataQueriesAreNotReads) {
  Start(/*promotion_on_hit=*/true, /*threshold=*/1);
  Announce({"k"});
  for (int i = 0; i < 3; ++i) {
    auto location = master_->QueryReplicas("k");
    ASSERT_TRUE(location.ok());
    EXPECT_FALSE(location->replicas[0].disk_endpoint.empty());
    ASSERT_TRUE(master_->BatchQueryReplicas({"k"})[0].ok());
  }
  EXPECT_TRUE(Sync({}).promote.empty());
  ASSERT_TRUE(OnDisk("k"));  // a read
  EXPECT_EQ(PromotedKeys(Sync({})), std::vector<std::string>{"k"});
  // While it is promoted, queries see the disk copy too.
  ASSERT_TRUE(master_->PutStart("store", "k", kBlock, Promotion(), kChecksum).ok());
  auto location = master_->QueryReplicas("k");
  ASSERT_TRUE(location.ok());
  EXPECT_FALSE(location->replicas[0].disk_endpoint.empty());
}

TEST_F(PromotionTest, RemoveDuringThePromotionWins) {
  Start(/*promotion_on_hit=*/true, /*threshold=*/1);
  Announce({"k"});
  ASSERT_TRUE(master_->PutStart("store", "k", kBlock, Promotion(), kChecksum).ok());
  const uint64_t used = master_->Stats().used_bytes;
  EXPECT_GT(used, 0u);
  ASSERT_TRUE(master_->Remove("k").ok());
  EXPECT_FALSE(master_->Exist("k"));
  EXPECT_EQ(Sync({}).drop, std::vector<std::string>{"k"});  // the store deletes the file
  // The promotion's end finds the disk copy gone: nothing comes back, its space is freed.
  EXPECT_EQ(ToErrorCode(master_->PutEnd("store", "k", kChecksum)), ErrorCode::kObjectNotFound);
  EXPECT_FALSE(master_->Exist("k"));
  EXPECT_EQ(master_->Stats().used_bytes, 0u);
  EXPECT_EQ(master_->Stats().promoted_objects, 0u);
  // And the key is free for a new put.
  ASSERT_TRUE(master_->PutStart("writer", "k", kBlock, {}).ok());
}

TEST_F(PromotionTest, RemoveAllDuringThePromotionWins) {
  Start(/*promotion_on_hit=*/true, /*threshold=*/1);
  Announce({"k"});
  ASSERT_TRUE(master_->PutStart("store", "k", kBlock, Promotion(), kChecksum).ok());
  EXPECT_EQ(master_->RemoveAll(/*force=*/false), 1u);
  EXPECT_EQ(ToErrorCode(master_->PutEnd("store", "k", kChecksum)), ErrorCode::kObjectNotFound);
  EXPECT_FALSE(master_->Exist("k"));
}

TEST_F(PromotionTest, UpsertDuringThePromotionWins) {
  Start(/*promotion_on_hit=*/true, /*threshold=*/1);
  Announce({"k"});
  ASSERT_TRUE(master_->PutStart("store", "k", kBlock, Promotion(), kChecksum).ok());
  ASSERT_TRUE(master_->UpsertStart("writer", "k", kBlock, {}).ok());
  ASSERT_TRUE(master_->PutEnd("writer", "k", 77).ok());
  EXPECT_NE(master_->PutEnd("store", "k", kChecksum).code(), absl::StatusCode::kOk);
  auto location = master_->GetReplicaList("k");
  ASSERT_TRUE(location.ok());
  EXPECT_EQ(location->checksum, 77u);
  EXPECT_TRUE(location->replicas[0].disk_endpoint.empty());
  EXPECT_EQ(master_->Stats().promoted_objects, 0u);
}

TEST_F(PromotionTest, APromotionWithOtherBytesIsRefused) {
  Start(/*promotion_on_hit=*/true, /*threshold=*/1);
  Announce({"k"});
  ASSERT_TRUE(master_->PutStart("store", "k", kBlock, Promotion(), kChecksum).ok());
  EXPECT_EQ(ToErrorCode(master_->PutEnd("store", "k", kChecksum + 1)), ErrorCode::kObjectNotFound);
  EXPECT_TRUE(OnDisk("k"));  // the disk copy stays the object
}

TEST_F(PromotionTest, ARevokedPromotionLeavesTheDiskCopyAndIsQueuedAgainAfterMoreReads) {
  Start(/*promotion_on_hit=*/true, /*threshold=*/2);
  Announce({"k"});
  ASSERT_TRUE(OnDisk("k"));
  ASSERT_TRUE(OnDisk("k"));
  EXPECT_EQ(PromotedKeys(Sync({})), std::vector<std::string>{"k"});
  ASSERT_TRUE(master_->PutStart("store", "k", kBlock, Promotion(), kChecksum).ok());
  ASSERT_TRUE(master_->PutRevoke("store", "k").ok());
  EXPECT_EQ(master_->Stats().used_bytes, 0u);
  ASSERT_TRUE(OnDisk("k"));
  EXPECT_TRUE(Sync({}).promote.empty());
  ASSERT_TRUE(OnDisk("k"));
  EXPECT_EQ(PromotedKeys(Sync({})), std::vector<std::string>{"k"});
}

TEST_F(PromotionTest, TheQueueLimitBoundsWaitingPromotions) {
  Start(/*promotion_on_hit=*/true, /*threshold=*/1, /*queue_limit=*/2);
  Announce({"a", "b", "c"});
  for (const char* key : {"a", "b", "c"}) ASSERT_TRUE(OnDisk(key));
  std::vector<std::string> first = PromotedKeys(Sync({}));
  EXPECT_EQ(first.size(), 2u);  // "c" found the queue full
  ASSERT_TRUE(OnDisk("c"));     // room again: queued now
  EXPECT_EQ(PromotedKeys(Sync({})), std::vector<std::string>{"c"});
}

TEST_F(PromotionTest, AnExpiredStoreTakesItsQueueWithIt) {
  Start(/*promotion_on_hit=*/true, /*threshold=*/1, /*queue_limit=*/1);
  Announce({"a"});
  ASSERT_TRUE(OnDisk("a"));
  // The store stops syncing and pinging: it expires with its disk objects and its queue, whose
  // promotion no longer counts against the limit.
  clock_.Advance(11s);
  master_->Tick();
  EXPECT_FALSE(master_->Exist("a"));
  ASSERT_TRUE(master_->MountSegment("store-2", Segment{"seg2", kBase, 8 * kBlock}).ok());
  DiskSyncRequest hello;
  hello.full = true;
  hello.announced.push_back({"b", kBlock, kChecksum});
  ASSERT_TRUE(Sync(hello, "store-2").drop.empty());
  ASSERT_TRUE(OnDisk("b"));
  EXPECT_EQ(PromotedKeys(Sync({}, "store-2")), std::vector<std::string>{"b"});
}

}  // namespace
}  // namespace yuebing::master
