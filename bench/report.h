// A flat result record printed by every subcommand, as one JSON object on one line
// (--report=json, for scripts) or as aligned "key: value" lines (--report=text).
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#include "latency_stats.h"

namespace yuebing::bench {

class Report {
 public:
  void Add(std::string key, std::string value);
  void Add(std::string key, const char* value) { Add(std::move(key), std::string(value)); }
  void Add(std::string key, double value);
  void Add(std::string key, uint64_t value);
  // Adds <prefix>_count, _p50_us, _p90_us, _p99_us, _max_us, _mean_us.
  void AddLatency(const std::string& prefix, const LatencySummary& latency);

  // Writes the record to stdout and flushes.
  void Print(bool json) const;

 private:
  std::vector<std::pair<std::string, std::variant<std::string, double, uint64_t>>> fields_;
};

}  // namespace yuebing::bench
