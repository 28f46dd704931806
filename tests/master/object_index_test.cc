#include "master/object_index.h"

#include <gtest/gtest.h>

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

}  // namespace
}  // namespace yuebing::master
