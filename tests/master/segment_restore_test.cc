// Segment manifests: the journal the master keeps for each segment owner (adds and drops in the
// order it made them) and the restore of what an owner reports after a fresh mount
// (MasterService::PullJournal, MountSegmentForRestore, RestoreObjects), with a FakeClock.
#include <gtest/gtest.h>

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "master/segment_journal.h"
#include "yuebing/common/clock.h"
#include "yuebing/common/error_code.h"
#include "yuebing/common/limits.h"
#include "yuebing/master/master_service.h"

namespace yuebing::master {
namespace {

using namespace std::chrono_literals;

constexpr uint64_t kBlock = 1024;
constexpr uint64_t kBase = 0x100000;

class SegmentRestoreTest : public ::testing::Test {
 protected:
  SegmentRestoreTest() {
    options_.num_shards = 4;
    options_.client_ttl = 3600s;
    options_.default_kv_lease_ttl = 1s;
    master_ = std::make_unique<MasterService>(options_, clock_);
  }

  MountResult Mount(const std::string& client, const std::string& name, uint64_t base) {
    absl::StatusOr<MountResult> mount =
        master_->MountSegmentForRestore(client, Segment{name, base, 16 * kBlock});
    EXPECT_TRUE(mount.ok()) << mount.status();
    return mount.value_or(MountResult{});
  }
  void Put(const std::string& key, uint64_t checksum, uint32_t replicas = 1, bool upsert = false) {
    ReplicateConfig config;
    config.replica_num = replicas;
    auto started = upsert ? master_->UpsertStart("c1", key, kBlock, config, checksum)
                          : master_->PutStart("c1", key, kBlock, config, checksum);
    ASSERT_TRUE(started.ok()) << key << ": " << started.status();
    ASSERT_TRUE(master_->PutEnd("c1", key, checksum).ok());
  }
  // Everything queued for `client` after `*ack` (then acknowledged).
  std::vector<JournalEntry> Pull(const std::string& client, uint64_t* ack) {
    absl::StatusOr<JournalBatch> batch = master_->PullJournal(client, journal_id_, *ack, 4096);
    EXPECT_TRUE(batch.ok()) << batch.status();
    if (!batch.ok()) return {};
    journal_id_ = batch->journal_id;
    *ack = batch->last_seq;
    return batch->entries;
  }
  std::vector<absl::Status> Restore(const std::string& client, const std::string& segment,
                                    const std::vector<RestoredObject>& objects, bool last) {
    absl::StatusOr<std::vector<absl::Status>> results =
        master_->RestoreObjects(client, segment, objects, last);
    EXPECT_TRUE(results.ok()) << results.status();
    return results.value_or(std::vector<absl::Status>{});
  }

  FakeClock clock_;
  MasterOptions options_;
  std::unique_ptr<MasterService> master_;
  uint64_t journal_id_ = 0;
};

TEST_F(SegmentRestoreTest, TheJournalTellsTheOwnerEveryAddAndDropInOrder) {
  ASSERT_TRUE(Mount("c1", "seg1", kBase).fresh);
  Restore("c1", "seg1", {}, true);
  uint64_t ack = 0;
  EXPECT_TRUE(Pull("c1", &ack).empty());

  // Announced when the put starts, with the checksum to come; a PutEnd that records that
  // checksum adds nothing (the owner can check the bytes itself).
  ASSERT_TRUE(master_->PutStart("c1", "a", kBlock, {}, 11).ok());
  std::vector<JournalEntry> entries = Pull("c1", &ack);
  ASSERT_EQ(entries.size(), 1u);
  EXPECT_EQ(entries[0].op, JournalEntry::Op::kAdd);
  EXPECT_FALSE(entries[0].committed);
  EXPECT_EQ(entries[0].key, "a");
  EXPECT_EQ(entries[0].size, kBlock);
  EXPECT_EQ(entries[0].checksum, 11u);
  const uint64_t address = entries[0].address;
  ASSERT_TRUE(master_->PutEnd("c1", "a", 11).ok());
  EXPECT_TRUE(Pull("c1", &ack).empty());
  EXPECT_EQ(master_->GetReplicaList("a")->replicas.at(0).address, address);

  // Replaced: the new address is announced, then the old one dropped.
  Put("a", 12, 1, /*upsert=*/true);
  entries = Pull("c1", &ack);
  ASSERT_EQ(entries.size(), 2u);
  EXPECT_EQ(entries[0].op, JournalEntry::Op::kAdd);
  EXPECT_FALSE(entries[0].committed);
  EXPECT_EQ(entries[0].checksum, 12u);
  EXPECT_EQ(entries[1].op, JournalEntry::Op::kDrop);
  EXPECT_EQ(entries[1].address, address);
  EXPECT_TRUE(Pull("c1", &ack).empty()) << "acknowledged entries are not sent again";

  // Without a checksum announced (or with another one recorded), the commit is journaled.
  ASSERT_TRUE(master_->PutStart("c1", "b", kBlock, {}).ok());
  ASSERT_TRUE(master_->PutEnd("c1", "b", 0).ok());
  entries = Pull("c1", &ack);
  ASSERT_EQ(entries.size(), 2u);
  EXPECT_FALSE(entries[0].committed);
  EXPECT_TRUE(entries[1].committed);
  EXPECT_EQ(entries[1].address, entries[0].address);
  ASSERT_TRUE(master_->PutStart("c1", "c", kBlock, {}, 5).ok());
  ASSERT_TRUE(master_->PutEnd("c1", "c", 6).ok());
  entries = Pull("c1", &ack);
  ASSERT_EQ(entries.size(), 2u);
  EXPECT_TRUE(entries[1].committed);
  EXPECT_EQ(entries[1].checksum, 6u);

  // Removed while read: dropped at once (the bytes wait for the reader, the object is gone).
  ASSERT_TRUE(master_->GetReplicaList("a").ok());
  ASSERT_TRUE(master_->Remove("a", /*force=*/true).ok());
  entries = Pull("c1", &ack);
  ASSERT_EQ(entries.size(), 1u);
  EXPECT_EQ(entries[0].op, JournalEntry::Op::kDrop);

  // A revoked put is dropped again.
  ASSERT_TRUE(master_->PutStart("c1", "unfinished", kBlock, {}, 3).ok());
  ASSERT_TRUE(master_->PutRevoke("c1", "unfinished").ok());
  entries = Pull("c1", &ack);
  ASSERT_EQ(entries.size(), 2u);
  EXPECT_EQ(entries[0].op, JournalEntry::Op::kAdd);
  EXPECT_EQ(entries[1].op, JournalEntry::Op::kDrop);
  EXPECT_EQ(entries[1].address, entries[0].address);
}

TEST_F(SegmentRestoreTest, EachReplicaGoesToTheOwnerOfItsSegment) {
  Mount("c1", "seg1", kBase);
  Restore("c1", "seg1", {}, true);
  Mount("c2", "seg2", 2 * kBase);
  Restore("c2", "seg2", {}, true);
  Put("both", 5, 2);
  uint64_t ack1 = 0;
  uint64_t ack2 = 0;
  std::vector<JournalEntry> one = Pull("c1", &ack1);
  std::vector<JournalEntry> two = Pull("c2", &ack2);
  ASSERT_EQ(one.size(), 1u);
  ASSERT_EQ(two.size(), 1u);
  EXPECT_LT(one[0].address, 2 * kBase);
  EXPECT_GE(two[0].address, 2 * kBase);
}

TEST_F(SegmentRestoreTest, ARestoringSegmentTakesNoNewObjectsUntilTheRestoreEnds) {
  ASSERT_TRUE(Mount("c1", "seg1", kBase).fresh);
  EXPECT_EQ(ToErrorCode(master_->PutStart("c1", "early", kBlock, {}).status()),
            ErrorCode::kNoAvailableHandle);
  // A mount that did not finish its restore may start it over; a finished one is not fresh.
  EXPECT_TRUE(Mount("c1", "seg1", kBase).fresh);
  Restore("c1", "seg1", {}, true);
  EXPECT_FALSE(Mount("c1", "seg1", kBase).fresh);
  EXPECT_TRUE(master_->PutStart("c1", "late", kBlock, {}).ok());
  EXPECT_EQ(ToErrorCode(master_->RestoreObjects("c1", "seg1", {}, true).status()),
            ErrorCode::kInvalidParams)
      << "the restore has ended";
}

// A put that finds every segment restoring fails (no space) and evicts nothing: the objects
// already reported stay. (It used to run an eviction pass over the objects just restored.)
TEST_F(SegmentRestoreTest, APutDuringARestoreEvictsNothing) {
  ASSERT_TRUE(Mount("c1", "seg1", kBase).fresh);
  std::vector<RestoredObject> first, second;
  for (uint64_t i = 0; i < 12; ++i) {
    (i < 8 ? first : second)
        .push_back({"r" + std::to_string(i), kBase + i * kBlock, kBlock, 100 + i, 0});
  }
  for (const absl::Status& result : Restore("c1", "seg1", first, false)) {
    ASSERT_TRUE(result.ok()) << result;
  }
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(ToErrorCode(master_->PutStart("c2", "new" + std::to_string(i), kBlock, {}).status()),
              ErrorCode::kNoAvailableHandle);
  }
  for (const absl::Status& result : Restore("c1", "seg1", second, true)) {
    ASSERT_TRUE(result.ok()) << result;
  }
  EXPECT_EQ(master_->Stats().evicted_objects, 0u);
  for (uint64_t i = 0; i < 12; ++i) {
    EXPECT_TRUE(master_->GetReplicaList("r" + std::to_string(i)).ok()) << "r" << i << " lost";
  }
  EXPECT_TRUE(master_->PutStart("c2", "after", kBlock, {}).ok());
}

TEST_F(SegmentRestoreTest, RestoredObjectsAreReadableAndConflictsAreRefused) {
  Mount("c1", "seg1", kBase);
  Mount("c2", "seg2", 2 * kBase);
  const std::vector<RestoredObject> objects = {
      {"x", kBase, kBlock, 7, JournalEntry::kPinHard},
      {"y", kBase + kBlock, 100, 8, 0},
      {"overlap", kBase + kBlock + 64, kBlock, 9, 0},  // inside y's range
      {"outside", kBase + 16 * kBlock, kBlock, 9, 0},
      {"misaligned", kBase + 3 * kBlock + 1, 10, 9, 0},
      {"", kBase + 5 * kBlock, 10, 9, 0},
  };
  std::vector<absl::Status> results = Restore("c1", "seg1", objects, false);
  ASSERT_EQ(results.size(), objects.size());
  EXPECT_TRUE(results[0].ok()) << results[0];
  EXPECT_TRUE(results[1].ok()) << results[1];
  for (size_t i = 2; i < objects.size(); ++i) {
    EXPECT_EQ(ToErrorCode(results[i]), ErrorCode::kInvalidParams) << objects[i].key;
  }
  // The same report again (a restore started over) is accepted without a second replica.
  results = Restore("c1", "seg1", {objects[0]}, true);
  EXPECT_TRUE(results.at(0).ok()) << results[0];

  absl::StatusOr<ObjectLocation> x = master_->GetReplicaList("x");
  ASSERT_TRUE(x.ok()) << x.status();
  EXPECT_EQ(x->size, kBlock);
  EXPECT_EQ(x->checksum, 7u);
  ASSERT_EQ(x->replicas.size(), 1u);
  EXPECT_EQ(x->replicas[0].address, kBase);
  EXPECT_EQ(x->replicas[0].segment_name, "seg1");

  // Another segment's copy of x becomes a second replica; a different y is refused.
  results = Restore("c2", "seg2",
                    {{"x", 2 * kBase, kBlock, 7, 0}, {"y", 2 * kBase + kBlock, 100, 99, 0}}, true);
  EXPECT_TRUE(results.at(0).ok()) << results[0];
  EXPECT_EQ(ToErrorCode(results.at(1)), ErrorCode::kObjectAlreadyExists);
  EXPECT_EQ(master_->GetReplicaList("x")->replicas.size(), 2u);
  EXPECT_EQ(master_->GetReplicaList("y")->checksum, 8u);

  // Restored space is in use: the rest of seg1 fills up to its capacity, not beyond.
  EXPECT_EQ(master_->Stats().objects, 2u);
  int placed = 0;
  for (int i = 0; i < 32; ++i) {
    ReplicateConfig config;
    config.preferred_segment = "seg1";
    if (master_->PutStart("c3", "fill" + std::to_string(i), kBlock, config).ok()) ++placed;
  }
  EXPECT_EQ(placed, 16 + 16 - 2 - 1) << "two segments of 16 blocks, three blocks restored";

  // The wrong owner, or an unknown segment, is refused as a whole.
  EXPECT_EQ(ToErrorCode(master_->RestoreObjects("c2", "seg1", {}, true).status()),
            ErrorCode::kIllegalClient);
  EXPECT_EQ(ToErrorCode(master_->RestoreObjects("c1", "nope", {}, true).status()),
            ErrorCode::kSegmentNotFound);
}

TEST_F(SegmentRestoreTest, AHardPinSurvivesTheRestore) {
  Mount("c1", "seg1", kBase);
  Restore("c1", "seg1", {{"pinned", kBase, 8 * kBlock, 1, JournalEntry::kPinHard}}, true);
  uint64_t ack = 0;
  Pull("c1", &ack);
  // Filling the segment evicts what it can, never the hard-pinned object.
  for (int i = 0; i < 40; ++i) (void)master_->PutStart("c1", "f" + std::to_string(i), kBlock, {});
  master_->Tick();
  EXPECT_TRUE(master_->GetReplicaList("pinned").ok());
}

JournalEntry DropAt(uint64_t address) {
  JournalEntry entry;
  entry.op = JournalEntry::Op::kDrop;
  entry.address = address;
  return entry;
}

TEST_F(SegmentRestoreTest, AnOwnerTooFarBehindIsToldToReset) {
  SegmentJournal journal(42, 4);
  for (uint64_t i = 0; i < 6; ++i) journal.Add(1, DropAt(i));
  JournalBatch batch = journal.Pull(1, 42, 0, 100);
  EXPECT_TRUE(batch.reset);
  ASSERT_EQ(batch.entries.size(), 2u);
  EXPECT_EQ(batch.entries[0].address, 4u);
  EXPECT_EQ(batch.last_seq, 6u);
  batch = journal.Pull(1, 42, batch.last_seq, 100);
  EXPECT_FALSE(batch.reset);
  EXPECT_TRUE(batch.entries.empty());
  EXPECT_EQ(journal.queued(), 0u);

  // An acknowledgement from another journal (a previous master) counts as none.
  journal.Add(1, DropAt(7));
  batch = journal.Pull(1, 41, 7, 100);
  EXPECT_EQ(batch.entries.size(), 1u);
  journal.Forget(1);
  EXPECT_EQ(journal.queued(), 0u);
}

}  // namespace
}  // namespace yuebing::master
