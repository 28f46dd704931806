// Seeded random operations against a simple model of the master. Every step checks the
// results the model predicts; allocations are checked never to overlap bytes that a live
// object, an unfinished put, or a read lease may still use. A failure prints the seed and step;
// rerun with that seed to reproduce (the run is fully deterministic: FakeClock, no threads).
#include <gtest/gtest.h>

#include <chrono>
#include <cstdint>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "yuebing/common/error_code.h"
#include "yuebing/master/master_service.h"

namespace yuebing::master {
namespace {

using namespace std::chrono_literals;

constexpr int64_t kLeaseMs = 1000;
constexpr int64_t kDiscardMs = 3000;
constexpr int64_t kReleaseMs = 8000;
constexpr uint64_t kAlign = 64;

uint64_t Aligned(uint64_t size) { return (size + kAlign - 1) / kAlign * kAlign; }

struct Version {
  uint64_t size = 0;
  uint64_t checksum = 0;
  std::vector<Replica> replicas;
};

struct ModelObject {
  bool complete = false;
  Version value;  // the complete value, or the one being written
  std::string writer;
  int64_t start_ms = 0;
  int64_t lease_until_ms = 0;
  bool hard_pin = false;
  bool has_pending = false;  // an upsert in progress
  Version pending;
  bool pending_hard_pin = false;
  std::string pending_writer;
  int64_t pending_start_ms = 0;
};

struct Protected {
  Replica range;
  int64_t until_ms;
};

class Model {
 public:
  std::map<std::string, ModelObject> objects;
  std::vector<Protected> retired;
  int64_t now_ms = 0;

  void Retire(const Version& v, int64_t until_ms) {
    if (until_ms <= now_ms) return;
    for (const Replica& r : v.replicas) retired.push_back({r, until_ms});
  }
  void DropPending(ModelObject& o, bool free_now) {
    if (!o.has_pending) return;
    Retire(o.pending, free_now ? now_ms : o.pending_start_ms + kReleaseMs);
    o.has_pending = false;
  }
  // Removes the object; unfinished data held until its release time unless free_now.
  void Drop(const std::string& key, bool free_now) {
    ModelObject& o = objects.at(key);
    if (o.complete) {
      DropPending(o, free_now);
      Retire(o.value, o.lease_until_ms);
    } else {
      Retire(o.value, free_now ? now_ms : o.start_ms + kReleaseMs);
    }
    objects.erase(key);
  }
  bool Overlaps(const Replica& r) const {
    auto clash = [&](const Replica& other) {
      return other.segment_name == r.segment_name && other.address < r.address + Aligned(r.size) &&
             r.address < other.address + Aligned(other.size);
    };
    for (const auto& [key, o] : objects) {
      for (const Replica& other : o.value.replicas) {
        if (clash(other)) return true;
      }
      if (o.has_pending) {
        for (const Replica& other : o.pending.replicas) {
          if (clash(other)) return true;
        }
      }
    }
    for (const Protected& p : retired) {
      if (p.until_ms > now_ms && clash(p.range)) return true;
    }
    return false;
  }
  uint64_t LiveBytes() const {
    uint64_t total = 0;
    for (const auto& [key, o] : objects) {
      total += Aligned(o.value.size) * o.value.replicas.size();
      if (o.has_pending) total += Aligned(o.pending.size) * o.pending.replicas.size();
    }
    return total;
  }
};

class RandomRun {
 public:
  // tight: segments small enough that eviction and allocation failures happen all the time;
  // objects may then vanish, but only when eviction may take them.
  RandomRun(uint32_t seed, bool tight) : seed_(seed), tight_(tight), rng_(seed) {
    MasterOptions options;
    options.eviction_high_watermark_ratio = 0.8;
    options.eviction_ratio = 0.1;
    options.num_shards = 4;
    options.default_kv_lease_ttl = std::chrono::milliseconds(kLeaseMs);
    options.put_start_discard_timeout = std::chrono::milliseconds(kDiscardMs);
    options.put_start_release_timeout = std::chrono::milliseconds(kReleaseMs);
    options.client_ttl = 60s;
    options.allocation_alignment = kAlign;
    master_ = std::make_unique<MasterService>(options, clock_);
    const uint64_t segment_size = tight ? 256 << 10 : 256 << 20;
    EXPECT_TRUE(master_->MountSegment("c0", Segment{"s0", 0x10000000, segment_size}).ok());
    EXPECT_TRUE(master_->MountSegment("c1", Segment{"s1", 0x40000000, segment_size}).ok());
    master_->Ping("c2");
  }

  void Run(int steps) {
    for (step_ = 0; step_ < steps && !::testing::Test::HasFailure(); ++step_) Step();
    if (::testing::Test::HasFailure()) return;
    // Drain: everything must come back.
    master_->RemoveAll(/*force=*/true);
    Advance(kReleaseMs + kLeaseMs);
    master_->Tick();
    master_->RemoveAll(/*force=*/true);
    const MasterStats stats = master_->Stats();
    EXPECT_EQ(stats.objects, 0u) << Where();
    EXPECT_EQ(stats.used_bytes, 0u) << Where();
    if (tight_) {
      EXPECT_GT(evicted_, 0u) << Where();
    }
  }

 private:
  std::string Where() const { return absl::StrCat("seed ", seed_, " step ", step_); }
  uint32_t Pick(uint32_t n) { return static_cast<uint32_t>(rng_() % n); }
  std::string Client() { return absl::StrCat("c", Pick(3)); }
  std::string Key() { return absl::StrCat("key-", Pick(24)); }

  void Advance(int64_t ms) {
    clock_.Advance(std::chrono::milliseconds(ms));
    model_.now_ms += ms;
    for (const char* c : {"c0", "c1", "c2"}) master_->Ping(c);
  }

  void Step() {
    const uint32_t op = Pick(100);
    if (op < 25) return StartPut(/*upsert=*/false);
    if (op < 32) return StartPut(/*upsert=*/true);
    if (op < 50) return EndPut();
    if (op < 54) return RevokePut();
    if (op < 66) return Get();
    if (op < 72) return CheckExist();
    if (op < 80) return RemoveKey();
    if (op < 84) return Tick();
    if (op < 99) return Advance(Pick(1500));
    return RemoveAllUnleased();
  }

  void StartPut(bool upsert) {
    const std::string client = Client();
    const std::string key = Key();
    const uint64_t size = 1 + Pick(64 * 1024);
    ReplicateConfig config;
    config.replica_num = 1 + Pick(3);
    config.with_hard_pin = Pick(10) == 0;
    config.with_soft_pin = Pick(5) == 0;
    auto result = upsert ? master_->UpsertStart(client, key, size, config)
                         : master_->PutStart(client, key, size, config);
    // Eviction inside the call may have taken objects (and freed their bytes) first.
    Reconcile();
    // Predict.
    auto it = model_.objects.find(key);
    bool refused = false;
    if (it != model_.objects.end()) {
      ModelObject& o = it->second;
      if (!o.complete) {
        refused = model_.now_ms - o.start_ms < kDiscardMs;
        if (!refused) model_.Drop(key, /*free_now=*/false);
      } else if (!upsert) {
        refused = true;
      } else if (o.has_pending) {
        refused = model_.now_ms - o.pending_start_ms < kDiscardMs;
        if (!refused) model_.DropPending(o, /*free_now=*/false);
      }
    }
    if (refused) {
      ASSERT_EQ(ToErrorCode(result.status()), ErrorCode::kObjectAlreadyExists) << Where();
      return;
    }
    if (tight_ && ToErrorCode(result.status()) == ErrorCode::kNoAvailableHandle) {
      return;
    }
    ASSERT_TRUE(result.ok()) << Where() << ": " << result.status();
    if (tight_) {
      ASSERT_GE(result->size(), 1u) << Where();
      ASSERT_LE(result->size(), std::min<size_t>(config.replica_num, 2)) << Where();
    } else {
      ASSERT_EQ(result->size(), std::min<size_t>(config.replica_num, 2)) << Where();
    }
    if (result->size() == 2) {
      ASSERT_NE((*result)[0].segment_name, (*result)[1].segment_name);
    }
    for (const Replica& r : *result) {
      ASSERT_EQ(r.size, size);
      ASSERT_EQ(r.address % kAlign, 0u);
      ASSERT_FALSE(model_.Overlaps(r)) << Where() << ": reused bytes still in use";
    }
    Version v{size, 0, *result};
    it = model_.objects.find(key);
    if (it != model_.objects.end()) {  // upsert over a complete object
      it->second.has_pending = true;
      it->second.pending = v;
      it->second.pending_hard_pin = config.with_hard_pin;
      it->second.pending_writer = client;
      it->second.pending_start_ms = model_.now_ms;
      return;
    }
    ModelObject o;
    o.value = v;
    o.hard_pin = config.with_hard_pin;
    o.writer = client;
    o.start_ms = model_.now_ms;
    model_.objects[key] = o;
  }

  // After calls that may evict: complete objects the master no longer has must have been
  // evictable (not leased, not hard-pinned, not being replaced).
  void Reconcile() {
    if (!tight_) return;
    std::vector<std::string> gone;
    for (const auto& [key, o] : model_.objects) {
      if (!o.complete || master_->Exist(key)) continue;
      ASSERT_FALSE(o.hard_pin) << Where() << ": hard-pinned " << key << " evicted";
      ASSERT_FALSE(o.has_pending) << Where() << ": " << key << " evicted while replaced";
      ASSERT_LE(o.lease_until_ms, model_.now_ms) << Where() << ": leased " << key << " evicted";
      gone.push_back(key);
    }
    for (const std::string& key : gone) model_.Drop(key, /*free_now=*/true);
    evicted_ += gone.size();
  }

  void EndPut() {
    const std::string client = Client();
    const std::string key = Key();
    auto it = model_.objects.find(key);
    const uint64_t checksum =
        (it != model_.objects.end() && Pick(4) == 0) ? it->second.value.checksum : rng_();
    const absl::Status status = master_->PutEnd(client, key, checksum);
    if (it == model_.objects.end()) {
      ASSERT_EQ(ToErrorCode(status), ErrorCode::kObjectNotFound) << Where();
      return;
    }
    ModelObject& o = it->second;
    if (!o.complete) {
      if (o.writer != client) {
        ASSERT_EQ(ToErrorCode(status), ErrorCode::kIllegalClient) << Where();
        return;
      }
      ASSERT_TRUE(status.ok()) << Where() << ": " << status;
      o.complete = true;
      o.value.checksum = checksum;
      o.lease_until_ms = 0;
      return;
    }
    if (o.has_pending) {
      if (o.pending_writer != client) {
        ASSERT_EQ(ToErrorCode(status), ErrorCode::kIllegalClient) << Where();
        return;
      }
      ASSERT_TRUE(status.ok()) << Where() << ": " << status;
      model_.Retire(o.value, o.lease_until_ms);
      o.value = o.pending;
      o.hard_pin = o.pending_hard_pin;
      o.value.checksum = checksum;
      o.has_pending = false;
      o.lease_until_ms = 0;
      return;
    }
    if (checksum == o.value.checksum) {
      ASSERT_TRUE(status.ok()) << Where();
    } else {
      ASSERT_EQ(ToErrorCode(status), ErrorCode::kObjectNotFound) << Where();
    }
  }

  void RevokePut() {
    const std::string client = Client();
    const std::string key = Key();
    const absl::Status status = master_->PutRevoke(client, key);
    auto it = model_.objects.find(key);
    if (it == model_.objects.end() || (it->second.complete && !it->second.has_pending)) {
      ASSERT_EQ(ToErrorCode(status), ErrorCode::kObjectNotFound) << Where();
      return;
    }
    ModelObject& o = it->second;
    const std::string& writer = o.complete ? o.pending_writer : o.writer;
    if (writer != client) {
      ASSERT_EQ(ToErrorCode(status), ErrorCode::kIllegalClient) << Where();
      return;
    }
    ASSERT_TRUE(status.ok()) << Where() << ": " << status;
    if (o.complete) {
      model_.DropPending(o, /*free_now=*/true);
    } else {
      model_.Drop(key, /*free_now=*/true);
    }
  }

  void Get() {
    const std::string key = Key();
    auto location = master_->GetReplicaList(key);
    auto it = model_.objects.find(key);
    if (it == model_.objects.end() || !it->second.complete) {
      ASSERT_EQ(ToErrorCode(location.status()), ErrorCode::kObjectNotFound) << Where();
      return;
    }
    ModelObject& o = it->second;
    ASSERT_TRUE(location.ok()) << Where() << ": " << location.status();
    ASSERT_EQ(location->size, o.value.size) << Where();
    ASSERT_EQ(location->checksum, o.value.checksum) << Where();
    ASSERT_EQ(location->replicas.size(), o.value.replicas.size()) << Where();
    for (size_t i = 0; i < o.value.replicas.size(); ++i) {
      ASSERT_EQ(location->replicas[i].segment_name, o.value.replicas[i].segment_name);
      ASSERT_EQ(location->replicas[i].address, o.value.replicas[i].address) << Where();
    }
    o.lease_until_ms = std::max(o.lease_until_ms, model_.now_ms + kLeaseMs);
  }

  void CheckExist() {
    const std::string key = Key();
    auto it = model_.objects.find(key);
    const bool complete = it != model_.objects.end() && it->second.complete;
    ASSERT_EQ(master_->Exist(key), complete) << Where();
    auto size = master_->GetSize(key);
    ASSERT_EQ(size.ok(), complete) << Where();
    if (complete) {
      ASSERT_EQ(*size, it->second.value.size);
    }
    const MasterStats stats = master_->Stats();
    ASSERT_EQ(stats.objects, model_.objects.size()) << Where();
    ASSERT_GE(stats.used_bytes, model_.LiveBytes()) << Where();
  }

  void RemoveKey() {
    const std::string key = Key();
    const bool force = Pick(4) == 0;
    const absl::Status status = master_->Remove(key, force);
    auto it = model_.objects.find(key);
    if (it == model_.objects.end() || !it->second.complete) {
      ASSERT_EQ(ToErrorCode(status), ErrorCode::kObjectNotFound) << Where();
      return;
    }
    if (!force && it->second.lease_until_ms > model_.now_ms) {
      ASSERT_EQ(ToErrorCode(status), ErrorCode::kObjectHasLease) << Where();
      return;
    }
    ASSERT_TRUE(status.ok()) << Where() << ": " << status;
    model_.Drop(key, /*free_now=*/false);
  }

  void RemoveAllUnleased() {
    uint64_t expected = 0;
    std::vector<std::string> gone;
    for (const auto& [key, o] : model_.objects) {
      if (o.complete && o.lease_until_ms <= model_.now_ms) gone.push_back(key);
    }
    for (const std::string& key : gone) {
      model_.Drop(key, /*free_now=*/false);
      ++expected;
    }
    ASSERT_EQ(master_->RemoveAll(), expected) << Where();
  }

  void Tick() {
    master_->Tick();
    std::vector<std::string> stale;
    for (auto& [key, o] : model_.objects) {
      if (!o.complete && o.start_ms + kReleaseMs <= model_.now_ms) stale.push_back(key);
      if (o.complete && o.has_pending && o.pending_start_ms + kReleaseMs <= model_.now_ms) {
        model_.DropPending(o, /*free_now=*/true);
      }
    }
    for (const std::string& key : stale) model_.Drop(key, /*free_now=*/true);
    Reconcile();
  }

  const uint32_t seed_;
  const bool tight_;
  uint64_t evicted_ = 0;
  std::mt19937_64 rng_;
  int step_ = 0;
  FakeClock clock_;
  std::unique_ptr<MasterService> master_;
  Model model_;
};

TEST(MasterRandomTest, MatchesTheModel) {
  for (uint32_t seed : {1u, 2u, 3u, 42u, 2024u, 7777u}) {
    SCOPED_TRACE(absl::StrCat("seed ", seed));
    RandomRun run(seed, /*tight=*/false);
    run.Run(20000);
    if (::testing::Test::HasFailure()) break;
  }
}

// Small segments: eviction and failed allocations all the time. Evicted objects must have been
// evictable, and no allocation may reuse bytes still in use or leased.
TEST(MasterRandomTest, MatchesTheModelUnderEviction) {
  for (uint32_t seed : {11u, 12u, 13u, 99u, 31337u, 4242u}) {
    SCOPED_TRACE(absl::StrCat("seed ", seed));
    RandomRun run(seed, /*tight=*/true);
    run.Run(20000);
    if (::testing::Test::HasFailure()) break;
  }
}

}  // namespace
}  // namespace yuebing::master
