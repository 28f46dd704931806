// The master service contract, driven deterministically with a FakeClock.
#include "yuebing/master/master_service.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <memory>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "yuebing/common/error_code.h"
#include "yuebing/common/limits.h"

namespace yuebing::master {
namespace {

using namespace std::chrono_literals;

constexpr uint64_t kBlock = 1024;  // object size used by most tests (aligned already)

ErrorCode Code(const absl::Status& status) { return ToErrorCode(status); }
template <typename T>
ErrorCode Code(const absl::StatusOr<T>& result) {
  return ToErrorCode(result.status());
}

class MasterServiceTest : public ::testing::Test {
 protected:
  MasterServiceTest() { Reset(DefaultOptions()); }

  static MasterOptions DefaultOptions() {
    MasterOptions options;
    options.num_shards = 8;
    options.default_kv_lease_ttl = 2s;
    options.default_kv_soft_pin_ttl = 60s;
    options.client_ttl = 10s;
    options.put_start_discard_timeout = 5s;
    options.put_start_release_timeout = 20s;
    return options;
  }

  void Reset(const MasterOptions& options) {
    options_ = options;
    master_ = std::make_unique<MasterService>(options_, clock_);
  }

  uint64_t Mount(const std::string& client, const std::string& name, uint64_t size,
                 uint64_t base = 0x100000) {
    absl::StatusOr<uint64_t> epoch = master_->MountSegment(client, Segment{name, base, size});
    EXPECT_TRUE(epoch.ok()) << epoch.status();
    alive_.insert(client);
    return epoch.value_or(0);
  }

  absl::Status Put(const std::string& client, const std::string& key, uint64_t size = kBlock,
                   ReplicateConfig config = {}, uint64_t checksum = 1) {
    absl::StatusOr<std::vector<Replica>> started = master_->PutStart(client, key, size, config);
    if (!started.ok()) return started.status();
    return master_->PutEnd(client, key, checksum);
  }

  static ReplicateConfig On(const std::string& segment, uint32_t replicas = 1) {
    ReplicateConfig config;
    config.replica_num = replicas;
    config.preferred_segment = segment;
    return config;
  }

  // Moves time forward in steps of at most 1 s, pinging the clients in alive_.
  void Advance(std::chrono::milliseconds delta) {
    while (delta > 0ms) {
      const std::chrono::milliseconds step = std::min<std::chrono::milliseconds>(delta, 1s);
      clock_.Advance(step);
      delta -= step;
      for (const std::string& client : alive_) master_->Ping(client);
    }
  }

  uint64_t Used() { return master_->Stats().used_bytes; }
  uint64_t Objects() { return master_->Stats().objects; }

  std::vector<Replica> ReplicasOf(const std::string& key) {
    absl::StatusOr<ObjectLocation> location = master_->GetReplicaList(key);
    EXPECT_TRUE(location.ok()) << key << ": " << location.status();
    return location.ok() ? location->replicas : std::vector<Replica>{};
  }

  FakeClock clock_;
  MasterOptions options_;
  std::unique_ptr<MasterService> master_;
  std::set<std::string> alive_;
};

// --- segments and clients ---

TEST_F(MasterServiceTest, EpochsIncreaseAndRemountIsIdempotent) {
  const uint64_t e1 = Mount("c1", "seg1", 1 << 20);
  const uint64_t e2 = Mount("c1", "seg2", 1 << 20);
  EXPECT_GT(e1, 0u);
  EXPECT_GT(e2, e1);
  EXPECT_EQ(Mount("c1", "seg1", 1 << 20), e1);
  ASSERT_TRUE(Put("c1", "k", kBlock, On("seg1")).ok());
  // Same client, new range: a new mount with a new epoch; objects on the old one are gone.
  const uint64_t e3 = Mount("c1", "seg1", 2 << 20);
  EXPECT_GT(e3, e2);
  EXPECT_FALSE(master_->Exist("k"));
  const MasterStats stats = master_->Stats();
  EXPECT_EQ(stats.segments.size(), 2u);
  EXPECT_EQ(stats.capacity_bytes, 3u << 20);
  EXPECT_EQ(stats.clients, 1u);
}

TEST_F(MasterServiceTest, EpochsOfANewMasterAreNewerThanItsPredecessors) {
  const uint64_t e1 = Mount("c1", "seg1", 1 << 20);
  clock_.Advance(1s);
  Reset(DefaultOptions());  // a restarted master
  EXPECT_GT(Mount("c1", "seg1", 1 << 20), e1);
}

TEST_F(MasterServiceTest, NameOfLiveClientIsRefusedAndOfExpiredClientTakenOver) {
  const uint64_t e1 = Mount("c1", "seg1", 1 << 20);
  ASSERT_TRUE(Put("c1", "k").ok());
  EXPECT_EQ(Code(master_->MountSegment("c2", Segment{"seg1", 0x100000, 1 << 20})),
            ErrorCode::kSegmentAlreadyExists);
  alive_.erase("c1");
  alive_.insert("c2");
  Advance(5s);
  EXPECT_EQ(Code(master_->MountSegment("c2", Segment{"seg1", 0x100000, 1 << 20})),
            ErrorCode::kSegmentAlreadyExists);
  Advance(6s);  // c1 silent for 11 s > client_ttl
  const uint64_t e2 = Mount("c2", "seg1", 1 << 20);
  EXPECT_GT(e2, e1);
  EXPECT_FALSE(master_->Exist("k"));
  const MasterStats stats = master_->Stats();
  ASSERT_EQ(stats.segments.size(), 1u);
  EXPECT_EQ(stats.segments[0].client_id, "c2");
  EXPECT_EQ(stats.segments[0].epoch, e2);
  EXPECT_EQ(stats.clients, 1u);
  // The dropped client learns that it must mount again.
  EXPECT_EQ(master_->Ping("c1"), ClientState::kNeedRemount);
}

TEST_F(MasterServiceTest, AnExpiredClientThatKeepsCallingIsStillAskedToRemount) {
  // A store's drain worker (or its puts, or its disk tier) may reach the master before its next
  // ping once a partition heals: that call registers it again, but without its segment. Its
  // ping must still say kNeedRemount, or the segment would never come back.
  Mount("c1", "seg1", 1 << 20);
  alive_.erase("c1");
  Advance(11s);  // c1 silent for longer than client_ttl
  master_->Tick();
  EXPECT_TRUE(master_->Stats().segments.empty());
  ASSERT_TRUE(master_->FetchDrainWork("c1", 4).ok());
  EXPECT_EQ(master_->Ping("c1"), ClientState::kNeedRemount);
  EXPECT_EQ(master_->Ping("c1"), ClientState::kOk);  // asked once
  // The same after a put registered it.
  Advance(11s);
  master_->Tick();
  ASSERT_TRUE(master_->MountSegment("c2", Segment{"seg2", 0x900000, 1 << 20}).ok());
  EXPECT_TRUE(Put("c1", "after-expiry").ok());
  EXPECT_EQ(master_->Ping("c1"), ClientState::kNeedRemount);
}

TEST_F(MasterServiceTest, MountRejectsBadArguments) {
  EXPECT_EQ(Code(master_->MountSegment("c1", Segment{"", 0, 4096})), ErrorCode::kInvalidParams);
  EXPECT_EQ(Code(master_->MountSegment("c1", Segment{"s", 0, 0})), ErrorCode::kInvalidParams);
  EXPECT_EQ(Code(master_->MountSegment("c1", Segment{"s", UINT64_MAX - 10, 4096})),
            ErrorCode::kInvalidParams);
  EXPECT_EQ(Code(master_->MountSegment("", Segment{"s", 0, 4096})), ErrorCode::kInvalidParams);
  EXPECT_EQ(Code(master_->MountSegment(std::string(300, 'c'), Segment{"s", 0, 4096})),
            ErrorCode::kInvalidParams);
  EXPECT_EQ(Code(master_->MountSegment("c1", Segment{std::string(2000, 's'), 0, 4096})),
            ErrorCode::kInvalidParams);
  // Too small to hold one aligned block.
  EXPECT_EQ(Code(master_->MountSegment("c1", Segment{"s", 1, 64})), ErrorCode::kInvalidParams);
  EXPECT_TRUE(master_->Stats().segments.empty());
}

TEST_F(MasterServiceTest, UnmountChecksOwnerAndDropsObjects) {
  Mount("c1", "seg1", 1 << 20);
  Mount("c2", "seg2", 1 << 20);
  EXPECT_EQ(Code(master_->UnmountSegment("c1", "nope")), ErrorCode::kSegmentNotFound);
  EXPECT_EQ(Code(master_->UnmountSegment("c2", "seg1")), ErrorCode::kIllegalClient);
  ASSERT_TRUE(Put("c1", "a", kBlock, On("seg1")).ok());
  ASSERT_TRUE(Put("c1", "b", kBlock, On("seg2")).ok());
  ASSERT_TRUE(master_->PutStart("c2", "c", kBlock, On("seg1")).ok());
  ASSERT_TRUE(master_->GetReplicaList("a").ok());  // a lease does not keep a dead segment
  ASSERT_TRUE(master_->UnmountSegment("c1", "seg1").ok());
  EXPECT_FALSE(master_->Exist("a"));
  EXPECT_TRUE(master_->Exist("b"));
  EXPECT_EQ(Code(master_->PutEnd("c2", "c", 1)), ErrorCode::kObjectNotFound);  // revoked
  const MasterStats stats = master_->Stats();
  EXPECT_EQ(stats.objects, 1u);
  EXPECT_EQ(stats.used_bytes, kBlock);
  EXPECT_EQ(stats.capacity_bytes, 1u << 20);
  EXPECT_EQ(Code(master_->UnmountSegment("c1", "seg1")), ErrorCode::kSegmentNotFound);
}

TEST_F(MasterServiceTest, UnmountDropsOnlyTheReplicasOnTheSegment) {
  Mount("c1", "seg1", 1 << 20, 0x100000);
  Mount("c2", "seg2", 1 << 20, 0x400000);
  Mount("c3", "seg3", 1 << 20, 0x700000);
  ASSERT_TRUE(Put("c2", "second-on-1", kBlock, On("seg2", 2)).ok());
  ASSERT_TRUE(Put("c1", "first-on-1", kBlock, On("seg1", 3)).ok());
  ASSERT_TRUE(Put("c3", "elsewhere", kBlock, On("seg3")).ok());
  ASSERT_TRUE(Put("c1", "old", kBlock, On("seg3")).ok());
  // An upsert of "old" writing to seg1 when seg1 goes: cancelled, the old value stays.
  ASSERT_TRUE(master_->UpsertStart("c1", "old", 2 * kBlock, On("seg1")).ok());
  ASSERT_EQ(ReplicasOf("second-on-1").size(), 2u);
  ASSERT_EQ(ReplicasOf("first-on-1").size(), 3u);
  ASSERT_TRUE(master_->UnmountSegment("c1", "seg1").ok());
  for (const std::string key : {"second-on-1", "first-on-1"}) {
    for (const Replica& r : ReplicasOf(key)) EXPECT_NE(r.segment_name, "seg1") << key;
  }
  EXPECT_EQ(ReplicasOf("second-on-1").size(), 1u);
  EXPECT_EQ(ReplicasOf("first-on-1").size(), 2u);
  EXPECT_EQ(ReplicasOf("elsewhere").size(), 1u);
  ASSERT_EQ(ReplicasOf("old").size(), 1u);
  EXPECT_EQ(ReplicasOf("old")[0].size, kBlock);
  EXPECT_EQ(Code(master_->PutEnd("c1", "old", 2)), ErrorCode::kObjectNotFound);
  EXPECT_EQ(Objects(), 4u);
  EXPECT_EQ(Used(), (1 + 2 + 1 + 1) * kBlock);
  // The other segments unmount as cleanly: each object goes with its last replica.
  ASSERT_TRUE(master_->UnmountSegment("c2", "seg2").ok());
  EXPECT_FALSE(master_->Exist("second-on-1"));
  EXPECT_EQ(ReplicasOf("first-on-1").size(), 1u);
  ASSERT_TRUE(master_->UnmountSegment("c3", "seg3").ok());
  EXPECT_EQ(Objects(), 0u);
  EXPECT_EQ(Used(), 0u);
  // The freed slots are reused by new mounts.
  Mount("c1", "seg1", 1 << 20, 0x100000);
  ASSERT_TRUE(Put("c1", "new", kBlock, On("seg1")).ok());
  EXPECT_EQ(ReplicasOf("new")[0].segment_name, "seg1");
}

TEST_F(MasterServiceTest, PingOfUnknownClientAsksForRemount) {
  EXPECT_EQ(master_->Ping("x"), ClientState::kNeedRemount);
  EXPECT_EQ(master_->Ping("x"), ClientState::kOk);
  EXPECT_EQ(master_->Stats().clients, 1u);
  EXPECT_EQ(master_->Ping(""), ClientState::kNeedRemount);
  EXPECT_EQ(master_->Stats().clients, 1u);
}

// --- put / get / remove ---

TEST_F(MasterServiceTest, PutGetExistRemoveLifecycle) {
  const uint64_t epoch = Mount("c1", "seg1", 1 << 20, /*base=*/0x10000);
  absl::StatusOr<std::vector<Replica>> started = master_->PutStart("c1", "k", 1000, {});
  ASSERT_TRUE(started.ok()) << started.status();
  ASSERT_EQ(started->size(), 1u);
  const Replica replica = started->front();
  EXPECT_EQ(replica.segment_name, "seg1");
  EXPECT_EQ(replica.epoch, epoch);
  EXPECT_EQ(replica.size, 1000u);
  EXPECT_GE(replica.address, 0x10000u);
  EXPECT_LE(replica.address + 1000, 0x10000u + (1 << 20));
  EXPECT_EQ(replica.address % 64, 0u);
  // In progress: invisible.
  EXPECT_FALSE(master_->Exist("k"));
  EXPECT_EQ(Code(master_->GetReplicaList("k")), ErrorCode::kObjectNotFound);
  EXPECT_EQ(Code(master_->GetSize("k")), ErrorCode::kObjectNotFound);
  EXPECT_EQ(Code(master_->Remove("k")), ErrorCode::kObjectNotFound);
  EXPECT_EQ(Objects(), 1u);
  EXPECT_EQ(Used(), 1024u);

  ASSERT_TRUE(master_->PutEnd("c1", "k", 0xabc).ok());
  EXPECT_TRUE(master_->Exist("k"));
  EXPECT_EQ(master_->GetSize("k").value_or(0), 1000u);
  absl::StatusOr<ObjectLocation> location = master_->GetReplicaList("k");
  ASSERT_TRUE(location.ok());
  EXPECT_EQ(location->size, 1000u);
  EXPECT_EQ(location->checksum, 0xabcu);
  EXPECT_EQ(location->lease_ttl, options_.default_kv_lease_ttl);
  ASSERT_EQ(location->replicas.size(), 1u);
  EXPECT_EQ(location->replicas[0].address, replica.address);
  EXPECT_EQ(location->replicas[0].epoch, epoch);

  EXPECT_EQ(Code(master_->Remove("k")), ErrorCode::kObjectHasLease);
  Advance(options_.default_kv_lease_ttl + 1ms);
  ASSERT_TRUE(master_->Remove("k").ok());
  EXPECT_FALSE(master_->Exist("k"));
  EXPECT_EQ(Objects(), 0u);
  EXPECT_EQ(Used(), 0u);
  EXPECT_EQ(Code(master_->Remove("k")), ErrorCode::kObjectNotFound);
}

TEST_F(MasterServiceTest, PutOfExistingKeyKeepsTheFirstValue) {
  Mount("c1", "seg1", 1 << 20);
  absl::StatusOr<std::vector<Replica>> first = master_->PutStart("c1", "k", 100, {});
  ASSERT_TRUE(first.ok());
  // Being written (young): refused for everyone, the writer included.
  EXPECT_EQ(Code(master_->PutStart("c2", "k", 200, {})), ErrorCode::kObjectAlreadyExists);
  EXPECT_EQ(Code(master_->PutStart("c1", "k", 200, {})), ErrorCode::kObjectAlreadyExists);
  ASSERT_TRUE(master_->PutEnd("c1", "k", 1).ok());
  EXPECT_EQ(Code(master_->PutStart("c2", "k", 200, {})), ErrorCode::kObjectAlreadyExists);
  absl::StatusOr<ObjectLocation> location = master_->GetReplicaList("k");
  ASSERT_TRUE(location.ok());
  EXPECT_EQ(location->size, 100u);
  EXPECT_EQ(location->checksum, 1u);
  EXPECT_EQ(location->replicas[0].address, first->front().address);
  EXPECT_EQ(Objects(), 1u);
}

TEST_F(MasterServiceTest, StalePutIsTakenOverAfterDiscardTimeout) {
  Mount("c1", "seg1", 1 << 20);
  master_->Ping("c2");
  alive_.insert("c2");
  absl::StatusOr<std::vector<Replica>> old_put = master_->PutStart("c1", "k", kBlock, {});
  ASSERT_TRUE(old_put.ok());
  Advance(options_.put_start_discard_timeout - 1ms);
  EXPECT_EQ(Code(master_->PutStart("c2", "k", kBlock, {})), ErrorCode::kObjectAlreadyExists);
  Advance(1ms);
  absl::StatusOr<std::vector<Replica>> new_put = master_->PutStart("c2", "k", kBlock, {});
  ASSERT_TRUE(new_put.ok()) << new_put.status();
  // The old writer may still be writing: its space is not reused yet.
  EXPECT_NE(new_put->front().address, old_put->front().address);
  EXPECT_EQ(Used(), 2 * kBlock);
  EXPECT_EQ(Code(master_->PutEnd("c1", "k", 1)), ErrorCode::kIllegalClient);
  ASSERT_TRUE(master_->PutEnd("c2", "k", 2).ok());
  EXPECT_EQ(master_->GetReplicaList("k")->checksum, 2u);
  // Freed once the old put passes put_start_release_timeout.
  Advance(options_.put_start_release_timeout - options_.put_start_discard_timeout - 1ms);
  master_->Tick();
  EXPECT_EQ(Used(), 2 * kBlock);
  Advance(1ms);
  master_->Tick();
  EXPECT_EQ(Used(), kBlock);
}

TEST_F(MasterServiceTest, AbandonedPutIsReclaimedByTick) {
  Mount("c1", "seg1", 1 << 20);
  ASSERT_TRUE(master_->PutStart("c1", "zombie", kBlock, {}).ok());
  Advance(options_.put_start_release_timeout - 1ms);
  master_->Tick();
  EXPECT_EQ(Objects(), 1u);
  EXPECT_EQ(Used(), kBlock);
  Advance(1ms);
  master_->Tick();
  EXPECT_EQ(Objects(), 0u);
  EXPECT_EQ(Used(), 0u);
  EXPECT_EQ(Code(master_->PutEnd("c1", "zombie", 1)), ErrorCode::kObjectNotFound);
  EXPECT_TRUE(Put("c1", "zombie").ok());
}

TEST_F(MasterServiceTest, OnlyTheWriterEndsOrRevokes) {
  Mount("c1", "seg1", 1 << 20);
  master_->Ping("c2");
  ASSERT_TRUE(master_->PutStart("c1", "k", kBlock, {}).ok());
  EXPECT_EQ(Code(master_->PutEnd("c2", "k", 1)), ErrorCode::kIllegalClient);
  EXPECT_EQ(Code(master_->PutRevoke("c2", "k")), ErrorCode::kIllegalClient);
  EXPECT_EQ(Code(master_->PutEnd("stranger", "k", 1)), ErrorCode::kIllegalClient);
  ASSERT_TRUE(master_->PutRevoke("c1", "k").ok());
  EXPECT_EQ(Used(), 0u);
  EXPECT_EQ(Objects(), 0u);
  EXPECT_EQ(Code(master_->PutEnd("c1", "k", 1)), ErrorCode::kObjectNotFound);
  EXPECT_EQ(Code(master_->PutRevoke("c1", "k")), ErrorCode::kObjectNotFound);
  ASSERT_TRUE(Put("c1", "k", kBlock, {}, /*checksum=*/7).ok());
  EXPECT_EQ(Code(master_->PutRevoke("c1", "k")), ErrorCode::kObjectNotFound);
  EXPECT_TRUE(master_->PutEnd("c1", "k", 7).ok());  // a retried PutEnd
  EXPECT_EQ(Code(master_->PutEnd("c1", "k", 8)), ErrorCode::kObjectNotFound);
  EXPECT_TRUE(master_->Exist("k"));
}

TEST_F(MasterServiceTest, LeaseBlocksRemoveUntilItExpires) {
  Mount("c1", "seg1", 1 << 20);
  ASSERT_TRUE(Put("c1", "k").ok());
  ASSERT_TRUE(master_->GetReplicaList("k").ok());
  EXPECT_EQ(Code(master_->Remove("k")), ErrorCode::kObjectHasLease);
  Advance(1s);
  ASSERT_TRUE(master_->GetReplicaList("k").ok());  // extends to now + 2 s
  Advance(1500ms);
  EXPECT_EQ(Code(master_->Remove("k")), ErrorCode::kObjectHasLease);
  Advance(500ms);
  EXPECT_TRUE(master_->Remove("k").ok());
}

TEST_F(MasterServiceTest, ExistAndGetSizeGrantNoLease) {
  Mount("c1", "seg1", 1 << 20);
  ASSERT_TRUE(Put("c1", "k").ok());
  EXPECT_TRUE(master_->Exist("k"));
  EXPECT_TRUE(master_->GetSize("k").ok());
  EXPECT_TRUE(master_->Remove("k").ok());
}

TEST_F(MasterServiceTest, ForceRemoveOfLeasedObjectHoldsItsSpaceUntilTheLeaseEnds) {
  Mount("c1", "seg1", 1 << 20);
  ASSERT_TRUE(Put("c1", "k").ok());
  const std::vector<Replica> leased = ReplicasOf("k");
  ASSERT_TRUE(master_->Remove("k", /*force=*/true).ok());
  EXPECT_FALSE(master_->Exist("k"));
  EXPECT_EQ(Used(), kBlock);
  absl::StatusOr<std::vector<Replica>> next = master_->PutStart("c1", "k2", kBlock, {});
  ASSERT_TRUE(next.ok());
  EXPECT_NE(next->front().address, leased.front().address);
  Advance(options_.default_kv_lease_ttl);
  master_->Tick();
  EXPECT_EQ(Used(), kBlock);
}

TEST_F(MasterServiceTest, BadArgumentsAreRejected) {
  Mount("c1", "seg1", 1 << 20);
  EXPECT_EQ(Code(master_->PutStart("c1", "", 10, {})), ErrorCode::kInvalidParams);
  EXPECT_EQ(Code(master_->GetReplicaList("")), ErrorCode::kInvalidParams);
  EXPECT_EQ(Code(master_->GetSize("")), ErrorCode::kInvalidParams);
  EXPECT_EQ(Code(master_->Remove("")), ErrorCode::kInvalidParams);
  EXPECT_EQ(Code(master_->PutEnd("c1", "", 0)), ErrorCode::kInvalidParams);
  EXPECT_FALSE(master_->Exist(""));
  const std::string longest(options_.max_key_bytes, 'k');
  EXPECT_TRUE(Put("c1", longest).ok());
  EXPECT_TRUE(master_->Exist(longest));
  ASSERT_TRUE(master_->GetReplicaList(longest).ok());
  EXPECT_EQ(Code(master_->PutStart("c1", longest + "k", 10, {})), ErrorCode::kInvalidParams);
  EXPECT_FALSE(master_->Exist(longest + "k"));
  EXPECT_EQ(Code(master_->PutStart("c1", "k", 0, {})), ErrorCode::kInvalidParams);
  EXPECT_EQ(Code(master_->PutStart("c1", "k", UINT64_MAX, {})), ErrorCode::kInvalidParams);
  ReplicateConfig none;
  none.replica_num = 0;
  EXPECT_EQ(Code(master_->PutStart("c1", "k", 10, none)), ErrorCode::kInvalidParams);
  EXPECT_EQ(Code(master_->PutStart("", "k", 10, {})), ErrorCode::kInvalidParams);
  // Larger than any segment: no room, and nothing is evicted for it.
  EXPECT_EQ(Code(master_->PutStart("c1", "k", 2 << 20, {})), ErrorCode::kNoAvailableHandle);
  EXPECT_EQ(Objects(), 1u);
  EXPECT_EQ(master_->Stats().evictions, 0u);
}

TEST_F(MasterServiceTest, NoSegmentsMeansNoAvailableHandle) {
  EXPECT_EQ(Code(master_->PutStart("c1", "k", 10, {})), ErrorCode::kNoAvailableHandle);
  EXPECT_EQ(Objects(), 0u);
}

TEST_F(MasterServiceTest, AddressesHonourTheAlignment) {
  MasterOptions options = DefaultOptions();
  options.allocation_alignment = 4096;
  Reset(options);
  Mount("c1", "seg1", 1 << 20, /*base=*/0x10003);
  for (int i = 0; i < 10; ++i) {
    absl::StatusOr<std::vector<Replica>> r = master_->PutStart("c1", absl::StrCat(i), 1 + i, {});
    ASSERT_TRUE(r.ok());
    EXPECT_EQ(r->front().address % 4096, 0u);
  }
  EXPECT_EQ(Used(), 10u * 4096);
}

// --- placement ---

TEST_F(MasterServiceTest, ReplicasGoToDistinctSegmentsBestEffort) {
  Mount("c1", "s1", 1 << 20, 0x100000);
  Mount("c1", "s2", 1 << 20, 0x200000);
  Mount("c2", "s3", 1 << 20, 0x300000);
  ReplicateConfig two;
  two.replica_num = 2;
  absl::StatusOr<std::vector<Replica>> r2 = master_->PutStart("c1", "two", kBlock, two);
  ASSERT_TRUE(r2.ok());
  ASSERT_EQ(r2->size(), 2u);
  EXPECT_NE((*r2)[0].segment_name, (*r2)[1].segment_name);
  ReplicateConfig five;
  five.replica_num = 5;
  absl::StatusOr<std::vector<Replica>> r5 = master_->PutStart("c1", "five", kBlock, five);
  ASSERT_TRUE(r5.ok());
  ASSERT_EQ(r5->size(), 3u);
  std::set<std::string> names;
  for (const Replica& r : *r5) names.insert(r.segment_name);
  EXPECT_EQ(names.size(), 3u);
  ASSERT_TRUE(master_->PutEnd("c1", "five", 5).ok());
  EXPECT_EQ(ReplicasOf("five").size(), 3u);
  EXPECT_EQ(Used(), 5 * kBlock);
}

TEST_F(MasterServiceTest, PlacementPrefersThePreferredSegmentThenMostFree) {
  Mount("c1", "small", 16 * kBlock, 0x100000);
  Mount("c1", "big", 64 * kBlock, 0x200000);
  Mount("c1", "mid", 32 * kBlock, 0x300000);
  EXPECT_EQ(master_->PutStart("c1", "a", kBlock, {})->front().segment_name, "big");
  EXPECT_EQ(master_->PutStart("c1", "b", kBlock, On("small"))->front().segment_name, "small");
  EXPECT_EQ(master_->PutStart("c1", "c", kBlock, On("unknown"))->front().segment_name, "big");
  // The preferred segment without room: the others, most free first.
  EXPECT_EQ(master_->PutStart("c1", "d", 20 * kBlock, On("small"))->front().segment_name, "big");
  absl::StatusOr<std::vector<Replica>> pair =
      master_->PutStart("c1", "e", kBlock, On("small", /*replicas=*/2));
  ASSERT_TRUE(pair.ok());
  ASSERT_EQ(pair->size(), 2u);
  EXPECT_EQ((*pair)[0].segment_name, "small");
  EXPECT_EQ((*pair)[1].segment_name, "big");  // 64-22 blocks free vs mid's 32
  // Preferred segments (upstream's preferred_segments): in their order, before the others.
  ReplicateConfig listed;
  listed.replica_num = 3;
  listed.preferred_segments = {"mid", "unknown", "small", "mid"};
  absl::StatusOr<std::vector<Replica>> three = master_->PutStart("c1", "f", kBlock, listed);
  ASSERT_TRUE(three.ok());
  ASSERT_EQ(three->size(), 3u);
  EXPECT_EQ((*three)[0].segment_name, "mid");
  EXPECT_EQ((*three)[1].segment_name, "small");
  EXPECT_EQ((*three)[2].segment_name, "big");
  listed.preferred_segment = "big";  // the single preference comes first
  listed.replica_num = 2;
  three = master_->PutStart("c1", "g", kBlock, listed);
  ASSERT_TRUE(three.ok());
  EXPECT_EQ((*three)[0].segment_name, "big");
  EXPECT_EQ((*three)[1].segment_name, "mid");
}

TEST_F(MasterServiceTest, SegmentsOfSilentClientsGetNoNewObjects) {
  Mount("c1", "s1", 1 << 20);
  Mount("c2", "s2", 1 << 20, 0x400000);
  alive_.erase("c1");
  Advance(11s);  // c1 silent; Tick has not run yet
  for (int i = 0; i < 5; ++i) {
    EXPECT_EQ(master_->PutStart("c2", absl::StrCat(i), kBlock, On("s1"))->front().segment_name,
              "s2");
  }
}

// --- client liveness ---

TEST_F(MasterServiceTest, ExpiredClientLosesLoneObjectsButReplicatedOnesSurvive) {
  Mount("c1", "a", 1 << 20, 0x100000);
  Mount("c2", "b", 1 << 20, 0x400000);
  ASSERT_TRUE(Put("c2", "lone", kBlock, On("a")).ok());
  ASSERT_TRUE(Put("c2", "both", kBlock, On("a", 2)).ok());
  ASSERT_EQ(ReplicasOf("both").size(), 2u);
  ASSERT_TRUE(master_->PutStart("c1", "writing", kBlock, On("b")).ok());
  ASSERT_TRUE(master_->PutStart("c2", "into-a", kBlock, On("a")).ok());
  alive_.erase("c1");
  Advance(5s);  // leases of "both" end too
  master_->Tick();
  EXPECT_EQ(master_->Stats().clients, 2u);
  Advance(6s);
  master_->Tick();
  EXPECT_FALSE(master_->Exist("lone"));
  ASSERT_TRUE(master_->Exist("both"));
  const std::vector<Replica> left = ReplicasOf("both");
  ASSERT_EQ(left.size(), 1u);
  EXPECT_EQ(left[0].segment_name, "b");
  // c1's unfinished put is revoked; c2's put into c1's segment too.
  EXPECT_EQ(Code(master_->PutEnd("c1", "writing", 1)), ErrorCode::kObjectNotFound);
  EXPECT_EQ(Code(master_->PutEnd("c2", "into-a", 1)), ErrorCode::kObjectNotFound);
  EXPECT_TRUE(Put("c2", "writing").ok());
  MasterStats stats = master_->Stats();
  EXPECT_EQ(stats.clients, 1u);
  ASSERT_EQ(stats.segments.size(), 1u);
  EXPECT_EQ(stats.segments[0].segment.name, "b");
  EXPECT_EQ(stats.objects, 2u);
  // "both" + "writing" + the revoked put's block, held until its release timeout.
  EXPECT_EQ(stats.used_bytes, 3 * kBlock);
  Advance(options_.put_start_release_timeout);
  master_->Tick();
  EXPECT_EQ(Used(), 2 * kBlock);
  EXPECT_EQ(master_->Ping("c1"), ClientState::kNeedRemount);
}

// --- upsert ---

TEST_F(MasterServiceTest, UpsertKeepsOldValueReadableUntilEndAndFreesItAfterLeases) {
  Mount("c1", "seg1", 1 << 20);
  master_->Ping("c2");
  alive_.insert("c2");
  ASSERT_TRUE(Put("c1", "k", 1000, {}, /*checksum=*/1).ok());
  const std::vector<Replica> v1 = ReplicasOf("k");  // leased
  absl::StatusOr<std::vector<Replica>> v2 = master_->UpsertStart("c1", "k", 3000, {});
  ASSERT_TRUE(v2.ok()) << v2.status();
  EXPECT_NE(v2->front().address, v1.front().address);
  absl::StatusOr<ObjectLocation> during = master_->GetReplicaList("k");
  ASSERT_TRUE(during.ok());
  EXPECT_EQ(during->size, 1000u);
  EXPECT_EQ(during->checksum, 1u);
  EXPECT_EQ(during->replicas[0].address, v1.front().address);
  EXPECT_EQ(Code(master_->UpsertStart("c2", "k", 10, {})), ErrorCode::kObjectAlreadyExists);
  EXPECT_EQ(Code(master_->PutStart("c2", "k", 10, {})), ErrorCode::kObjectAlreadyExists);
  EXPECT_EQ(Code(master_->PutEnd("c2", "k", 9)), ErrorCode::kIllegalClient);
  EXPECT_EQ(Objects(), 1u);
  ASSERT_TRUE(master_->PutEnd("c1", "k", 2).ok());
  absl::StatusOr<ObjectLocation> after = master_->GetReplicaList("k");
  ASSERT_TRUE(after.ok());
  EXPECT_EQ(after->size, 3000u);
  EXPECT_EQ(after->checksum, 2u);
  EXPECT_EQ(after->replicas[0].address, v2->front().address);
  EXPECT_EQ(Used(), 1024u + 3008u);  // the old copy is still leased
  Advance(options_.default_kv_lease_ttl);
  master_->Tick();
  EXPECT_EQ(Used(), 3008u);
}

TEST_F(MasterServiceTest, UpsertOfAbsentKeyIsAPutAndRevokeKeepsTheOldValue) {
  Mount("c1", "seg1", 1 << 20);
  ASSERT_TRUE(master_->UpsertStart("c1", "k", kBlock, {}).ok());
  EXPECT_FALSE(master_->Exist("k"));
  ASSERT_TRUE(master_->PutEnd("c1", "k", 1).ok());
  ASSERT_TRUE(master_->UpsertStart("c1", "k", 2 * kBlock, {}).ok());
  EXPECT_EQ(Used(), 3 * kBlock);
  ASSERT_TRUE(master_->PutRevoke("c1", "k").ok());
  EXPECT_EQ(Used(), kBlock);
  EXPECT_EQ(master_->GetReplicaList("k")->checksum, 1u);
  // An unleased old copy is freed as soon as the replacement ends.
  Advance(options_.default_kv_lease_ttl);
  ASSERT_TRUE(master_->UpsertStart("c1", "k", 2 * kBlock, {}).ok());
  ASSERT_TRUE(master_->PutEnd("c1", "k", 2).ok());
  EXPECT_EQ(Used(), 2 * kBlock);
  EXPECT_EQ(master_->GetSize("k").value_or(0), 2 * kBlock);
}

TEST_F(MasterServiceTest, StaleUpsertIsTakenOverAndAbandonedOneReclaimed) {
  Mount("c1", "seg1", 1 << 20);
  master_->Ping("c2");
  alive_.insert("c2");
  ASSERT_TRUE(Put("c1", "k").ok());
  ASSERT_TRUE(master_->UpsertStart("c1", "k", kBlock, {}).ok());
  Advance(options_.put_start_discard_timeout);
  ASSERT_TRUE(master_->UpsertStart("c2", "k", kBlock, {}).ok());
  EXPECT_EQ(Code(master_->PutEnd("c1", "k", 5)), ErrorCode::kIllegalClient);
  EXPECT_EQ(Used(), 3 * kBlock);
  Advance(options_.put_start_release_timeout);
  master_->Tick();  // c1's discarded copy and c2's abandoned one both go
  EXPECT_EQ(Used(), kBlock);
  EXPECT_EQ(Code(master_->PutEnd("c2", "k", 5)), ErrorCode::kObjectNotFound);
  EXPECT_EQ(master_->GetReplicaList("k")->checksum, 1u);
}

// --- batches and bulk removal ---

TEST_F(MasterServiceTest, BatchFormsGiveOneResultPerKey) {
  Mount("c1", "seg1", 1 << 20);
  auto started = master_->BatchPutStart("c1", {"a", "b", ""}, {10, 20, 30}, {});
  ASSERT_EQ(started.size(), 3u);
  EXPECT_TRUE(started[0].ok());
  EXPECT_TRUE(started[1].ok());
  EXPECT_EQ(Code(started[2]), ErrorCode::kInvalidParams);
  auto ended = master_->BatchPutEnd("c1", {"a", "b", "x"}, {1, 2, 3});
  ASSERT_EQ(ended.size(), 3u);
  EXPECT_TRUE(ended[0].ok());
  EXPECT_TRUE(ended[1].ok());
  EXPECT_EQ(Code(ended[2]), ErrorCode::kObjectNotFound);
  EXPECT_EQ(master_->BatchExist({"a", "x", "b"}), (std::vector<bool>{true, false, true}));
  auto located = master_->BatchGetReplicaList({"b", "x", "a"});
  ASSERT_EQ(located.size(), 3u);
  EXPECT_EQ(located[0]->size, 20u);
  EXPECT_EQ(Code(located[1]), ErrorCode::kObjectNotFound);
  EXPECT_EQ(located[2]->checksum, 1u);
  auto removed = master_->BatchRemove({"a", "x"});
  EXPECT_EQ(Code(removed[0]), ErrorCode::kObjectHasLease);
  EXPECT_EQ(Code(removed[1]), ErrorCode::kObjectNotFound);
  removed = master_->BatchRemove({"a", "b"}, /*force=*/true);
  EXPECT_TRUE(removed[0].ok() && removed[1].ok());
  ASSERT_TRUE(master_->BatchPutStart("c1", {"c", "d"}, {1, 1}, {})[1].ok());
  auto revoked = master_->BatchPutRevoke("c1", {"c", "d", "e"});
  EXPECT_TRUE(revoked[0].ok() && revoked[1].ok());
  EXPECT_EQ(Code(revoked[2]), ErrorCode::kObjectNotFound);
  EXPECT_EQ(Objects(), 0u);
}

TEST_F(MasterServiceTest, BatchFormsRefuseOversizedAndMismatchedRequests) {
  Mount("c1", "seg1", 1 << 20);
  const std::vector<std::string> keys(limits::kMaxBatchKeys + 1, "k");
  const std::vector<uint64_t> numbers(keys.size(), 1);
  auto started = master_->BatchPutStart("c1", keys, numbers, {});
  ASSERT_EQ(started.size(), keys.size());
  for (const auto& r : started) ASSERT_EQ(Code(r), ErrorCode::kInvalidParams);
  for (const auto& r : master_->BatchPutEnd("c1", keys, numbers)) {
    ASSERT_EQ(Code(r), ErrorCode::kInvalidParams);
  }
  for (const auto& r : master_->BatchPutRevoke("c1", keys)) {
    ASSERT_EQ(Code(r), ErrorCode::kInvalidParams);
  }
  for (const auto& r : master_->BatchGetReplicaList(keys)) {
    ASSERT_EQ(Code(r), ErrorCode::kInvalidParams);
  }
  for (const auto& r : master_->BatchRemove(keys)) ASSERT_EQ(Code(r), ErrorCode::kInvalidParams);
  const std::vector<bool> exist = master_->BatchExist(keys);
  EXPECT_EQ(exist.size(), keys.size());
  auto mismatched = master_->BatchPutStart("c1", {"a", "b"}, {1}, {});
  ASSERT_EQ(mismatched.size(), 2u);
  EXPECT_EQ(Code(mismatched[0]), ErrorCode::kInvalidParams);
  EXPECT_EQ(Code(mismatched[1]), ErrorCode::kInvalidParams);
  EXPECT_EQ(master_->BatchPutEnd("c1", {"a"}, {}).size(), 1u);
  EXPECT_EQ(Objects(), 0u);
  // Exactly kMaxBatchKeys is fine.
  std::vector<std::string> batch;
  for (size_t i = 0; i < limits::kMaxBatchKeys; ++i) batch.push_back(absl::StrCat("k", i));
  auto ok = master_->BatchPutStart("c1", batch, std::vector<uint64_t>(batch.size(), 64), {});
  for (const auto& r : ok) ASSERT_TRUE(r.ok()) << r.status();
}

TEST_F(MasterServiceTest, RemoveByRegexSurvivesHostilePatternsOnLongKeys) {
  MasterOptions options = DefaultOptions();
  options.max_key_bytes = 60000;
  Reset(options);
  Mount("c1", "seg1", 1 << 20);
  ASSERT_TRUE(Put("c1", std::string(60000, 'a')).ok());
  // Exponential for a backtracking matcher, deep recursion for a recursive one.
  EXPECT_EQ(master_->RemoveByRegex("(a*)*b").value_or(99), 0u);
  EXPECT_EQ(master_->RemoveByRegex("(a|b)*").value_or(99), 1u);
  EXPECT_EQ(Objects(), 0u);
}

TEST_F(MasterServiceTest, RemoveByRegexAndRemoveAll) {
  Mount("c1", "seg1", 1 << 20);
  for (const char* key : {"user/1", "user/2", "sys/1", "user/3x"}) ASSERT_TRUE(Put("c1", key).ok());
  ASSERT_TRUE(master_->PutStart("c1", "user/9", kBlock, {}).ok());
  ASSERT_TRUE(master_->GetReplicaList("user/2").ok());
  EXPECT_EQ(master_->RemoveByRegex("user/[0-9]").value_or(99), 1u);  // user/2 is leased
  EXPECT_TRUE(master_->Exist("user/2"));
  EXPECT_TRUE(master_->Exist("user/3x"));
  EXPECT_EQ(master_->RemoveByRegex("user/[0-9]", /*force=*/true).value_or(99), 1u);
  EXPECT_FALSE(master_->Exist("user/2"));
  EXPECT_EQ(Code(master_->RemoveByRegex("(")), ErrorCode::kInvalidParams);
  EXPECT_EQ(Code(master_->RemoveByRegex(std::string(5000, 'a'))), ErrorCode::kInvalidParams);
  EXPECT_EQ(Code(master_->RemoveByRegex("(a)\\1")), ErrorCode::kInvalidParams);
  EXPECT_EQ(master_->RemoveByRegex("nothing").value_or(99), 0u);
  EXPECT_EQ(master_->RemoveAll(), 2u);  // sys/1, user/3x; the unfinished put stays
  EXPECT_EQ(Objects(), 1u);
  ASSERT_TRUE(master_->PutEnd("c1", "user/9", 1).ok());
  ASSERT_TRUE(master_->GetReplicaList("user/9").ok());
  EXPECT_EQ(master_->RemoveAll(), 0u);
  EXPECT_EQ(master_->RemoveAll(/*force=*/true), 1u);
  EXPECT_EQ(Objects(), 0u);
}

// --- eviction ---

// Which objects a pass chooses, with victims freed by the pass (lazy_eviction off, upstream's
// way); LazyEvictionTest below covers the default, where they stay readable until needed.
class EvictionTest : public MasterServiceTest {
 protected:
  void Start(uint64_t blocks, double watermark, double ratio, bool evict_soft = true,
             bool lazy = false) {
    MasterOptions options = DefaultOptions();
    options.eviction_high_watermark_ratio = watermark;
    options.eviction_ratio = ratio;
    options.allow_evict_soft_pinned_objects = evict_soft;
    options.lazy_eviction = lazy;
    Reset(options);
    Mount("c1", "seg", blocks * kBlock);
  }
  static std::string K(const std::string& prefix, int i) { return absl::StrCat(prefix, i); }
};

TEST_F(EvictionTest, EvictsLeastRecentlyUsedFirst) {
  Start(/*blocks=*/100, /*watermark=*/0.905, /*ratio=*/0.1);
  for (int i = 0; i < 60; ++i) ASSERT_TRUE(Put("c1", K("k", i)).ok());
  for (int i = 0; i < 10; ++i) ASSERT_TRUE(master_->GetReplicaList(K("k", i)).ok());
  Advance(options_.default_kv_lease_ttl);
  for (int i = 60; i < 90; ++i) ASSERT_TRUE(Put("c1", K("k", i)).ok());
  EXPECT_EQ(master_->Stats().evictions, 0u);  // exactly at the watermark
  ASSERT_TRUE(Put("c1", "k90").ok());         // above it: 10% of 91 objects go
  const MasterStats stats = master_->Stats();
  EXPECT_EQ(stats.evictions, 1u);
  EXPECT_EQ(stats.evicted_objects, 10u);
  for (int i = 0; i <= 90; ++i) {
    EXPECT_EQ(master_->Exist(K("k", i)), i < 10 || i >= 20) << i;
  }
}

TEST_F(EvictionTest, NeverEvictsLeasedUnfinishedOrHardPinned) {
  Start(/*blocks=*/20, /*watermark=*/0.72, /*ratio=*/1.0);
  ReplicateConfig hard;
  hard.with_hard_pin = true;
  for (int i = 0; i < 4; ++i) ASSERT_TRUE(Put("c1", K("hard", i), kBlock, hard).ok());
  for (int i = 0; i < 4; ++i) {
    ASSERT_TRUE(Put("c1", K("leased", i)).ok());
    ASSERT_TRUE(master_->GetReplicaList(K("leased", i)).ok());
  }
  for (int i = 0; i < 4; ++i)
    ASSERT_TRUE(master_->PutStart("c1", K("writing", i), kBlock, {}).ok());
  ASSERT_TRUE(Put("c1", "plain0").ok());
  ASSERT_TRUE(Put("c1", "plain1").ok());
  EXPECT_EQ(master_->Stats().evictions, 0u);
  ASSERT_TRUE(Put("c1", "plain2").ok());  // 15 blocks > 14: evict everything evictable
  EXPECT_EQ(master_->Stats().evicted_objects, 2u);
  EXPECT_FALSE(master_->Exist("plain0"));
  EXPECT_FALSE(master_->Exist("plain1"));
  EXPECT_TRUE(master_->Exist("plain2"));  // was still being written during the pass
  for (int i = 0; i < 4; ++i) {
    EXPECT_TRUE(master_->Exist(K("hard", i)));
    EXPECT_TRUE(master_->Exist(K("leased", i)));
    EXPECT_TRUE(master_->PutEnd("c1", K("writing", i), 1).ok());
  }
  // Once the leases end, the next pass takes everything but the hard-pinned objects.
  Advance(options_.default_kv_lease_ttl);
  ASSERT_TRUE(Put("c1", "plain3").ok());
  ASSERT_TRUE(Put("c1", "plain4").ok());
  EXPECT_EQ(master_->Stats().evicted_objects, 2u + 4 + 4 + 2);
  for (int i = 0; i < 4; ++i) {
    EXPECT_TRUE(master_->Exist(K("hard", i)));
    EXPECT_FALSE(master_->Exist(K("leased", i)));
  }
  EXPECT_EQ(Objects(), 5u);
}

TEST_F(EvictionTest, SoftPinnedGoLastAndInLruOrder) {
  Start(/*blocks=*/20, /*watermark=*/0.72, /*ratio=*/0.8);
  ReplicateConfig soft;
  soft.with_soft_pin = true;
  for (int i = 0; i < 6; ++i) ASSERT_TRUE(Put("c1", K("s", i), kBlock, soft).ok());
  for (int i = 0; i < 8; ++i) ASSERT_TRUE(Put("c1", K("u", i)).ok());
  ASSERT_TRUE(Put("c1", "x").ok());  // 15 objects: 12 go, the 8 unpinned first
  EXPECT_EQ(master_->Stats().evicted_objects, 12u);
  for (int i = 0; i < 8; ++i) EXPECT_FALSE(master_->Exist(K("u", i)));
  for (int i = 0; i < 6; ++i) EXPECT_EQ(master_->Exist(K("s", i)), i >= 4) << i;
  EXPECT_TRUE(master_->Exist("x"));
}

TEST_F(EvictionTest, SoftPinnedAreKeptWhenNotAllowed) {
  Start(/*blocks=*/20, /*watermark=*/0.72, /*ratio=*/0.8, /*evict_soft=*/false);
  ReplicateConfig soft;
  soft.with_soft_pin = true;
  for (int i = 0; i < 6; ++i) ASSERT_TRUE(Put("c1", K("s", i), kBlock, soft).ok());
  for (int i = 0; i < 8; ++i) ASSERT_TRUE(Put("c1", K("u", i)).ok());
  ASSERT_TRUE(Put("c1", "x").ok());
  EXPECT_EQ(master_->Stats().evicted_objects, 8u);
  for (int i = 0; i < 6; ++i) EXPECT_TRUE(master_->Exist(K("s", i)));
}

TEST_F(EvictionTest, ExpiredSoftPinsCountAsUnpinned) {
  Start(/*blocks=*/20, /*watermark=*/0.72, /*ratio=*/0.5);
  ReplicateConfig soft;
  soft.with_soft_pin = true;
  for (int i = 0; i < 6; ++i) ASSERT_TRUE(Put("c1", K("s", i), kBlock, soft).ok());
  Advance(options_.default_kv_soft_pin_ttl + 1s);
  for (int i = 0; i < 8; ++i) ASSERT_TRUE(Put("c1", K("u", i)).ok());
  ASSERT_TRUE(Put("c1", "x").ok());  // 15 objects: the 8 least recent go
  EXPECT_EQ(master_->Stats().evicted_objects, 8u);
  for (int i = 0; i < 6; ++i) EXPECT_FALSE(master_->Exist(K("s", i)));
  for (int i = 0; i < 8; ++i) EXPECT_EQ(master_->Exist(K("u", i)), i >= 2) << i;
}

TEST_F(EvictionTest, EachPutMayNameItsSoftPinTtl) {
  Start(/*blocks=*/20, /*watermark=*/0.72, /*ratio=*/0.5);
  ReplicateConfig brief, lasting, none;
  brief.with_soft_pin = lasting.with_soft_pin = none.with_soft_pin = true;
  brief.soft_pin_ttl_ms = 1000;                  // shorter than the default (60 s)
  lasting.soft_pin_ttl_ms = 2 * 60 * 60 * 1000;  // longer than it
  none.soft_pin_ttl_ms = 0;                      // no pin at all
  for (int i = 0; i < 3; ++i) ASSERT_TRUE(Put("c1", K("brief", i), kBlock, brief).ok());
  for (int i = 0; i < 3; ++i) ASSERT_TRUE(Put("c1", K("lasting", i), kBlock, lasting).ok());
  ASSERT_TRUE(Put("c1", "none", kBlock, none).ok());
  Advance(90s);  // past the brief pins and the default, within the lasting ones
  for (int i = 0; i < 7; ++i) ASSERT_TRUE(Put("c1", K("u", i)).ok());
  ASSERT_TRUE(Put("c1", "x").ok());  // 15 objects: 8 go, the least recent unpinned ones
  EXPECT_EQ(master_->Stats().evicted_objects, 8u);
  for (int i = 0; i < 3; ++i) EXPECT_FALSE(master_->Exist(K("brief", i))) << i;
  EXPECT_FALSE(master_->Exist("none"));
  for (int i = 0; i < 3; ++i) EXPECT_TRUE(master_->Exist(K("lasting", i))) << i;
  for (int i = 0; i < 7; ++i) EXPECT_EQ(master_->Exist(K("u", i)), i >= 4) << i;
}

TEST_F(EvictionTest, SoftPinTtlRulesAreChecked) {
  Start(/*blocks=*/20, /*watermark=*/0.9, /*ratio=*/0.5);
  ReplicateConfig unpinned;
  unpinned.soft_pin_ttl_ms = 1000;  // a TTL without a soft pin
  EXPECT_EQ(Code(master_->PutStart("c1", "a", kBlock, unpinned)), ErrorCode::kInvalidParams);
  ReplicateConfig too_long;
  too_long.with_soft_pin = true;
  too_long.soft_pin_ttl_ms = options_.max_kv_soft_pin_ttl.count() + 1;
  EXPECT_EQ(Code(master_->PutStart("c1", "a", kBlock, too_long)), ErrorCode::kInvalidParams);
  EXPECT_EQ(Code(master_->UpsertStart("c1", "a", kBlock, too_long)), ErrorCode::kInvalidParams);
  EXPECT_FALSE(master_->Exist("a"));
  EXPECT_EQ(Objects(), 0u);
  too_long.soft_pin_ttl_ms = options_.max_kv_soft_pin_ttl.count();  // the bound itself is taken
  EXPECT_TRUE(Put("c1", "a", kBlock, too_long).ok());
}

TEST_F(EvictionTest, ReadsDoNotExtendASoftPin) {
  // Upstream's rule: a soft pin lasts its TTL from the put's end, however often it is read.
  Start(/*blocks=*/20, /*watermark=*/0.72, /*ratio=*/0.5);
  ReplicateConfig soft;
  soft.with_soft_pin = true;
  for (int i = 0; i < 6; ++i) ASSERT_TRUE(Put("c1", K("s", i), kBlock, soft).ok());
  Advance(options_.default_kv_soft_pin_ttl - 10s);
  for (int i = 0; i < 6; ++i) ASSERT_TRUE(master_->GetReplicaList(K("s", i)).ok());
  Advance(20s);  // the pins have lapsed, the read leases too
  for (int i = 0; i < 8; ++i) ASSERT_TRUE(Put("c1", K("u", i)).ok());
  ASSERT_TRUE(Put("c1", "x").ok());  // 15 objects: 8 go, in LRU order (no pin is left)
  EXPECT_EQ(master_->Stats().evicted_objects, 8u);
  // The s's were read before the u's were put: they go first. (Had the reads extended their
  // pins, the 8 u's would have gone instead.)
  for (int i = 0; i < 6; ++i) EXPECT_FALSE(master_->Exist(K("s", i))) << i;
  for (int i = 0; i < 8; ++i) EXPECT_EQ(master_->Exist(K("u", i)), i >= 2) << i;
}

TEST_F(EvictionTest, AllocationFailureEvictsThenRetries) {
  Start(/*blocks=*/10, /*watermark=*/1.0, /*ratio=*/0.1);
  for (int i = 0; i < 10; ++i) ASSERT_TRUE(Put("c1", K("k", i)).ok());
  EXPECT_EQ(master_->Stats().evictions, 0u);
  ASSERT_TRUE(Put("c1", "k10").ok());
  EXPECT_FALSE(master_->Exist("k0"));
  EXPECT_TRUE(master_->Exist("k10"));
  EXPECT_EQ(master_->Stats().evicted_objects, 1u);
  // Everything leased: nothing can go.
  for (int i = 1; i <= 10; ++i) ASSERT_TRUE(master_->GetReplicaList(K("k", i)).ok());
  EXPECT_EQ(Code(master_->PutStart("c1", "k11", kBlock, {})), ErrorCode::kNoAvailableHandle);
  EXPECT_EQ(Objects(), 10u);
  Advance(options_.default_kv_lease_ttl);
  EXPECT_TRUE(Put("c1", "k11").ok());
  EXPECT_FALSE(master_->Exist("k1"));
}

// Objects that keep a replica after their other segment is unmounted are relinked as just used:
// eviction's walk still reaches every object, and a full segment still makes room. (They were
// relinked at the head of the list with their old access time; the walk stopped at the newer
// tail and freed nothing, so every put failed with no space.)
TEST_F(EvictionTest, SurvivorsOfAnUnmountStayEvictable) {
  Start(/*blocks=*/20, /*watermark=*/1.0, /*ratio=*/0.1);
  Mount("c2", "other", 20 * kBlock, 0x10000000);
  for (int i = 0; i < 10; ++i) ASSERT_TRUE(Put("c1", K("two", i), kBlock, On("seg", 2)).ok());
  for (int i = 0; i < 10; ++i) ASSERT_TRUE(Put("c1", K("one", i), kBlock, On("seg")).ok());
  ASSERT_TRUE(master_->UnmountSegment("c2", "other").ok());
  for (int i = 0; i < 10; ++i) EXPECT_TRUE(master_->Exist(K("two", i))) << i;  // one replica left
  for (int i = 0; i < 20; ++i) {
    ASSERT_TRUE(Put("c1", K("new", i), kBlock, On("seg")).ok()) << "put " << i;
  }
  // The oldest by use went first: the single-replica objects, then the relinked survivors.
  for (int i = 0; i < 10; ++i) EXPECT_FALSE(master_->Exist(K("one", i))) << i;
  EXPECT_EQ(master_->Stats().evicted_objects, 20u);
}

TEST_F(EvictionTest, TickEvictsAboveTheWatermarkOnceLeasesEnd) {
  Start(/*blocks=*/10, /*watermark=*/0.5, /*ratio=*/0.1);
  for (int i = 0; i < 5; ++i) {
    ASSERT_TRUE(Put("c1", K("k", i)).ok());
    ASSERT_TRUE(master_->GetReplicaList(K("k", i)).ok());
  }
  ASSERT_TRUE(master_->PutStart("c1", "k5", kBlock, {}).ok());  // 60%, all leased or writing
  ASSERT_TRUE(master_->PutEnd("c1", "k5", 1).ok());
  EXPECT_EQ(master_->Stats().evicted_objects, 0u);
  Advance(options_.default_kv_lease_ttl);
  master_->Tick();
  // Back to the watermark: the least recent object went.
  EXPECT_EQ(master_->Stats().evicted_objects, 1u);
  EXPECT_FALSE(master_->Exist("k0"));
  EXPECT_EQ(Used(), 5 * kBlock);
}

// --- lazy eviction (the default) ---

class LazyEvictionTest : public EvictionTest {
 protected:
  void Start(uint64_t blocks, double watermark, double ratio) {
    EvictionTest::Start(blocks, watermark, ratio, /*evict_soft=*/true, /*lazy=*/true);
  }
};

TEST_F(LazyEvictionTest, VictimsStayReadableUntilAPutNeedsTheirRoom) {
  Start(/*blocks=*/10, /*watermark=*/0.5, /*ratio=*/0.1);
  for (int i = 0; i < 6; ++i) ASSERT_TRUE(Put("c1", K("k", i)).ok());
  // Above the watermark: the least recent object is chosen, not freed.
  MasterStats stats = master_->Stats();
  EXPECT_EQ(stats.evictions, 1u);
  EXPECT_EQ(stats.evicted_objects, 0u);
  EXPECT_EQ(stats.condemned_bytes, kBlock);
  EXPECT_EQ(stats.used_bytes, 6 * kBlock);
  // Each later put chooses one more; all ten blocks fill with readable objects.
  for (int i = 6; i < 10; ++i) ASSERT_TRUE(Put("c1", K("k", i)).ok());
  stats = master_->Stats();
  EXPECT_EQ(stats.evicted_objects, 0u);
  EXPECT_EQ(stats.condemned_bytes, 5 * kBlock);
  EXPECT_EQ(Objects(), 10u);
  for (int i = 0; i < 10; ++i) EXPECT_TRUE(master_->Exist(K("k", i))) << i;
  // No room left: a put frees the oldest victim (and only it) and succeeds.
  ASSERT_TRUE(Put("c1", "k10").ok());
  stats = master_->Stats();
  EXPECT_EQ(stats.evicted_objects, 1u);
  EXPECT_FALSE(master_->Exist("k0"));
  for (int i = 1; i <= 10; ++i) EXPECT_TRUE(master_->Exist(K("k", i))) << i;
  EXPECT_EQ(stats.used_bytes, 10 * kBlock);
  // Victims go oldest first.
  ASSERT_TRUE(Put("c1", "k11").ok());
  ASSERT_TRUE(Put("c1", "k12").ok());
  EXPECT_FALSE(master_->Exist("k1"));
  EXPECT_FALSE(master_->Exist("k2"));
  EXPECT_TRUE(master_->Exist("k3"));
  EXPECT_EQ(master_->Stats().evicted_objects, 3u);
}

TEST_F(LazyEvictionTest, AReadReprievesAVictim) {
  Start(/*blocks=*/10, /*watermark=*/0.5, /*ratio=*/0.1);
  for (int i = 0; i < 10; ++i) ASSERT_TRUE(Put("c1", K("k", i)).ok());
  ASSERT_EQ(master_->Stats().condemned_bytes, 5 * kBlock);  // k0..k4
  absl::StatusOr<ObjectLocation> read = master_->GetReplicaList("k0");
  ASSERT_TRUE(read.ok()) << read.status();
  EXPECT_EQ(master_->Stats().condemned_bytes, 4 * kBlock);
  ASSERT_TRUE(master_->ReleaseLeases({read->lease_id}).ok());
  // The next victim to go is k1, then k2; k0 was read after both.
  ASSERT_TRUE(Put("c1", "k10").ok());
  EXPECT_TRUE(master_->Exist("k0"));
  EXPECT_FALSE(master_->Exist("k1"));
  // A replacing put reprieves its key too.
  ASSERT_TRUE(master_->UpsertStart("c1", "k2", kBlock, {}).ok());
  ASSERT_TRUE(master_->PutEnd("c1", "k2", 7).ok());
  ASSERT_TRUE(Put("c1", "k11").ok());
  EXPECT_TRUE(master_->Exist("k2"));
  EXPECT_FALSE(master_->Exist("k3"));
}

TEST_F(LazyEvictionTest, LeasedAndHardPinnedObjectsAreNeverChosen) {
  Start(/*blocks=*/8, /*watermark=*/0.75, /*ratio=*/1.0);
  ReplicateConfig hard;
  hard.with_hard_pin = true;
  for (int i = 0; i < 3; ++i) ASSERT_TRUE(Put("c1", K("hard", i), kBlock, hard).ok());
  for (int i = 0; i < 3; ++i) {
    ASSERT_TRUE(Put("c1", K("leased", i)).ok());
    ASSERT_TRUE(master_->GetReplicaList(K("leased", i)).ok());
  }
  ASSERT_TRUE(Put("c1", "plain0").ok());  // above the watermark, but nothing can be chosen
  EXPECT_EQ(master_->Stats().condemned_bytes, 0u);
  Advance(200ms);                         // past the back-off after a pass that found nothing
  ASSERT_TRUE(Put("c1", "plain1").ok());  // full: of all, only plain0 can be chosen
  EXPECT_EQ(master_->Stats().condemned_bytes, kBlock);
  ASSERT_TRUE(Put("c1", "plain2").ok());  // takes plain0's room
  EXPECT_FALSE(master_->Exist("plain0"));
  EXPECT_TRUE(master_->Exist("plain1"));
  // No room for three blocks even after freeing every object it may free.
  EXPECT_EQ(Code(master_->PutStart("c1", "big", 3 * kBlock, {})), ErrorCode::kNoAvailableHandle);
  for (int i = 0; i < 3; ++i) {
    EXPECT_TRUE(master_->Exist(K("hard", i)));
    EXPECT_TRUE(master_->Exist(K("leased", i)));
  }
}

TEST_F(LazyEvictionTest, TickChoosesOnceLeasesEndAndRemovesFreeVictims) {
  Start(/*blocks=*/10, /*watermark=*/0.5, /*ratio=*/0.1);
  for (int i = 0; i < 6; ++i) {
    ASSERT_TRUE(Put("c1", K("k", i)).ok());
    ASSERT_TRUE(master_->GetReplicaList(K("k", i)).ok());
  }
  EXPECT_EQ(master_->Stats().condemned_bytes, 0u);  // all leased
  Advance(options_.default_kv_lease_ttl);
  master_->Tick();
  EXPECT_EQ(master_->Stats().condemned_bytes, kBlock);
  EXPECT_TRUE(master_->Exist("k0"));
  // Removing a victim frees it and its count.
  ASSERT_TRUE(master_->Remove("k0").ok());
  EXPECT_EQ(master_->Stats().condemned_bytes, 0u);
  EXPECT_EQ(Used(), 5 * kBlock);
}

// --- stats and concurrency ---

TEST_F(MasterServiceTest, StatsReportSegmentUsage) {
  const uint64_t e1 = Mount("c1", "s1", 64 * kBlock, 0x100000);
  Mount("c2", "s2", 32 * kBlock, 0x200000);
  ASSERT_TRUE(Put("c1", "a", kBlock, On("s1")).ok());
  ASSERT_TRUE(Put("c1", "b", 3 * kBlock, On("s2")).ok());
  const MasterStats stats = master_->Stats();
  EXPECT_EQ(stats.objects, 2u);
  EXPECT_EQ(stats.used_bytes, 4 * kBlock);
  EXPECT_EQ(stats.capacity_bytes, 96 * kBlock);
  EXPECT_EQ(stats.clients, 2u);
  ASSERT_EQ(stats.segments.size(), 2u);
  for (const SegmentUsage& usage : stats.segments) {
    if (usage.segment.name == "s1") {
      EXPECT_EQ(usage.client_id, "c1");
      EXPECT_EQ(usage.epoch, e1);
      EXPECT_EQ(usage.used_bytes, kBlock);
      EXPECT_EQ(usage.segment.size, 64 * kBlock);
    } else {
      EXPECT_EQ(usage.used_bytes, 3 * kBlock);
    }
  }
}

TEST_F(MasterServiceTest, ConcurrentCallsStayConsistent) {
  MasterOptions options = DefaultOptions();
  options.eviction_high_watermark_ratio = 0.8;
  Reset(options);
  Mount("c0", "s0", 256 * kBlock, 0x100000);
  Mount("c1", "s1", 256 * kBlock, 0x200000);
  std::atomic<bool> stop{false};
  std::thread ticker([&] {
    while (!stop.load()) {
      master_->Tick();
      clock_.Advance(10ms);
      master_->Ping("c0");
      master_->Ping("c1");
    }
  });
  std::vector<std::thread> workers;
  for (int t = 0; t < 4; ++t) {
    workers.emplace_back([&, t] {
      const std::string client = absl::StrCat("c", t % 2);
      for (int i = 0; i < 3000; ++i) {
        const std::string key = absl::StrCat("k", (i * 7 + t) % 300);
        switch ((i + t) % 6) {
          case 0:
            if (master_->PutStart(client, key, 1 + i % 3000, {}).ok()) {
              (void)master_->PutEnd(client, key, i);
            }
            break;
          case 1:
            (void)master_->GetReplicaList(key);
            break;
          case 2:
            (void)master_->Remove(key, i % 5 == 0);
            break;
          case 3:
            (void)master_->UpsertStart(client, key, 100, {});
            (void)master_->PutEnd(client, key, i);
            break;
          case 4:
            (void)master_->BatchExist({key, "x", key});
            break;
          default:
            if (master_->PutStart(client, key, 64, {}).ok()) (void)master_->PutRevoke(client, key);
        }
      }
    });
  }
  for (std::thread& w : workers) w.join();
  stop = true;
  ticker.join();
  // Everything drains back to zero.
  master_->RemoveAll(/*force=*/true);
  Advance(options_.put_start_release_timeout + options_.default_kv_lease_ttl);
  master_->Tick();
  master_->RemoveAll(/*force=*/true);
  EXPECT_EQ(Objects(), 0u);
  EXPECT_EQ(Used(), 0u);
}

}  // namespace
}  // namespace yuebing::master
