// yb_master_footprint: metadata cost per object and batched Exist throughput of the master.
//
// Inserts N objects (default 1,000,000) with K-byte keys (default 32) through PutStart + PutEnd,
// measures the
// growth of the process's resident set (and its peak), and prints bytes per object; then times
// BatchExist in batches of 256 (as SGLang sends them) over at most 4M of the keys, spread evenly
// over all of them, and prints keys/s. Exits 1 when an object costs more than 128 bytes beyond
// its key.
//
// Usage: yb_master_footprint [objects [key_bytes]]   (key_bytes 8..255)
#include <unistd.h>

#include <chrono>
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "yuebing/master/master_service.h"

namespace {

using yuebing::master::MasterOptions;
using yuebing::master::MasterService;

constexpr size_t kBatch = 256;

size_t ResidentBytes() {
  FILE* f = std::fopen("/proc/self/statm", "r");
  if (f == nullptr) return 0;
  unsigned long pages = 0;
  unsigned long resident = 0;
  const int n = std::fscanf(f, "%lu %lu", &pages, &resident);
  std::fclose(f);
  return n == 2 ? resident * static_cast<size_t>(sysconf(_SC_PAGESIZE)) : 0;
}

std::string KeyOf(uint64_t i, size_t key_bytes) {
  char buf[256];
  std::snprintf(buf, sizeof(buf), "kv-%0*" PRIu64, static_cast<int>(key_bytes - 3), i);
  return std::string(buf, key_bytes);
}

// The process's peak resident set (VmHWM), 0 when unknown.
size_t PeakResidentBytes() {
  FILE* f = std::fopen("/proc/self/status", "r");
  if (f == nullptr) return 0;
  char line[256];
  size_t kib = 0;
  while (std::fgets(line, sizeof(line), f) != nullptr) {
    if (std::sscanf(line, "VmHWM: %zu kB", &kib) == 1) break;
  }
  std::fclose(f);
  return kib * 1024;
}

double Seconds(std::chrono::steady_clock::time_point since) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - since).count();
}

}  // namespace

int main(int argc, char** argv) {
  const uint64_t objects = argc > 1 ? std::strtoull(argv[1], nullptr, 10) : 1'000'000;
  const size_t key_bytes = argc > 2 ? std::strtoull(argv[2], nullptr, 10) : 32;
  if (key_bytes < 8 || key_bytes > 255) {
    std::fprintf(stderr, "key_bytes must be 8..255\n");
    return 2;
  }
  yuebing::FakeClock clock;
  MasterOptions options;
  options.eviction_high_watermark_ratio = 1.0;
  MasterService master(options, clock);
  // A large (virtual) segment: the master never touches its bytes.
  if (!master.MountSegment("client", {"host:1", 1ull << 40, 1ull << 40}).ok()) return 2;

  const size_t rss_before = ResidentBytes();
  auto start = std::chrono::steady_clock::now();
  std::string key;
  for (uint64_t i = 0; i < objects; ++i) {
    key = KeyOf(i, key_bytes);
    if (!master.PutStart("client", key, 4096, {}).ok() || !master.PutEnd("client", key, i).ok()) {
      std::fprintf(stderr, "put %" PRIu64 " failed\n", i);
      return 2;
    }
  }
  const double put_seconds = Seconds(start);
  const size_t rss_after = ResidentBytes();
  const double per_object = static_cast<double>(rss_after - rss_before) / objects;
  std::printf("objects: %" PRIu64 "\n", objects);
  std::printf("rss growth: %.1f MiB, %.1f bytes/object (key %zu bytes, %.1f beyond the key)\n",
              (rss_after - rss_before) / 1048576.0, per_object, key_bytes, per_object - key_bytes);
  std::printf("peak rss: %.1f MiB (the whole process)\n", PeakResidentBytes() / 1048576.0);
  std::printf("put (PutStart+PutEnd): %.0f objects/s\n", objects / put_seconds);

  // The keys of the timed lookups are made beforehand (at most kMaxLookups of them, so that
  // they do not outweigh the master at 50M objects).
  constexpr uint64_t kMaxLookups = 4'000'000;
  const uint64_t lookups = std::min(objects, kMaxLookups);
  const uint64_t stride = objects / lookups;
  std::vector<std::vector<std::string>> batches;
  for (uint64_t i = 0; i < lookups; i += kBatch) {
    std::vector<std::string>& batch = batches.emplace_back();
    for (uint64_t j = i; j < std::min<uint64_t>(lookups, i + kBatch); ++j) {
      batch.push_back(KeyOf(j * stride, key_bytes));
    }
  }
  start = std::chrono::steady_clock::now();
  uint64_t found = 0;
  for (const std::vector<std::string>& batch : batches) {
    for (bool exists : master.BatchExist(batch)) found += exists;
  }
  const double exist_seconds = Seconds(start);
  std::printf("BatchExist (256 keys/batch, one thread): %.0f keys/s, %.0f batches/s\n",
              lookups / exist_seconds, batches.size() / exist_seconds);
  if (found != lookups) {
    std::fprintf(stderr, "only %" PRIu64 " of %" PRIu64 " keys found\n", found, lookups);
    return 2;
  }
  if (per_object > 128.0 + key_bytes) {
    std::fprintf(stderr, "FAIL: %.1f bytes/object exceeds 128 + key bytes\n", per_object);
    return 1;
  }
  return 0;
}
