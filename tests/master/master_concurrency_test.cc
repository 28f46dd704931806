// Threads hammer one MasterService (real clock) the way store clients do: PutStart, write the bytes
// into plain segment memory, PutEnd; GetReplicaList, read the bytes and check them; Remove; Tick.
// Small segments keep eviction busy. Two writers given overlapping space, or a reader given space
// that is being rewritten, show up as wrong bytes here and as a data race under ThreadSanitizer
// (scripts/test-sanitizers runs this test under TSan).
#include <gtest/gtest.h>
#include <xxhash.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <memory>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "yuebing/common/error_code.h"
#include "yuebing/common/logging.h"
#include "yuebing/master/master_service.h"

namespace yuebing::master {
namespace {

constexpr int kThreads = 4;
constexpr int kOpsPerThread = 6000;
constexpr int kKeys = 300;
constexpr uint64_t kSegmentBytes = 256 << 10;
constexpr uint64_t kBase = 0x7f0000000000ull;

// Segment i is named "127.0.0.1:<17000 + i>" and based at kBase * (i + 1); its memory is never
// reused, so that a read of a segment being unmounted still finds the bytes it was written with.
struct SharedMemory {
  explicit SharedMemory(size_t count) {
    for (size_t i = 0; i < count; ++i) {
      segments.push_back(std::make_unique<uint8_t[]>(kSegmentBytes));
    }
  }
  std::vector<std::unique_ptr<uint8_t[]>> segments;
  static std::string Name(size_t i) { return absl::StrCat("127.0.0.1:", 17000 + i); }
  static uint64_t Base(size_t i) { return kBase * (i + 1); }
  uint8_t* At(const Replica& r) {
    const size_t index = std::stoul(r.segment_name.substr(r.segment_name.rfind(':') + 1)) - 17000;
    return segments.at(index).get() + (r.address - Base(index));
  }
};

// Segment i for worker i ("client-<i>").
void MountWorkerSegments(MasterService& master) {
  for (size_t i = 0; i < kThreads; ++i) {
    ASSERT_TRUE(
        master
            .MountSegment(absl::StrCat("client-", i),
                          Segment{SharedMemory::Name(i), SharedMemory::Base(i), kSegmentBytes})
            .ok());
  }
}

struct Totals {
  std::atomic<uint64_t> puts{0}, reads{0}, wrong{0}, misses{0}, refused{0};
};

void Worker(MasterService* master, SharedMemory* memory, int thread, Totals* totals) {
  std::mt19937_64 rng(static_cast<uint64_t>(thread) * 104729 + 1);
  const ClientId client = absl::StrCat("client-", thread);
  std::vector<uint8_t> value;
  for (int op = 0; op < kOpsPerThread; ++op) {
    const std::string key = absl::StrCat("k", rng() % kKeys);
    const uint64_t choice = rng() % 10;
    if (choice < 4) {
      value.resize(64 + rng() % 8192);
      for (uint8_t& b : value) b = static_cast<uint8_t>(rng());
      ReplicateConfig config;
      config.replica_num = 1 + static_cast<uint32_t>(rng() % 2);
      auto replicas = master->PutStart(client, key, value.size(), config);
      if (!replicas.ok()) {
        totals->refused.fetch_add(1);
        continue;
      }
      for (const Replica& r : *replicas) std::memcpy(memory->At(r), value.data(), value.size());
      if (master->PutEnd(client, key, XXH3_64bits(value.data(), value.size())).ok()) {
        totals->puts.fetch_add(1);
      }
    } else if (choice < 8) {
      auto location = master->GetReplicaList(key);
      if (!location.ok()) {
        totals->misses.fetch_add(1);
        continue;
      }
      // Read well within the lease (10 s by default): the bytes must be exactly the checksum's.
      for (const Replica& r : location->replicas) {
        if (XXH3_64bits(memory->At(r), r.size) != location->checksum) totals->wrong.fetch_add(1);
      }
      totals->reads.fetch_add(1);
    } else if (choice < 9) {
      (void)master->Remove(key, /*force=*/false);
    } else {
      master->Tick();
    }
  }
}

TEST(MasterConcurrencyTest, ConcurrentClientsNeverSeeOverwrittenBytes) {
  InitLogging();
  spdlog::set_level(spdlog::level::warn);
  MasterOptions options;
  options.num_shards = 8;
  MasterService master(options);
  SharedMemory memory(kThreads);
  MountWorkerSegments(master);
  Totals totals;
  std::vector<std::thread> threads;
  for (int i = 0; i < kThreads; ++i) threads.emplace_back(Worker, &master, &memory, i, &totals);
  for (std::thread& t : threads) t.join();

  std::printf("puts %llu, reads %llu, misses %llu, refused %llu, evicted %llu, wrong %llu\n",
              static_cast<unsigned long long>(totals.puts.load()),
              static_cast<unsigned long long>(totals.reads.load()),
              static_cast<unsigned long long>(totals.misses.load()),
              static_cast<unsigned long long>(totals.refused.load()),
              static_cast<unsigned long long>(master.Stats().evicted_objects),
              static_cast<unsigned long long>(totals.wrong.load()));
  EXPECT_EQ(totals.wrong.load(), 0u);
  EXPECT_GT(totals.puts.load(), 0u);
  EXPECT_GT(totals.reads.load(), 0u);
  EXPECT_GT(master.Stats().evicted_objects, 0u) << "segments were meant to overflow";
  const MasterStats stats = master.Stats();
  EXPECT_LE(stats.used_bytes, stats.capacity_bytes);
}

// Segments of an extra client come and go while the workers put and read: an unmount sweeps its
// segment's objects beside them, a mount waits for it. Reads never see wrong bytes, and once
// every unmount is over no object keeps a replica on an unmounted segment.
TEST(MasterConcurrencyTest, UnmountsBesideClientsLeaveNoReplicaBehind) {
  InitLogging();
  spdlog::set_level(spdlog::level::warn);
  constexpr size_t kMounts = 24;
  MasterOptions options;
  options.num_shards = 8;
  MasterService master(options);
  SharedMemory memory(kThreads + kMounts);
  MountWorkerSegments(master);
  Totals totals;
  std::atomic<bool> unmount_failed{false};
  std::thread mounter([&] {
    for (size_t i = kThreads; i < kThreads + kMounts; ++i) {
      const Segment segment{SharedMemory::Name(i), SharedMemory::Base(i), kSegmentBytes};
      if (!master.MountSegment("mounter", segment).ok()) unmount_failed = true;
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
      if (!master.UnmountSegment("mounter", segment.name).ok()) unmount_failed = true;
    }
  });
  std::vector<std::thread> threads;
  for (int i = 0; i < kThreads; ++i) threads.emplace_back(Worker, &master, &memory, i, &totals);
  for (std::thread& t : threads) t.join();
  mounter.join();

  EXPECT_FALSE(unmount_failed.load());
  EXPECT_EQ(totals.wrong.load(), 0u);
  EXPECT_GT(totals.puts.load(), 0u);
  const MasterStats stats = master.Stats();
  EXPECT_EQ(stats.segments.size(), static_cast<size_t>(kThreads));
  EXPECT_LE(stats.used_bytes, stats.capacity_bytes);
  for (int k = 0; k < kKeys; ++k) {
    auto location = master.GetReplicaList(absl::StrCat("k", k));
    if (!location.ok()) continue;
    for (const Replica& r : location->replicas) {
      EXPECT_LT(std::stoul(r.segment_name.substr(r.segment_name.rfind(':') + 1)), 17000u + kThreads)
          << "k" << k << " kept a replica on unmounted " << r.segment_name;
    }
  }
}

}  // namespace
}  // namespace yuebing::master
