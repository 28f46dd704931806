#include "transport/rdma/endpoint_cache.h"

#include <gtest/gtest.h>

#include <thread>

namespace yuebing::transport::rdma {
namespace {

struct FakeEndpoint {
  explicit FakeEndpoint(int id) : id(id) {}
  int id;
};

std::shared_ptr<FakeEndpoint> Make(int id) { return std::make_shared<FakeEndpoint>(id); }

TEST(EndpointCacheTest, ReusesCachedEndpoint) {
  EndpointCache<FakeEndpoint> cache(4);
  EXPECT_EQ(cache.Find("a"), nullptr);
  auto a = cache.Insert("a", Make(1), nullptr);
  EXPECT_EQ(a->id, 1);
  EXPECT_EQ(cache.Find("a").get(), a.get());
  // A second insert under the same key keeps the first (another thread connected first).
  EXPECT_EQ(cache.Insert("a", Make(2), nullptr)->id, 1);
  EXPECT_EQ(cache.size(), 1u);
}

TEST(EndpointCacheTest, EvictsLeastRecentlyUsedAtTheBound) {
  EndpointCache<FakeEndpoint> cache(2);
  std::vector<std::shared_ptr<FakeEndpoint>> evicted;
  cache.Insert("a", Make(1), &evicted);
  cache.Insert("b", Make(2), &evicted);
  ASSERT_NE(cache.Find("a"), nullptr);  // a is now more recent than b
  cache.Insert("c", Make(3), &evicted);
  ASSERT_EQ(evicted.size(), 1u);
  EXPECT_EQ(evicted[0]->id, 2);
  EXPECT_EQ(cache.size(), 2u);
  EXPECT_EQ(cache.Find("b"), nullptr);
  EXPECT_NE(cache.Find("a"), nullptr);
  EXPECT_NE(cache.Find("c"), nullptr);
}

TEST(EndpointCacheTest, EvictedEndpointLivesWhileHeld) {
  EndpointCache<FakeEndpoint> cache(1);
  std::shared_ptr<FakeEndpoint> held = cache.Insert("a", Make(1), nullptr);
  std::weak_ptr<FakeEndpoint> weak = held;
  cache.Insert("b", Make(2), nullptr);
  EXPECT_EQ(cache.Find("a"), nullptr);
  EXPECT_FALSE(weak.expired());  // a slice in flight still uses it
  held.reset();
  EXPECT_TRUE(weak.expired());
}

TEST(EndpointCacheTest, EraseAndClear) {
  EndpointCache<FakeEndpoint> cache(8);
  cache.Insert("a", Make(1), nullptr);
  cache.Insert("b", Make(2), nullptr);
  EXPECT_EQ(cache.Erase("a")->id, 1);
  EXPECT_EQ(cache.Erase("a"), nullptr);
  EXPECT_EQ(cache.Clear().size(), 1u);
  EXPECT_EQ(cache.size(), 0u);
  EndpointCache<FakeEndpoint> zero(0);  // capacity is at least one
  EXPECT_EQ(zero.capacity(), 1u);
}

TEST(EndpointCacheTest, StaysWithinBoundUnderConcurrentUse) {
  EndpointCache<FakeEndpoint> cache(16);
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&cache, t] {
      for (int i = 0; i < 2000; ++i) {
        std::string key = std::to_string((i * 7 + t) % 64);
        if (cache.Find(key) == nullptr) cache.Insert(key, Make(i), nullptr);
      }
    });
  }
  for (auto& thread : threads) thread.join();
  EXPECT_LE(cache.size(), 16u);
}

}  // namespace
}  // namespace yuebing::transport::rdma
