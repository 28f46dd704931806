// yuebing-bench replay: replays a KV-cache prefix trace (one JSON object per line with `hash_ids`,
// each id one 512-token block) against a running cluster the way SGLang's HiCache L3 uses it:
// for each request, a batched Exist on its blocks (the hit is the longest leading run of hits),
// a Get of the hit prefix (every byte checked: a block's value is derived from its hash id), and
// a batched Put of the rest. Reports the hit rate, bytes moved, throughput, and the hit rate of an
// ideal LRU (replay_lru.h) of the same capacity over the same requests.
#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <string>
#include <vector>

#include "absl/flags/declare.h"
#include "absl/flags/flag.h"
#include "absl/strings/str_cat.h"
#include "bench_flags.h"
#include "nlohmann/json.hpp"
#include "replay_lru.h"
#include "report.h"
#include "subcommands.h"
#include "yuebing/common/config.h"
#include "yuebing/common/status.h"
#include "yuebing/store/client.h"

ABSL_DECLARE_FLAG(std::string, master_server_address);  // store_bench.cc
ABSL_FLAG(std::string, trace, "bench/traces/conversation_trace.jsonl",
          "replay: trace file (JSON lines with hash_ids)");
ABSL_FLAG(std::string, block_bytes, "64KB", "replay: bytes of KV per 512-token block");
ABSL_FLAG(int64_t, max_requests, 0, "replay: requests to replay (0: the whole trace)");
ABSL_FLAG(std::string, capacity_bytes, "0",
          "replay: cluster capacity for the ideal-LRU model (e.g. the master's "
          "yuebing_master_capacity_bytes); required");
ABSL_FLAG(std::string, key_prefix, "replay-", "replay: prefix of the store keys (+ hash id)");

namespace yuebing::bench {
namespace {

using Clock = std::chrono::steady_clock;
constexpr uint64_t kMaxTraceLines = 10'000'000;
constexpr size_t kMaxBlocksPerRequest = 1 << 16;

// The value of block `id`: a deterministic function of the id alone.
void FillBlock(uint64_t id, char* out, size_t size) {
  uint64_t x = (id + 1) * 0x9E3779B97F4A7C15ull | 1;
  for (size_t i = 0; i < size; i += 8) {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    std::memcpy(out + i, &x, std::min<size_t>(8, size - i));
  }
}

absl::StatusOr<std::vector<std::vector<uint64_t>>> LoadTrace(const std::string& path,
                                                             uint64_t max_requests) {
  std::ifstream in(path);
  if (!in) return absl::NotFoundError(absl::StrCat("cannot open trace ", path));
  std::vector<std::vector<uint64_t>> requests;
  std::string line;
  uint64_t line_no = 0;
  while (std::getline(in, line) && line_no < kMaxTraceLines) {
    ++line_no;
    if (line.empty()) continue;
    nlohmann::json row = nlohmann::json::parse(line, nullptr, /*allow_exceptions=*/false);
    if (row.is_discarded() || !row.contains("hash_ids") || !row["hash_ids"].is_array()) {
      return absl::InvalidArgumentError(absl::StrCat(path, ":", line_no, ": no hash_ids array"));
    }
    std::vector<uint64_t> ids;
    for (const auto& id : row["hash_ids"]) {
      if (!id.is_number_unsigned() || ids.size() >= kMaxBlocksPerRequest) {
        return absl::InvalidArgumentError(absl::StrCat(path, ":", line_no, ": bad hash_ids"));
      }
      ids.push_back(id.get<uint64_t>());
    }
    requests.push_back(std::move(ids));
    if (max_requests > 0 && requests.size() >= max_requests) break;
  }
  return requests;
}

struct ReplayTotals {
  uint64_t requests = 0;
  uint64_t blocks = 0;
  uint64_t hits = 0;
  uint64_t ideal_hits = 0;
  uint64_t bytes_read = 0;
  uint64_t bytes_written = 0;
  uint64_t exist_failures = 0;  // Exist calls that failed (counted as misses)
  uint64_t get_failures = 0;    // blocks that existed but could not be read (e.g. evicted since)
  uint64_t put_failures = 0;
  uint64_t mismatches = 0;
};

// Bounded progress: at most ~100 updates on stderr.
void ShowProgress(uint64_t done, uint64_t total, const ReplayTotals& t) {
  constexpr int kWidth = 40;
  const int filled = static_cast<int>(kWidth * done / std::max<uint64_t>(1, total));
  std::string bar(filled, '#');
  bar.append(kWidth - filled, '.');
  std::fprintf(stderr, "\rreplay [%s] %3d%% %llu/%llu requests, hit rate %.3f (ideal LRU %.3f)",
               bar.c_str(), static_cast<int>(100 * done / std::max<uint64_t>(1, total)),
               static_cast<unsigned long long>(done), static_cast<unsigned long long>(total),
               t.blocks ? double(t.hits) / t.blocks : 0.0,
               t.blocks ? double(t.ideal_hits) / t.blocks : 0.0);
  if (done == total) std::fprintf(stderr, "\n");
}

// One request against the store: Exist, Get of the hit prefix (checked), Put of the rest.
void ReplayRequest(store::Client& client, const std::string& key_prefix,
                   const std::vector<uint64_t>& ids, uint64_t block_bytes,
                   std::vector<std::string>& buffers, std::string& expected, ReplayTotals& t) {
  std::vector<std::string> keys;
  keys.reserve(ids.size());
  for (uint64_t id : ids) keys.push_back(absl::StrCat(key_prefix, id));
  size_t leading = 0;
  std::vector<absl::StatusOr<bool>> exist = client.BatchIsExist(keys);
  while (leading < exist.size() && exist[leading].ok() && *exist[leading]) ++leading;
  if (leading < exist.size() && !exist[leading].ok()) t.exist_failures++;
  size_t hits = 0;
  if (leading > 0) {
    std::vector<std::string> get_keys(keys.begin(), keys.begin() + leading);
    if (buffers.size() < leading) buffers.resize(leading, std::string(block_bytes, '\0'));
    std::vector<store::Client::Buffer> dests;
    for (size_t i = 0; i < leading; ++i) dests.push_back({buffers[i].data(), block_bytes});
    std::vector<absl::StatusOr<uint64_t>> got = client.BatchGetInto(get_keys, dests);
    while (hits < got.size() && got[hits].ok() && *got[hits] == block_bytes) {
      FillBlock(ids[hits], expected.data(), block_bytes);
      if (std::memcmp(buffers[hits].data(), expected.data(), block_bytes) != 0) {
        t.mismatches++;
        break;
      }
      t.bytes_read += block_bytes;
      ++hits;
    }
    if (hits < leading) t.get_failures += leading - hits;
  }
  t.hits += hits;
  if (hits == ids.size()) return;
  std::vector<std::string> put_keys(keys.begin() + hits, keys.end());
  std::vector<std::string> values(put_keys.size(), std::string(block_bytes, '\0'));
  std::vector<absl::string_view> views;
  for (size_t i = 0; i < values.size(); ++i) {
    FillBlock(ids[hits + i], values[i].data(), block_bytes);
    views.push_back(values[i]);
  }
  std::vector<absl::Status> put = client.BatchPut(put_keys, views);
  for (const absl::Status& s : put) {
    if (s.ok()) {
      t.bytes_written += block_bytes;
    } else {
      t.put_failures++;
    }
  }
}

}  // namespace

absl::Status RunReplayBench() {
  YB_ASSIGN_OR_RETURN(bool json, ReportJson());
  YB_ASSIGN_OR_RETURN(uint64_t block_bytes, ParseSize(absl::GetFlag(FLAGS_block_bytes)));
  YB_ASSIGN_OR_RETURN(uint64_t capacity_bytes, ParseSize(absl::GetFlag(FLAGS_capacity_bytes)));
  if (block_bytes == 0) return absl::InvalidArgumentError("--block_bytes must be > 0");
  if (capacity_bytes == 0) {
    return absl::InvalidArgumentError(
        "--capacity_bytes is required (the cluster's yuebing_master_capacity_bytes)");
  }
  const int64_t max_requests = std::max<int64_t>(0, absl::GetFlag(FLAGS_max_requests));
  YB_ASSIGN_OR_RETURN(auto requests, LoadTrace(absl::GetFlag(FLAGS_trace), max_requests));
  store::ClientConfig config;
  config.master_server_address = absl::GetFlag(FLAGS_master_server_address);
  YB_ASSIGN_OR_RETURN(std::unique_ptr<store::Client> client, store::Client::Create(config));
  const std::string key_prefix = absl::GetFlag(FLAGS_key_prefix);
  PrefixLru ideal(capacity_bytes / block_bytes);
  ReplayTotals t;
  std::vector<std::string> buffers;
  std::string expected(block_bytes, '\0');
  const uint64_t total = requests.size();
  const uint64_t step = std::max<uint64_t>(1, total / 100);
  const auto start = Clock::now();
  for (const std::vector<uint64_t>& ids : requests) {
    ReplayRequest(*client, key_prefix, ids, block_bytes, buffers, expected, t);
    t.ideal_hits += ideal.Access(ids);
    t.blocks += ids.size();
    t.requests++;
    if (t.requests % step == 0 || t.requests == total) ShowProgress(t.requests, total, t);
  }
  const double seconds = std::chrono::duration<double>(Clock::now() - start).count();
  const double hit_rate = t.blocks ? double(t.hits) / t.blocks : 0.0;
  const double ideal_rate = t.blocks ? double(t.ideal_hits) / t.blocks : 0.0;
  Report report;
  report.Add("test", "replay");
  report.Add("requests", t.requests);
  report.Add("block_bytes", block_bytes);
  report.Add("capacity_bytes", capacity_bytes);
  report.Add("capacity_blocks", ideal.capacity());
  report.Add("blocks_asked", t.blocks);
  report.Add("blocks_hit", t.hits);
  report.Add("hit_rate", hit_rate);
  report.Add("ideal_lru_hit_rate", ideal_rate);
  report.Add("ratio_to_ideal", ideal_rate > 0 ? hit_rate / ideal_rate : 0.0);
  report.Add("bytes_read", t.bytes_read);
  report.Add("bytes_written", t.bytes_written);
  report.Add("seconds", seconds);
  report.Add("requests_per_s", seconds > 0 ? t.requests / seconds : 0.0);
  report.Add("gbps", seconds > 0 ? (t.bytes_read + t.bytes_written) / seconds / 1e9 : 0.0);
  report.Add("exist_failures", t.exist_failures);
  report.Add("get_failures", t.get_failures);
  report.Add("put_failures", t.put_failures);
  report.Add("mismatches", t.mismatches);
  report.Print(json);
  if (t.mismatches > 0) {
    return absl::DataLossError(absl::StrCat(t.mismatches, " gets returned wrong bytes"));
  }
  return absl::OkStatus();
}

}  // namespace yuebing::bench
