#include "latency_stats.h"

#include <algorithm>
#include <bit>
#include <cassert>

namespace yuebing::bench {
namespace {

// Values below 2^kSubBits are exact; above, each power of two is split into 2^(kSubBits-1)
// buckets, so a bucket is at most 1/64 of its lower bound wide (midpoint error <= 1/128).
constexpr int kSubBits = 7;
constexpr uint64_t kLinear = uint64_t{1} << kSubBits;      // 128 exact buckets
constexpr uint64_t kHalf = uint64_t{1} << (kSubBits - 1);  // 64 buckets per power of two
constexpr int kMaxShift = 34;                              // top bucket starts near 2^40 ns
constexpr size_t kBuckets = kLinear + kMaxShift * kHalf;

size_t BucketOf(uint64_t v) {
  if (v < kLinear) return static_cast<size_t>(v);
  int shift = std::bit_width(v) - kSubBits;  // v >> shift is in [64, 128)
  if (shift > kMaxShift) return kBuckets - 1;
  return static_cast<size_t>(kLinear + (shift - 1) * kHalf + ((v >> shift) - kHalf));
}

// Midpoint of bucket `index`, in ns.
double BucketMid(size_t index) {
  if (index < kLinear) return static_cast<double>(index);
  const uint64_t rest = index - kLinear;
  const int shift = static_cast<int>(rest / kHalf) + 1;
  const uint64_t low = (kHalf + rest % kHalf) << shift;
  return static_cast<double>(low) + static_cast<double>(uint64_t{1} << shift) / 2.0;
}

}  // namespace

LatencyRecorder::LatencyRecorder() : buckets_(kBuckets, 0) {}

void LatencyRecorder::Record(uint64_t nanos) {
  ++buckets_[BucketOf(nanos)];
  min_ = count_ == 0 ? nanos : std::min(min_, nanos);
  max_ = std::max(max_, nanos);
  sum_ += nanos;
  ++count_;
}

void LatencyRecorder::Merge(const LatencyRecorder& other) {
  assert(buckets_.size() == other.buckets_.size());
  if (other.count_ == 0) return;
  for (size_t i = 0; i < buckets_.size(); ++i) buckets_[i] += other.buckets_[i];
  min_ = count_ == 0 ? other.min_ : std::min(min_, other.min_);
  max_ = std::max(max_, other.max_);
  sum_ += other.sum_;
  count_ += other.count_;
}

double LatencyRecorder::QuantileNanos(double q) const {
  if (count_ == 0) return 0;
  q = std::clamp(q, 0.0, 1.0);
  // The rank (1-based) of the sample at quantile q, nearest-rank definition.
  uint64_t rank = static_cast<uint64_t>(q * static_cast<double>(count_) + 0.999999999);
  rank = std::clamp<uint64_t>(rank, 1, count_);
  uint64_t seen = 0;
  for (size_t i = 0; i < buckets_.size(); ++i) {
    seen += buckets_[i];
    if (seen >= rank) {
      return std::clamp(BucketMid(i), static_cast<double>(min_), static_cast<double>(max_));
    }
  }
  return static_cast<double>(max_);
}

LatencySummary LatencyRecorder::Summarize() const {
  LatencySummary s;
  if (count_ == 0) return s;
  s.count = count_;
  s.min_us = static_cast<double>(min_) / 1e3;
  s.mean_us = static_cast<double>(sum_ / count_) / 1e3;
  s.p50_us = QuantileNanos(0.50) / 1e3;
  s.p90_us = QuantileNanos(0.90) / 1e3;
  s.p99_us = QuantileNanos(0.99) / 1e3;
  s.max_us = static_cast<double>(max_) / 1e3;
  return s;
}

}  // namespace yuebing::bench
