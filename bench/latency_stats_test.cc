#include "latency_stats.h"

#include <algorithm>
#include <cmath>
#include <random>

#include "gtest/gtest.h"

namespace yuebing::bench {
namespace {

TEST(LatencyRecorderTest, EmptyIsAllZero) {
  LatencyRecorder r;
  LatencySummary s = r.Summarize();
  EXPECT_EQ(s.count, 0u);
  EXPECT_EQ(s.p50_us, 0);
  EXPECT_EQ(s.max_us, 0);
}

TEST(LatencyRecorderTest, SmallValuesAreExact) {
  LatencyRecorder r;
  for (uint64_t v = 1; v <= 100; ++v) r.Record(v);
  EXPECT_EQ(r.QuantileNanos(0.5), 50);
  EXPECT_EQ(r.QuantileNanos(0.9), 90);
  EXPECT_EQ(r.QuantileNanos(0.99), 99);
  EXPECT_EQ(r.QuantileNanos(1.0), 100);
  EXPECT_EQ(r.QuantileNanos(0.0), 1);
}

TEST(LatencyRecorderTest, LargeValuesWithinRelativeError) {
  std::mt19937_64 rng(42);
  std::uniform_int_distribution<uint64_t> dist(1'000, 50'000'000);
  std::vector<uint64_t> values(20000);
  LatencyRecorder r;
  for (auto& v : values) {
    v = dist(rng);
    r.Record(v);
  }
  std::sort(values.begin(), values.end());
  for (double q : {0.5, 0.9, 0.99}) {
    const double exact = static_cast<double>(values[static_cast<size_t>(q * values.size()) - 1]);
    EXPECT_NEAR(r.QuantileNanos(q), exact, exact / 100) << q;
  }
  EXPECT_EQ(r.Summarize().max_us, static_cast<double>(values.back()) / 1e3);
}

TEST(LatencyRecorderTest, MergeEqualsRecordingTogether) {
  LatencyRecorder a, b, all;
  for (uint64_t v = 1; v < 100000; v += 7) {
    (v % 2 ? a : b).Record(v * 13);
    all.Record(v * 13);
  }
  a.Merge(b);
  EXPECT_EQ(a.count(), all.count());
  for (double q : {0.1, 0.5, 0.9, 0.99, 1.0}) EXPECT_EQ(a.QuantileNanos(q), all.QuantileNanos(q));
  EXPECT_DOUBLE_EQ(a.Summarize().mean_us, all.Summarize().mean_us);
}

TEST(LatencyRecorderTest, HugeValuesClampToLastBucketButMaxIsExact) {
  LatencyRecorder r;
  r.Record(uint64_t{1} << 62);
  EXPECT_EQ(r.QuantileNanos(0.5), std::ldexp(1.0, 62));
}

}  // namespace
}  // namespace yuebing::bench
