#include "transport/memory_registry.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <thread>

namespace yuebing::transport {
namespace {

RegisteredBuffer Buffer(uint64_t addr, uint64_t length) {
  RegisteredBuffer b;
  b.addr = addr;
  b.length = length;
  return b;
}

TEST(MemoryRegistryTest, RejectsNullZeroAndWrap) {
  MemoryRegistry registry;
  EXPECT_EQ(registry.Add(Buffer(0, 10)).code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(registry.Add(Buffer(4096, 0)).code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(registry.Add(Buffer(UINT64_MAX - 10, 100)).code(), absl::StatusCode::kInvalidArgument);
}

TEST(MemoryRegistryTest, RejectsOverlapsButAllowsAdjacent) {
  MemoryRegistry registry;
  ASSERT_TRUE(registry.Add(Buffer(1000, 100)).ok());
  EXPECT_EQ(registry.Add(Buffer(1000, 100)).code(), absl::StatusCode::kAlreadyExists);
  EXPECT_EQ(registry.Add(Buffer(950, 51)).code(), absl::StatusCode::kAlreadyExists);
  EXPECT_EQ(registry.Add(Buffer(1099, 5)).code(), absl::StatusCode::kAlreadyExists);
  EXPECT_EQ(registry.Add(Buffer(900, 300)).code(), absl::StatusCode::kAlreadyExists);
  EXPECT_TRUE(registry.Add(Buffer(900, 100)).ok());
  EXPECT_TRUE(registry.Add(Buffer(1100, 100)).ok());
  EXPECT_EQ(registry.Snapshot().size(), 3u);
}

TEST(MemoryRegistryTest, AcquireChecksWholeRangeInsideOneBuffer) {
  MemoryRegistry registry;
  ASSERT_TRUE(registry.Add(Buffer(1000, 100)).ok());
  ASSERT_TRUE(registry.Add(Buffer(1100, 100)).ok());
  EXPECT_TRUE(registry.Acquire(1000, 100).ok());
  EXPECT_TRUE(registry.Acquire(1050, 50).ok());
  EXPECT_EQ(registry.Acquire(1050, 51).status().code(), absl::StatusCode::kPermissionDenied);
  EXPECT_FALSE(registry.Acquire(999, 1).ok());
  EXPECT_FALSE(registry.Acquire(1200, 1).ok());
  EXPECT_FALSE(registry.Acquire(1000, 0).ok());
  EXPECT_FALSE(registry.Acquire(1010, UINT64_MAX).ok());
}

TEST(MemoryRegistryTest, RemoveWaitsForPins) {
  MemoryRegistry registry;
  ASSERT_TRUE(registry.Add(Buffer(1000, 100)).ok());
  auto pin = std::make_unique<MemoryRegistry::Pin>(*registry.Acquire(1000, 10));
  std::atomic<bool> removed{false};
  std::thread remover([&] {
    EXPECT_TRUE(registry.Remove(1000).ok());
    removed = true;
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  EXPECT_FALSE(removed.load());
  EXPECT_FALSE(registry.Acquire(1000, 10).ok()) << "a buffer being removed takes no new pins";
  pin.reset();
  remover.join();
  EXPECT_TRUE(removed.load());
  EXPECT_EQ(registry.Remove(1000).status().code(), absl::StatusCode::kNotFound);
}

}  // namespace
}  // namespace yuebing::transport
