// The object checksum rule: XXH3-64 over the bytes (pieces concatenated), 0 reserved for "none".
#include "yuebing/common/checksum.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace yuebing {
namespace {

TEST(ChecksumTest, KnownVectors) {
  // XXH3-64 with seed 0; the empty input's value is the one published with xxHash.
  EXPECT_EQ(ObjectChecksum(""), 0x2D06800538D394C2ull);
  EXPECT_EQ(ObjectChecksum("yuebing"), 0x94B89770AE4BC1DFull);
}

TEST(ChecksumTest, PiecesAreHashedAsTheirConcatenation) {
  const std::vector<absl::string_view> pieces = {"yue", "", "bing"};
  EXPECT_EQ(ObjectChecksum(pieces), ObjectChecksum("yuebing"));
  const std::string big(1 << 20, 'x');
  EXPECT_EQ(
      ObjectChecksum({absl::string_view(big).substr(0, 777), absl::string_view(big).substr(777)}),
      ObjectChecksum(big));
}

TEST(ChecksumTest, NoChecksumIsZeroAndNeverComputed) {
  EXPECT_EQ(kNoChecksum, 0u);
  for (int i = 0; i < 10000; ++i) EXPECT_NE(ObjectChecksum(std::to_string(i)), kNoChecksum);
}

TEST(ChecksumTest, MatchesAcceptsTheRightValueOrNone) {
  const uint64_t recorded = ObjectChecksum("value");
  EXPECT_TRUE(ChecksumMatches(recorded, "value"));
  EXPECT_TRUE(ChecksumMatches(recorded, std::vector<absl::string_view>{"va", "lue"}));
  EXPECT_FALSE(ChecksumMatches(recorded, "valuE"));
  EXPECT_FALSE(ChecksumMatches(recorded + 1, "value"));
  // Nothing recorded: any bytes pass (a writer with checksums off).
  EXPECT_TRUE(ChecksumMatches(kNoChecksum, "anything"));
  EXPECT_TRUE(ChecksumMatches(kNoChecksum, ""));
}

}  // namespace
}  // namespace yuebing
