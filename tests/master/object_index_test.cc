#include "master/object_index.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"

namespace yuebing::master {
namespace {

TEST(ObjectTableTest, InsertFindErase) {
  ObjectTable table;
  EXPECT_EQ(table.Find("a"), ObjectTable::kNone);
  const uint32_t a = table.Insert("a");
  const uint32_t b = table.Insert("bee");
  ASSERT_NE(a, ObjectTable::kNone);
  ASSERT_NE(b, ObjectTable::kNone);
  EXPECT_EQ(table.Find("a"), a);
  EXPECT_EQ(table.Find("bee"), b);
  EXPECT_EQ(table.key(b), "bee");
  EXPECT_EQ(table.at(a).flags, kEntryUsed);
  EXPECT_EQ(table.size(), 2u);
  table.at(a).size = 77;
  table.Erase(a);
  EXPECT_EQ(table.Find("a"), ObjectTable::kNone);
  EXPECT_EQ(table.size(), 1u);
  // The erased entry is reused, zeroed.
  const uint32_t c = table.Insert("c");
  EXPECT_EQ(c, a);
  EXPECT_EQ(table.at(c).size, 0u);
  EXPECT_EQ(table.key(c), "c");
}

TEST(ObjectTableTest, RefusesBadKeys) {
  ObjectTable table;
  EXPECT_EQ(table.Insert(""), ObjectTable::kNone);
  EXPECT_EQ(table.Insert(std::string(ObjectTable::kMaxKeyBytes + 1, 'x')), ObjectTable::kNone);
  const std::string longest(ObjectTable::kMaxKeyBytes, 'y');
  const uint32_t i = table.Insert(longest);
  ASSERT_NE(i, ObjectTable::kNone);
  EXPECT_EQ(table.key(i), longest);
}

TEST(ObjectTableTest, ManyKeysSurviveChurnAndCompaction) {
  ObjectTable table;
  constexpr int kKeys = 20000;
  auto key = [](int i) { return absl::StrCat("key-", i, "-", std::string(i % 200, 'p')); };
  for (int i = 0; i < kKeys; ++i) {
    const uint32_t idx = table.Insert(key(i));
    ASSERT_NE(idx, ObjectTable::kNone);
    table.at(idx).size = i;
  }
  const size_t full = table.MemoryBytes();
  // Erase 90%: key garbage gets compacted away, and the remaining keys still resolve.
  for (int i = 0; i < kKeys; ++i) {
    if (i % 10 != 0) table.Erase(table.Find(key(i)));
  }
  EXPECT_EQ(table.size(), static_cast<size_t>(kKeys / 10));
  for (int i = 0; i < kKeys; ++i) {
    const uint32_t idx = table.Find(key(i));
    if (i % 10 != 0) {
      ASSERT_EQ(idx, ObjectTable::kNone) << i;
    } else {
      ASSERT_NE(idx, ObjectTable::kNone) << i;
      EXPECT_EQ(table.at(idx).size, static_cast<uint64_t>(i));
      EXPECT_EQ(table.key(idx), key(i));
    }
  }
  EXPECT_LT(table.MemoryBytes(), full);
  // Re-inserting reuses freed entries.
  for (int i = 1; i < 1000; ++i) {
    if (i % 10 != 0) {
      ASSERT_NE(table.Insert(key(i)), ObjectTable::kNone);
    }
  }
  EXPECT_LE(table.index_limit(), static_cast<uint32_t>(kKeys));
}

// Keys too long to share a chunk: repacking them in the same chunks after erasures keeps every
// survivor intact, and the chunks past them are freed.
TEST(ObjectTableTest, LongKeysSurviveCompactionInPlace) {
  ObjectTable table;
  auto key = [](int i) {
    return absl::StrCat(i, "-", std::string(33 * 1024 + i * 7, 'a' + i % 26));
  };
  constexpr int kKeys = 40;
  for (int i = 0; i < kKeys; ++i) ASSERT_NE(table.Insert(key(i)), ObjectTable::kNone) << i;
  const size_t full = table.MemoryBytes();
  for (int i = 0; i < kKeys; ++i) {
    if (i % 4 != 0) table.Erase(table.Find(key(i)));
  }
  for (int i = 0; i < kKeys; ++i) {
    const uint32_t idx = table.Find(key(i));
    if (i % 4 != 0) {
      EXPECT_EQ(idx, ObjectTable::kNone) << i;
    } else {
      ASSERT_NE(idx, ObjectTable::kNone) << i;
      EXPECT_EQ(table.key(idx), key(i));
    }
  }
  EXPECT_LT(table.MemoryBytes(), full);
  for (int i = kKeys; i < 2 * kKeys; ++i) ASSERT_NE(table.Insert(key(i)), ObjectTable::kNone);
  for (int i = 0; i < 2 * kKeys; ++i) {
    if (i < kKeys && i % 4 != 0) continue;
    const uint32_t idx = table.Find(key(i));
    ASSERT_NE(idx, ObjectTable::kNone) << i;
    EXPECT_EQ(table.key(idx), key(i));
  }
}

// Churn with fresh keys and almost nothing live (the master under put/get/remove of new keys):
// the table's memory must stay at its warm-up size however many keys pass through, not grow
// with the key garbage up to a fixed per-table minimum before compacting (with the master's 64
// shards that minimum was 64 x 256 KiB of RSS reached only after millions of short keys).
TEST(ObjectTableTest, MemoryStaysBoundedUnderChurnOfFreshKeys) {
  ObjectTable table;
  constexpr int kLive = 64;
  constexpr int kCycles = 1'000'000;
  std::vector<uint32_t> live;
  size_t warm = 0;
  size_t peak = 0;
  for (int i = 0; i < kCycles; ++i) {
    const uint32_t idx = table.Insert(absl::StrCat("churn-key-", i));
    ASSERT_NE(idx, ObjectTable::kNone) << i;
    live.push_back(idx);
    if (live.size() == kLive) {
      for (uint32_t gone : live) table.Erase(gone);
      live.clear();
    }
    if (i == kCycles / 10) warm = table.MemoryBytes();
    peak = std::max(peak, table.MemoryBytes());
  }
  EXPECT_EQ(table.size(), live.size());
  EXPECT_LE(table.index_limit(), static_cast<uint32_t>(kLive));
  // One chunk of entries, at most two arena chunks (a key may straddle into a second) and a
  // small hash index: no more than at warm-up, and far below what a million keys would take.
  EXPECT_LE(peak, warm);
  EXPECT_LE(peak, 1024 * sizeof(ObjectEntry) + 2 * 64 * 1024 + 4096);
}

}  // namespace
}  // namespace yuebing::master
