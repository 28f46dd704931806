#include "master/segment_allocator.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <map>
#include <random>
#include <vector>

namespace yuebing::master {
namespace {

TEST(SegmentAllocatorTest, AlignsBaseAndLengths) {
  SegmentAllocator alloc(/*base=*/0x1003, /*size=*/1000, /*alignment=*/64);
  // First aligned address is 0x1040 (offset 0x3d); 1000 - 0x3d = 939 -> 896 usable.
  EXPECT_EQ(alloc.capacity(), 896u);
  EXPECT_EQ(alloc.AlignedLength(1), 64u);
  EXPECT_EQ(alloc.AlignedLength(64), 64u);
  EXPECT_EQ(alloc.AlignedLength(65), 128u);
  EXPECT_FALSE(alloc.AlignedLength(UINT64_MAX).has_value());
  auto a = alloc.Allocate(1);
  auto b = alloc.Allocate(100);
  ASSERT_TRUE(a.has_value() && b.has_value());
  EXPECT_EQ((0x1003 + *a) % 64, 0u);
  EXPECT_EQ((0x1003 + *b) % 64, 0u);
  EXPECT_EQ(*b - *a, 64u);
  EXPECT_EQ(alloc.used_bytes(), 64u + 128u);
}

TEST(SegmentAllocatorTest, TooSmallForOneBlockHasNoCapacity) {
  SegmentAllocator alloc(/*base=*/1, /*size=*/64, /*alignment=*/64);
  EXPECT_EQ(alloc.capacity(), 0u);
  EXPECT_FALSE(alloc.Allocate(1).has_value());
}

TEST(SegmentAllocatorTest, ZeroLengthAndExhaustion) {
  SegmentAllocator alloc(0, 4096, 64);
  EXPECT_FALSE(alloc.Allocate(0).has_value());
  std::vector<uint64_t> offsets;
  for (int i = 0; i < 64; ++i) {
    auto off = alloc.Allocate(64);
    ASSERT_TRUE(off.has_value()) << i;
    offsets.push_back(*off);
  }
  EXPECT_FALSE(alloc.Allocate(1).has_value());
  EXPECT_EQ(alloc.free_bytes(), 0u);
  EXPECT_EQ(alloc.largest_free(), 0u);
  for (uint64_t off : offsets) ASSERT_TRUE(alloc.Free(off, 64));
  EXPECT_EQ(alloc.free_ranges(), 1u);
  EXPECT_EQ(alloc.largest_free(), 4096u);
  EXPECT_FALSE(alloc.Allocate(4097).has_value());
  EXPECT_TRUE(alloc.Allocate(4096).has_value());
}

TEST(SegmentAllocatorTest, FragmentationAndCoalescing) {
  SegmentAllocator alloc(0, 4 * 1024, 1024);
  auto a = alloc.Allocate(1024);
  auto b = alloc.Allocate(1024);
  auto c = alloc.Allocate(1024);
  auto d = alloc.Allocate(1024);
  ASSERT_TRUE(a && b && c && d);
  ASSERT_TRUE(alloc.Free(*a, 1024));
  ASSERT_TRUE(alloc.Free(*c, 1024));
  // 2 KiB free but fragmented: no 2 KiB block.
  EXPECT_EQ(alloc.free_bytes(), 2048u);
  EXPECT_EQ(alloc.free_ranges(), 2u);
  EXPECT_FALSE(alloc.Allocate(2048).has_value());
  // Freeing b merges a, b and c into one 3 KiB range.
  ASSERT_TRUE(alloc.Free(*b, 1024));
  EXPECT_EQ(alloc.free_ranges(), 1u);
  EXPECT_EQ(alloc.largest_free(), 3072u);
  auto big = alloc.Allocate(3072);
  ASSERT_TRUE(big.has_value());
  EXPECT_EQ(*big, *a);
  ASSERT_TRUE(alloc.Free(*d, 1024));
  ASSERT_TRUE(alloc.Free(*big, 3072));
  EXPECT_EQ(alloc.free_ranges(), 1u);
  EXPECT_EQ(alloc.free_bytes(), 4096u);
}

TEST(SegmentAllocatorTest, BestFitPicksTheSmallestHoleThatFits) {
  SegmentAllocator alloc(0, 10 * 64, 64);
  std::vector<uint64_t> off;
  for (int i = 0; i < 10; ++i) off.push_back(*alloc.Allocate(64));
  // Holes: [0,3 blocks) at off[0..2], [1 block) at off[5], [2 blocks) at off[7..8].
  for (int i : {0, 1, 2, 5, 7, 8}) ASSERT_TRUE(alloc.Free(off[i], 64));
  EXPECT_EQ(alloc.free_ranges(), 3u);
  EXPECT_EQ(*alloc.Allocate(64), off[5]);
  EXPECT_EQ(*alloc.Allocate(128), off[7]);
  EXPECT_EQ(*alloc.Allocate(128), off[0]);
  EXPECT_EQ(*alloc.Allocate(64), off[2]);
  EXPECT_FALSE(alloc.Allocate(64).has_value());
}

TEST(SegmentAllocatorTest, RefusesBadFrees) {
  SegmentAllocator alloc(0, 1024, 64);
  auto a = alloc.Allocate(128);
  ASSERT_TRUE(a.has_value());
  EXPECT_FALSE(alloc.Free(*a + 1, 64));      // misaligned
  EXPECT_FALSE(alloc.Free(1024, 64));        // outside
  EXPECT_FALSE(alloc.Free(960, 128));        // runs past the end
  EXPECT_FALSE(alloc.Free(*a, 0));           // empty
  EXPECT_FALSE(alloc.Free(*a + 128, 64));    // already free
  EXPECT_FALSE(alloc.Free(*a, UINT64_MAX));  // overflowing length
  EXPECT_TRUE(alloc.Free(*a, 128));
  EXPECT_FALSE(alloc.Free(*a, 128));  // double free
  EXPECT_FALSE(alloc.Free(*a, 64));   // overlaps free space
  EXPECT_EQ(alloc.free_bytes(), 1024u);
}

// Random allocations and frees against a byte-map oracle: no overlap, exact accounting, ranges
// bounded by live allocations + 1, and everything coalesces back at the end.
TEST(SegmentAllocatorTest, RandomizedAgainstOracle) {
  constexpr uint64_t kAlign = 64;
  constexpr uint64_t kSize = 64 * 1024;
  const uint32_t seed = 12345;
  std::mt19937 rng(seed);
  SegmentAllocator alloc(0x7000, kSize, kAlign);
  std::map<uint64_t, uint64_t> live;  // offset -> aligned length
  uint64_t used = 0;
  for (int step = 0; step < 20000; ++step) {
    if (live.empty() || rng() % 2 == 0) {
      const uint64_t length = 1 + rng() % 3000;
      auto off = alloc.Allocate(length);
      const uint64_t aligned = *alloc.AlignedLength(length);
      if (!off.has_value()) {
        EXPECT_LT(alloc.largest_free(), aligned) << "seed " << seed << " step " << step;
        continue;
      }
      auto next = live.lower_bound(*off);
      if (next != live.end()) {
        ASSERT_LE(*off + aligned, next->first) << "step " << step;
      }
      if (next != live.begin()) {
        auto prev = std::prev(next);
        ASSERT_LE(prev->first + prev->second, *off) << "step " << step;
      }
      ASSERT_EQ((0x7000 + *off) % kAlign, 0u);
      ASSERT_LE(*off + aligned, kSize);
      live[*off] = aligned;
      used += aligned;
    } else {
      auto it = live.begin();
      std::advance(it, rng() % live.size());
      ASSERT_TRUE(alloc.Free(it->first, it->second));
      used -= it->second;
      live.erase(it);
    }
    ASSERT_EQ(alloc.used_bytes(), used);
    ASSERT_LE(alloc.free_ranges(), live.size() + 1);
  }
  for (const auto& [off, len] : live) ASSERT_TRUE(alloc.Free(off, len));
  EXPECT_EQ(alloc.free_ranges(), 1u);
  EXPECT_EQ(alloc.free_bytes(), alloc.capacity());
}

}  // namespace
}  // namespace yuebing::master
