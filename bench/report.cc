#include "report.h"

#include <cstdio>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "nlohmann/json.hpp"

namespace yuebing::bench {

void Report::Add(std::string key, std::string value) {
  fields_.emplace_back(std::move(key), std::move(value));
}
void Report::Add(std::string key, double value) { fields_.emplace_back(std::move(key), value); }
void Report::Add(std::string key, uint64_t value) { fields_.emplace_back(std::move(key), value); }

void Report::AddLatency(const std::string& prefix, const LatencySummary& latency) {
  Add(prefix + "_count", latency.count);
  Add(prefix + "_p50_us", latency.p50_us);
  Add(prefix + "_p90_us", latency.p90_us);
  Add(prefix + "_p99_us", latency.p99_us);
  Add(prefix + "_max_us", latency.max_us);
  Add(prefix + "_mean_us", latency.mean_us);
}

void Report::Print(bool json) const {
  if (json) {
    nlohmann::ordered_json object = nlohmann::ordered_json::object();
    for (const auto& [key, value] : fields_) {
      std::visit([&](const auto& v) { object[key] = v; }, value);
    }
    std::printf("%s\n", object.dump().c_str());
  } else {
    for (const auto& [key, value] : fields_) {
      std::string text;
      if (const auto* s = std::get_if<std::string>(&value)) text = *s;
      if (const auto* d = std::get_if<double>(&value)) text = absl::StrFormat("%.3f", *d);
      if (const auto* u = std::get_if<uint64_t>(&value)) text = absl::StrCat(*u);
      std::printf("%-22s %s\n", (key + ":").c_str(), text.c_str());
    }
  }
  std::fflush(stdout);
}

}  // namespace yuebing::bench
