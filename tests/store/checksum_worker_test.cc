// ChecksumWorker: every job's value is the object checksum of its pieces, whichever thread ran
// it; groups of several threads stay apart; the helper takes part when it is given work.
#include "store/checksum_worker.h"

#include <gtest/gtest.h>

#include <string>
#include <thread>
#include <vector>

#include "yuebing/common/checksum.h"

namespace yuebing::store {
namespace {

// `count` values of `size` bytes, value i filled from seed `seed + i`.
std::vector<std::string> Values(size_t count, size_t size, uint64_t seed) {
  std::vector<std::string> values(count, std::string(size, '\0'));
  for (size_t i = 0; i < count; ++i) {
    uint64_t x = (seed + i) * 0x9E3779B97F4A7C15ull + 1;
    for (char& c : values[i]) {
      x = x * 6364136223846793005ull + 1442695040888963407ull;
      c = static_cast<char>(x >> 56);
    }
  }
  return values;
}

TEST(ChecksumWorkerTest, EveryJobGetsTheChecksumOfItsPieces) {
  ChecksumWorker worker;
  std::vector<std::string> values = Values(12, ChecksumWorker::kMinBytes, 1);
  // Each value as two pieces, so a job hashes their concatenation.
  std::vector<std::vector<absl::string_view>> pieces;
  for (const std::string& value : values) {
    absl::string_view all(value);
    pieces.push_back({all.substr(0, 1000), all.substr(1000)});
  }
  std::vector<uint64_t> out(values.size(), kNoChecksum);
  ChecksumWorker::Group group;
  for (size_t i = 0; i < values.size(); ++i) worker.Add(&group, pieces[i], &out[i]);
  worker.Wait(&group);
  for (size_t i = 0; i < values.size(); ++i) {
    EXPECT_EQ(out[i], ObjectChecksum(values[i])) << "value " << i;
  }
  EXPECT_EQ(worker.JobsAdded(), values.size());
  EXPECT_LE(worker.HelperJobs(), values.size());
}

TEST(ChecksumWorkerTest, AGroupWithoutJobsReturnsAtOnce) {
  ChecksumWorker worker;
  ChecksumWorker::Group group;
  worker.Wait(&group);
  EXPECT_EQ(worker.HelperJobs(), 0u);
}

TEST(ChecksumWorkerTest, ConcurrentGroupsGetTheirOwnValuesAndTheHelperTakesPart) {
  ChecksumWorker worker;
  constexpr size_t kThreads = 4, kRounds = 20, kValues = 6;
  std::vector<int> wrong(kThreads, 0);
  std::vector<std::thread> threads;
  for (size_t t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (size_t round = 0; round < kRounds; ++round) {
        std::vector<std::string> values = Values(kValues, 64 << 10, 100 * t + round);
        std::vector<std::vector<absl::string_view>> pieces;
        for (const std::string& value : values) pieces.push_back({value});
        std::vector<uint64_t> out(kValues, kNoChecksum);
        ChecksumWorker::Group group;
        for (size_t i = 0; i < kValues; ++i) worker.Add(&group, pieces[i], &out[i]);
        worker.Wait(&group);
        for (size_t i = 0; i < kValues; ++i) wrong[t] += out[i] != ObjectChecksum(values[i]);
      }
    });
  }
  for (std::thread& thread : threads) thread.join();
  for (size_t t = 0; t < kThreads; ++t) EXPECT_EQ(wrong[t], 0) << "thread " << t;
  // 480 jobs queued from four threads: the helper ran some of them.
  EXPECT_GT(worker.HelperJobs(), 0u);
}

}  // namespace
}  // namespace yuebing::store
