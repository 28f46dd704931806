// yb_master_unmount_latency: what a segment's unmount (or its owner's expiry) costs the puts of
// other clients, and whether it costs what the segment holds rather than what the master holds.
//
// Mounts segment A (client "a") and fills it with N objects (default 1,000,000; 32-byte keys),
// plus M objects (default N) on segment C (client "c") that stay; then one thread puts and
// removes objects of client "b" on segment B in a loop, recording each put's latency
// (PutStart + PutEnd), while the main thread unmounts A (mode "unmount") or lets client "a" miss
// its pings and runs Tick (mode "expire"). Prints how long the unmount took, the put latency
// before and during it (p50, p99, max) and their ratio; then checks that none of A's objects and
// all of C's are left. Exits 1 when a check fails, 2 on a failed call; latencies are printed,
// never judged (this machine's scheduling decides them).
//
// Mode "evict" measures eviction instead: one segment that holds `objects` objects, 3x as many
// puts of fresh keys into it (each eviction pass, run by the put that finds no room, frees 5% of
// the objects by the master's defaults), the latency of the puts after the first `objects`.
//
// Usage: yb_master_unmount_latency [objects [mode [others]]]   (mode: unmount | expire | evict)
#include <atomic>
#include <chrono>
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>

#include "latency_stats.h"
#include "yuebing/common/clock.h"
#include "yuebing/master/master_service.h"

namespace {

using yuebing::FakeClock;
using yuebing::bench::LatencyRecorder;
using yuebing::bench::LatencySummary;
using yuebing::master::MasterOptions;
using yuebing::master::MasterService;
using SteadyClock = std::chrono::steady_clock;

std::string KeyOf(const char* prefix, uint64_t i) {
  char buf[64];
  std::snprintf(buf, sizeof(buf), "%s-%029" PRIu64, prefix, i);
  return buf;
}

bool Fill(MasterService& master, const char* client, const char* prefix, uint64_t n) {
  yuebing::master::ReplicateConfig config;
  config.preferred_segment = std::string("host-") + client + ":1";
  for (uint64_t i = 0; i < n; ++i) {
    const std::string key = KeyOf(prefix, i);
    if (!master.PutStart(client, key, 4096, config).ok() || !master.PutEnd(client, key, i).ok()) {
      std::fprintf(stderr, "put %s %" PRIu64 " failed\n", prefix, i);
      return false;
    }
  }
  return true;
}

void PrintRow(const char* phase, const LatencySummary& s) {
  std::printf("put latency %-16s n=%-8" PRIu64 " p50 %8.1f us  p99 %8.1f us  max %9.1f us\n", phase,
              s.count, s.p50_us, s.p99_us, s.max_us);
}

int RunEviction(uint64_t objects) {
  FakeClock clock;
  MasterOptions options;  // the default watermark and eviction ratio
  MasterService master(options, clock);
  if (!master.MountSegment("a", {"host-a:1", 1ull << 40, objects * 4096}).ok()) return 2;
  LatencyRecorder recorder;
  const auto start = SteadyClock::now();
  for (uint64_t i = 0; i < 3 * objects; ++i) {
    const std::string key = KeyOf("a", i);
    const auto t0 = SteadyClock::now();
    if (!master.PutStart("a", key, 4096, {}).ok() || !master.PutEnd("a", key, i).ok()) {
      std::fprintf(stderr, "put %" PRIu64 " failed\n", i);
      return 2;
    }
    if (i >= objects) {
      recorder.Record(static_cast<uint64_t>(
          std::chrono::duration_cast<std::chrono::nanoseconds>(SteadyClock::now() - t0).count()));
    }
  }
  const double seconds = std::chrono::duration<double>(SteadyClock::now() - start).count();
  const yuebing::master::MasterStats stats = master.Stats();
  std::printf("segment of %" PRIu64 " objects, %" PRIu64 " puts in %.1f s: %" PRIu64
              " eviction passes, %" PRIu64 " objects evicted, %" PRIu64 " left\n",
              objects, 3 * objects, seconds, stats.evictions, stats.evicted_objects, stats.objects);
  PrintRow("with eviction", recorder.Summarize());
  // The newest objects must have survived: eviction takes the least recently used.
  uint64_t newest_left = 0;
  for (uint64_t i = 3 * objects - 1000; i < 3 * objects; ++i)
    newest_left += master.Exist(KeyOf("a", i));
  if (stats.evicted_objects < 2 * objects || newest_left != 1000) {
    std::fprintf(stderr, "FAIL: %" PRIu64 " evicted, %" PRIu64 " of the newest 1000 left\n",
                 stats.evicted_objects, newest_left);
    return 1;
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  const uint64_t objects = argc > 1 ? std::strtoull(argv[1], nullptr, 10) : 1'000'000;
  const std::string mode = argc > 2 ? argv[2] : "unmount";
  const uint64_t others = argc > 3 ? std::strtoull(argv[3], nullptr, 10) : objects;
  if (mode == "evict") return RunEviction(objects);
  if (mode != "unmount" && mode != "expire") {
    std::fprintf(stderr, "mode must be unmount, expire or evict\n");
    return 2;
  }
  FakeClock clock;
  MasterOptions options;
  options.eviction_high_watermark_ratio = 1.0;
  MasterService master(options, clock);
  for (const char* client : {"a", "b", "c"}) {
    // Large (virtual) segments: the master never touches their bytes. Each client puts to its own.
    const std::string name = std::string("host-") + client + ":1";
    if (!master.MountSegment(client, {name, 1ull << 40, 1ull << 40}).ok()) return 2;
  }
  const auto fill_start = SteadyClock::now();
  if (!Fill(master, "a", "a", objects) || !Fill(master, "c", "c", others)) return 2;
  std::printf("objects: %" PRIu64 " on A, %" PRIu64 " on C (filled in %.1f s)\n", objects, others,
              std::chrono::duration<double>(SteadyClock::now() - fill_start).count());

  // Phase 0: before the unmount; 1: during it; 2: done.
  std::atomic<int> phase{0};
  std::atomic<bool> failed{false};
  // Expire mode moves the fake clock past client_ttl: until B and C ping again every owner looks
  // dead and a put finds no segment, so the putter waits out the jump (before the timed part).
  std::atomic<bool> hold{false};
  std::atomic<bool> held{false};
  LatencyRecorder recorders[2];
  std::thread putter([&] {
    yuebing::master::ReplicateConfig on_b;
    on_b.preferred_segment = "host-b:1";
    for (uint64_t i = 0;; ++i) {
      if (hold.load()) {  // the clock jumps: no put may see the owners stale in between
        held = true;
        while (hold.load()) std::this_thread::yield();
        held = false;
      }
      const int p = phase.load();
      if (p == 2) break;
      const std::string key = KeyOf("b", i);
      const auto t0 = SteadyClock::now();
      if (!master.PutStart("b", key, 4096, on_b).ok() || !master.PutEnd("b", key, i).ok() ||
          !master.Remove(key).ok()) {
        failed = true;
        return;
      }
      recorders[p].Record(static_cast<uint64_t>(
          std::chrono::duration_cast<std::chrono::nanoseconds>(SteadyClock::now() - t0).count()));
    }
  });
  std::this_thread::sleep_for(std::chrono::seconds(1));
  if (mode != "unmount") {
    hold = true;
    while (!held.load() && !failed.load()) std::this_thread::yield();
    clock.Advance(options.client_ttl + std::chrono::seconds(1));
    master.Ping("b");
    master.Ping("c");
    hold = false;
  }
  phase = 1;
  const auto unmount_start = SteadyClock::now();
  if (mode == "unmount") {
    if (const absl::Status s = master.UnmountSegment("a", "host-a:1"); !s.ok()) {
      std::fprintf(stderr, "unmount failed: %s\n", s.ToString().c_str());
      return 2;
    }
  } else {
    master.Tick();
  }
  const double unmount_seconds =
      std::chrono::duration<double>(SteadyClock::now() - unmount_start).count();
  phase = 2;
  putter.join();
  if (failed) {
    std::fprintf(stderr, "a put of client b failed\n");
    return 2;
  }
  std::printf("%s of A: %.3f s (%.0f objects/s)\n", mode.c_str(), unmount_seconds,
              objects / unmount_seconds);
  const LatencySummary before = recorders[0].Summarize();
  const LatencySummary during = recorders[1].Summarize();
  PrintRow("before", before);
  PrintRow(("during " + mode).c_str(), during);
  if (before.p99_us > 0) {
    std::printf("p99 during / before: %.2f\n", during.p99_us / before.p99_us);
  }

  uint64_t left_on_a = 0;
  uint64_t left_on_c = 0;
  for (uint64_t i = 0; i < objects; i += 97) left_on_a += master.Exist(KeyOf("a", i));
  for (uint64_t i = 0; i < others; i += 97) left_on_c += master.Exist(KeyOf("c", i));
  const uint64_t sampled_c = others == 0 ? 0 : (others - 1) / 97 + 1;
  if (left_on_a != 0 || left_on_c != sampled_c || master.Stats().objects != others) {
    std::fprintf(stderr,
                 "FAIL: %" PRIu64 " sampled objects of A left, %" PRIu64 " of %" PRIu64
                 " of C, %" PRIu64 " objects in all (want %" PRIu64 ")\n",
                 left_on_a, left_on_c, sampled_c, master.Stats().objects, others);
    return 1;
  }
  return 0;
}
