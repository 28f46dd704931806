// SegmentMembers: the per-segment lists of one shard's entries that unmounts walk.
#include "master/segment_members.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"

namespace yuebing::master {
namespace {

std::vector<uint32_t> Sorted(std::vector<uint32_t> v) {
  std::sort(v.begin(), v.end());
  return v;
}

class SegmentMembersTest : public ::testing::Test {
 protected:
  uint32_t Add(const std::string& key, uint32_t segment) {
    const uint32_t index = table_.Insert(key);
    table_.at(index).segment = segment;
    table_.at(index).replicas = 1;
    members_.Link(table_, index);
    return index;
  }

  ObjectTable table_;
  SegmentMembers members_;
};

TEST_F(SegmentMembersTest, ListsFollowLinksAndUnlinksInAnyOrder) {
  std::vector<uint32_t> on_one;
  std::vector<uint32_t> on_two;
  for (int i = 0; i < 10; ++i) {
    on_one.push_back(Add(absl::StrCat("one-", i), 1));
    on_two.push_back(Add(absl::StrCat("two-", i), 2));
  }
  EXPECT_EQ(Sorted(members_.Some(table_, 1, 100)), Sorted(on_one));
  EXPECT_EQ(Sorted(members_.Some(table_, 2, 100)), Sorted(on_two));
  EXPECT_TRUE(members_.Some(table_, 3, 100).empty());
  EXPECT_EQ(members_.Some(table_, 1, 4).size(), 4u);

  // Head, middle and tail of the list go.
  for (size_t k : {size_t{9}, size_t{5}, size_t{0}}) {
    members_.Unlink(table_, on_one[k]);
    on_one.erase(on_one.begin() + static_cast<long>(k));
    EXPECT_EQ(Sorted(members_.Some(table_, 1, 100)), Sorted(on_one));
  }
  for (uint32_t i : on_one) members_.Unlink(table_, i);
  EXPECT_TRUE(members_.Some(table_, 1, 100).empty());
  EXPECT_EQ(members_.Count(table_, 2), 10u);
  // A list emptied and filled again.
  const uint32_t again = Add("again", 1);
  EXPECT_EQ(members_.Some(table_, 1, 100), std::vector<uint32_t>{again});
}

TEST_F(SegmentMembersTest, ExtraReplicasAreListedOncePerSegment) {
  const uint32_t a = Add("a", 1);
  const uint32_t b = Add("b", 2);
  members_.AddExtra(2, a);  // a: first replica on 1, another on 2
  members_.AddExtra(3, a);
  members_.AddExtra(3, b);
  EXPECT_EQ(Sorted(members_.Some(table_, 2, 100)), Sorted({a, b}));
  EXPECT_EQ(Sorted(members_.Some(table_, 3, 100)), Sorted({a, b}));
  EXPECT_EQ(members_.Some(table_, 1, 100), std::vector<uint32_t>{a});
  members_.RemoveExtra(3, a);
  EXPECT_EQ(members_.Some(table_, 3, 100), std::vector<uint32_t>{b});
  members_.RemoveExtra(3, b);
  members_.RemoveExtra(3, b);  // twice: no effect
  EXPECT_TRUE(members_.Some(table_, 3, 100).empty());
}

}  // namespace
}  // namespace yuebing::master
