// The object checksum rule: XXH3-64 over the bytes (pieces concatenated), 0 reserved for "none".
#include "yuebing/common/checksum.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <random>
#include <string>
#include <vector>

#include "common/xxh3_kernel.h"

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

// Every XXH3 kernel this CPU can run gives the baseline's values, whole and in pieces, at sizes
// that take each of xxHash's code paths (short inputs, one stripe block, many blocks).
TEST(ChecksumTest, EveryVectorKernelAgreesWithTheBaseline) {
  std::vector<const internal::Xxh3Kernel*> kernels = {&internal::kXxh3Baseline};
#if defined(YUEBING_XXH3_X86_KERNELS)
  if (__builtin_cpu_supports("avx2")) kernels.push_back(&internal::kXxh3Avx2);
  if (__builtin_cpu_supports("avx512f")) kernels.push_back(&internal::kXxh3Avx512);
#endif
  std::printf("kernels run here: %zu; picked: %s\n", kernels.size(),
              internal::BestXxh3Kernel().name);
  std::mt19937_64 random(7);
  std::string bytes(5 << 20, '\0');
  for (char& c : bytes) c = static_cast<char>(random());
  auto hash = [](const internal::Xxh3Kernel& kernel, absl::string_view data, size_t step) {
    internal::Xxh3State state;
    kernel.reset(&state);
    for (size_t at = 0; at < data.size(); at += step) {
      const absl::string_view piece = data.substr(at, step);
      kernel.update(&state, piece.data(), piece.size());
    }
    return kernel.digest(&state);
  };
  for (size_t size : {size_t{0}, size_t{1}, size_t{16}, size_t{17}, size_t{128}, size_t{129},
                      size_t{240}, size_t{241}, size_t{1024}, size_t{65537}, bytes.size()}) {
    const absl::string_view data = absl::string_view(bytes).substr(0, size);
    const uint64_t expected = hash(internal::kXxh3Baseline, data, std::max<size_t>(size, 1));
    for (const internal::Xxh3Kernel* kernel : kernels) {
      for (size_t step : {size_t{1} << 30, size_t{100}, size_t{256} << 10}) {
        if (step == 100 && size > 65537) continue;
        EXPECT_EQ(hash(*kernel, data, step), expected)
            << kernel->name << ", " << size << " bytes in pieces of " << step;
      }
    }
  }
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
