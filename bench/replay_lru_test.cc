#include "replay_lru.h"

#include <vector>

#include "gtest/gtest.h"

namespace yuebing::bench {
namespace {

TEST(PrefixLruTest, FirstAccessMissesThenHits) {
  PrefixLru lru(8);
  EXPECT_EQ(lru.Access(std::vector<uint64_t>{1, 2, 3}), 0u);
  EXPECT_EQ(lru.Access(std::vector<uint64_t>{1, 2, 3}), 3u);
  EXPECT_EQ(lru.size(), 3u);
}

TEST(PrefixLruTest, OnlyTheLeadingRunCounts) {
  PrefixLru lru(8);
  lru.Access(std::vector<uint64_t>{1, 2, 3});
  // 4 is missing, so 3 after it does not count as a hit.
  EXPECT_EQ(lru.Access(std::vector<uint64_t>{1, 4, 3}), 1u);
  EXPECT_EQ(lru.Access(std::vector<uint64_t>{5, 1, 2}), 0u);
}

TEST(PrefixLruTest, EvictsLeastRecentlyUsed) {
  PrefixLru lru(3);
  lru.Access(std::vector<uint64_t>{1, 2, 3});
  lru.Access(std::vector<uint64_t>{1});  // order now 1, 3, 2 (2 is oldest)
  lru.Access(std::vector<uint64_t>{4});  // evicts 2
  EXPECT_TRUE(lru.Contains(1));
  EXPECT_FALSE(lru.Contains(2));
  EXPECT_TRUE(lru.Contains(3));
  EXPECT_TRUE(lru.Contains(4));
  EXPECT_EQ(lru.size(), 3u);
}

TEST(PrefixLruTest, RequestLargerThanCapacityKeepsItsTail) {
  PrefixLru lru(2);
  EXPECT_EQ(lru.Access(std::vector<uint64_t>{1, 2, 3, 4}), 0u);
  EXPECT_FALSE(lru.Contains(1));
  EXPECT_TRUE(lru.Contains(3));
  EXPECT_TRUE(lru.Contains(4));
  EXPECT_EQ(lru.Access(std::vector<uint64_t>{1, 2, 3, 4}), 0u);
}

TEST(PrefixLruTest, ZeroCapacityNeverHits) {
  PrefixLru lru(0);
  lru.Access(std::vector<uint64_t>{1, 2});
  EXPECT_EQ(lru.Access(std::vector<uint64_t>{1, 2}), 0u);
  EXPECT_EQ(lru.size(), 0u);
}

TEST(PrefixLruTest, SharedPrefixAcrossRequests) {
  PrefixLru lru(100);
  lru.Access(std::vector<uint64_t>{0, 1, 2});
  EXPECT_EQ(lru.Access(std::vector<uint64_t>{0, 1, 7, 8}), 2u);
  EXPECT_EQ(lru.Access(std::vector<uint64_t>{0, 1, 7, 9}), 3u);
}

}  // namespace
}  // namespace yuebing::bench
