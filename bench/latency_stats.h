// Latency recording for benchmarks: a log-linear histogram with bounded memory (about 18 KiB),
// exact count/min/max/mean and percentiles within 1/128 relative error. Recorders merge exactly,
// so each thread records into its own and the results are merged at the end.
// Thread safety: none; one recorder per thread.
#pragma once

#include <cstdint>
#include <vector>

namespace yuebing::bench {

struct LatencySummary {
  uint64_t count = 0;
  double min_us = 0;
  double mean_us = 0;
  double p50_us = 0;
  double p90_us = 0;
  double p99_us = 0;
  double max_us = 0;
};

class LatencyRecorder {
 public:
  LatencyRecorder();

  // Records one sample in nanoseconds. Values above ~18 minutes land in the last bucket (max
  // stays exact).
  void Record(uint64_t nanos);
  void Merge(const LatencyRecorder& other);

  uint64_t count() const { return count_; }
  // Value (ns) at quantile q in [0, 1]: the midpoint of the bucket holding it, clamped to the
  // exact min and max. 0 when nothing was recorded.
  double QuantileNanos(double q) const;
  // All figures in microseconds; zeros when nothing was recorded.
  LatencySummary Summarize() const;

 private:
  std::vector<uint64_t> buckets_;
  uint64_t count_ = 0;
  uint64_t min_ = 0;
  uint64_t max_ = 0;
  long double sum_ = 0;
};

}  // namespace yuebing::bench
