// SegmentManifest: journal batches applied in order, and only intact objects reported.
#include "store/segment_manifest.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "yuebing/common/checksum.h"

namespace yuebing::store {
namespace {

master::JournalEntry Add(const std::string& key, const char* bytes, uint64_t size,
                         uint64_t checksum, bool committed = true) {
  master::JournalEntry entry;
  entry.op = master::JournalEntry::Op::kAdd;
  entry.committed = committed;
  entry.address = reinterpret_cast<uint64_t>(bytes);
  entry.size = size;
  entry.checksum = checksum;
  entry.key = key;
  return entry;
}

TEST(SegmentManifestTest, ReportsOnlyObjectsWhoseBytesStillMatch) {
  std::string segment(4096, 'a');
  const uint64_t base = reinterpret_cast<uint64_t>(segment.data());
  auto checksum = [&](size_t offset, size_t size) {
    return ObjectChecksum({absl::string_view(segment.data() + offset, size)});
  };
  SegmentManifest manifest;
  master::JournalBatch batch;
  batch.entries.push_back(Add("intact", segment.data(), 1024, checksum(0, 1024)));
  batch.entries.push_back(Add("changed", segment.data() + 1024, 1024, checksum(1024, 1024)));
  batch.entries.push_back(Add("unchecked", segment.data() + 2048, 512, kNoChecksum));
  // Announced, not committed: reported when its bytes match, never without a checksum.
  batch.entries.push_back(
      Add("written", segment.data() + 2560, 256, checksum(2560, 256), /*committed=*/false));
  batch.entries.push_back(Add("cut short", segment.data() + 2816, 256, 5, /*committed=*/false));
  batch.entries.push_back(
      Add("unknown", segment.data() + 3584, 256, kNoChecksum, /*committed=*/false));
  batch.entries.push_back(Add("dropped", segment.data() + 3072, 512, checksum(3072, 512)));
  master::JournalEntry drop;
  drop.op = master::JournalEntry::Op::kDrop;
  drop.address = base + 3072;
  batch.entries.push_back(drop);
  manifest.Apply(batch);
  EXPECT_EQ(manifest.size(), 6u);

  segment[1500] = 'b';  // the range was reused by bytes the manifest never heard of
  std::vector<master::RestoredObject> objects = manifest.Verified(base, segment.size());
  std::vector<std::string> keys;
  for (const auto& object : objects) keys.push_back(object.key);
  std::sort(keys.begin(), keys.end());
  EXPECT_EQ(keys, (std::vector<std::string>{"intact", "unchecked", "written"}));
  EXPECT_EQ(manifest.size(), 3u) << "objects not reported are forgotten";

  // Outside the segment's range: never reported.
  EXPECT_TRUE(manifest.Verified(base + 4096, 4096).empty());

  // A reset keeps what can still be checked (objects with a checksum), drops the rest.
  master::JournalBatch again;
  again.entries.push_back(Add("checked", segment.data(), 1024, checksum(0, 1024)));
  again.entries.push_back(Add("unchecked", segment.data() + 2048, 512, kNoChecksum));
  manifest.Apply(again);
  master::JournalBatch reset;
  reset.reset = true;
  manifest.Apply(reset);
  EXPECT_EQ(manifest.size(), 1u);
  ASSERT_EQ(manifest.Verified(base, segment.size()).size(), 1u);
}

}  // namespace
}  // namespace yuebing::store
