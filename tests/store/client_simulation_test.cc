// Seeded simulation of real store clients against one real master core, in one process.
//
// Four store::Client instances (object client + segment host, each with its own transfer engine
// on 127.0.0.1 and a 4 MiB segment; two read peers over shared memory, two over TCP) talk to one
// master::MasterService through InProcessMasterApi (tests/support/in_process_master.h) instead of
// gRPC. A seeded schedule of puts, gets, removes, master ticks, master restarts (a fresh service
// with a higher term: segment hosts must re-mount), injected master-call failures and delays
// (delays past the short read lease make reads outlive it), and corrupted replicas (bytes flipped
// in a segment's memory) runs against them. The oracle:
// - a hit returns exactly the bytes of a put of that key that completed or may have completed
//   (OK, or kRpcFail whose request may have reached the master); values are derived from key and
//   version, so a hit is checked from the key and the bytes alone;
// - a read of a corrupted object is never a hit; it is a miss counted in checksum_failures;
// - every call ends within its budget (no hang), and only the documented error codes appear.
// The clients' own threads (pings, re-mounts) run for real, so the interleaving with them is not
// replayed exactly; the schedule is. A failure prints `seed S step N (rerun: YUEBING_SIM_SEED=S)`.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "store/client_internal.h"
#include "support/in_process_master.h"
#include "yuebing/common/error_code.h"
#include "yuebing/store/client.h"

namespace yuebing::store {
namespace {

using Clock = std::chrono::steady_clock;
using test_support::InProcessFaults;
using test_support::InProcessMaster;
using test_support::InProcessMasterApi;

constexpr int kClients = 4;
constexpr int kKeys = 24;
constexpr int kSteps = 300;
constexpr auto kRpcTimeout = std::chrono::milliseconds(150);
constexpr auto kTransferTimeout = std::chrono::milliseconds(1000);
constexpr auto kLease = std::chrono::milliseconds(60);
// Longest a call may take: two master calls and a transfer round per replica, plus margin for a
// loaded machine.
constexpr auto kBudget = 3 * kRpcTimeout + 2 * kTransferTimeout + std::chrono::milliseconds(1500);

uint64_t Mix(uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

// Value of (key index, version): 8 bytes of version, then bytes from a stream seeded by both.
std::string MakeValue(int key, uint64_t version) {
  const uint64_t seed = Mix(static_cast<uint64_t>(key) << 40 ^ version);
  const size_t size = 16 + seed % 16384;
  std::string value(size, '\0');
  std::memcpy(value.data(), &version, sizeof(version));
  std::mt19937_64 stream(seed);
  for (size_t i = sizeof(version); i < size; ++i) value[i] = static_cast<char>(stream());
  return value;
}

std::string KeyName(int key) { return absl::StrCat("sim-key-", key); }

struct Counters {
  uint64_t puts_ok = 0, gets_ok = 0, wrong = 0, late = 0, unexpected = 0, misses = 0,
           lease_expired = 0, rpc_fail = 0, corruptions = 0, corrupt_detected = 0, restarts = 0;
};

class Simulation {
 public:
  explicit Simulation(uint64_t seed) : seed_(seed), random_(seed) {
    master::MasterOptions options;
    options.default_kv_lease_ttl = kLease;
    options.client_ttl = std::chrono::milliseconds(1500);
    options.put_start_discard_timeout = std::chrono::milliseconds(500);
    options.num_shards = 4;
    master_ = std::make_unique<InProcessMaster>(options, seed);
  }

  std::string Where() const {
    return absl::StrCat("seed ", seed_, " step ", step_, " (rerun: YUEBING_SIM_SEED=", seed_, ")");
  }

  void Run(Counters& total) {
    for (int i = 0; i < kClients; ++i) {
      ClientConfig config;
      config.local_hostname = "127.0.0.1";
      config.metadata_server = "P2PHANDSHAKE";
      config.global_segment_size = 4ull << 20;
      config.enable_shm = i < 2;
      config.rpc_timeout = kRpcTimeout;
      config.transfer_timeout = kTransferTimeout;
      config.ping_interval = std::chrono::milliseconds(50);
      auto client = CreateClientWithMaster(
          config, std::make_shared<InProcessMasterApi>(master_.get(), kRpcTimeout));
      ASSERT_TRUE(client.ok()) << client.status();
      clients_.push_back(std::move(client).value());
    }
    // Faults start once every segment is mounted.
    master_->SetFaults(InProcessFaults{0.05, 0.03, std::chrono::milliseconds(200)});
    for (step_ = 0; step_ < kSteps; ++step_) {
      SCOPED_TRACE(Where());
      Step();
      if (::testing::Test::HasFatalFailure()) break;
    }
    total.puts_ok += c_.puts_ok;
    total.gets_ok += c_.gets_ok;
    total.wrong += c_.wrong;
    total.late += c_.late;
    total.unexpected += c_.unexpected;
    total.misses += c_.misses;
    total.lease_expired += c_.lease_expired;
    total.rpc_fail += c_.rpc_fail;
    total.corruptions += c_.corruptions;
    total.corrupt_detected += c_.corrupt_detected;
    total.restarts += c_.restarts;
    EXPECT_EQ(c_.wrong, 0u) << Where();
    EXPECT_EQ(c_.late, 0u) << Where();
    EXPECT_EQ(c_.unexpected, 0u) << Where();
    clients_.clear();
  }

 private:
  Client& AnyClient() { return *clients_[random_() % clients_.size()]; }

  void CheckTime(Clock::time_point start, const char* what) {
    if (Clock::now() - start > kBudget) {
      ++c_.late;
      ADD_FAILURE() << what << " took longer than its budget at " << Where();
    }
  }

  void Step() {
    const int dice = static_cast<int>(random_() % 100);
    if (dice < 40) {
      Put();
    } else if (dice < 80) {
      Get();
    } else if (dice < 89) {
      Remove();
    } else if (dice < 94) {
      master_->Tick();
    } else if (dice < 97) {
      Corrupt();
    } else {
      master_->Restart();
      ++c_.restarts;
    }
  }

  void Put() {
    const int key = static_cast<int>(random_() % kKeys);
    const uint64_t version = ++next_version_;
    const std::string value = MakeValue(key, version);
    master::ReplicateConfig config;
    config.replica_num = 1 + random_() % 2;
    const Clock::time_point start = Clock::now();
    absl::Status status = AnyClient().Put(KeyName(key), value, config);
    CheckTime(start, "Put");
    const ErrorCode code = ToErrorCode(status);
    if (status.ok() || code == ErrorCode::kRpcFail) written_[key].insert(version);
    if (status.ok()) {
      ++c_.puts_ok;
    } else if (code == ErrorCode::kRpcFail) {
      ++c_.rpc_fail;
    } else if (code != ErrorCode::kTransferFail && code != ErrorCode::kNoAvailableHandle &&
               code != ErrorCode::kObjectNotFound && code != ErrorCode::kIllegalClient &&
               code != ErrorCode::kClientNotFound && code != ErrorCode::kSegmentNotFound) {
      ++c_.unexpected;
      ADD_FAILURE() << "Put: " << status << " at " << Where();
    }
  }

  // Checks a hit against the oracle; returns false for wrong bytes.
  bool Expected(int key, const std::string& bytes) {
    uint64_t version = 0;
    if (bytes.size() < sizeof(version)) return false;
    std::memcpy(&version, bytes.data(), sizeof(version));
    return written_[key].count(version) != 0 && bytes == MakeValue(key, version);
  }

  void Get() {
    const int key = static_cast<int>(random_() % kKeys);
    const Clock::time_point start = Clock::now();
    absl::StatusOr<std::string> got = AnyClient().Get(KeyName(key));
    CheckTime(start, "Get");
    if (got.ok()) {
      ++c_.gets_ok;
      if (!Expected(key, *got)) {
        ++c_.wrong;
        ADD_FAILURE() << "wrong bytes for " << KeyName(key) << " at " << Where();
      }
      return;
    }
    CountReadError(got.status(), "Get");
  }

  void CountReadError(const absl::Status& status, const char* what) {
    switch (ToErrorCode(status)) {
      case ErrorCode::kObjectNotFound:
        ++c_.misses;
        break;
      case ErrorCode::kLeaseExpired:
        ++c_.lease_expired;
        break;
      case ErrorCode::kRpcFail:
        ++c_.rpc_fail;
        break;
      case ErrorCode::kTransferFail:
        break;
      default:
        ++c_.unexpected;
        ADD_FAILURE() << what << ": " << status << " at " << Where();
    }
  }

  void Remove() {
    const int key = static_cast<int>(random_() % kKeys);
    const Clock::time_point start = Clock::now();
    absl::Status status = AnyClient().Remove(KeyName(key), random_() % 2 == 0);
    CheckTime(start, "Remove");
    const ErrorCode code = ToErrorCode(status);
    if (!status.ok() && code != ErrorCode::kObjectNotFound && code != ErrorCode::kObjectHasLease &&
        code != ErrorCode::kRpcFail) {
      ++c_.unexpected;
      ADD_FAILURE() << "Remove: " << status << " at " << Where();
    }
  }

  uint64_t ChecksumFailures() {
    uint64_t total = 0;
    for (const auto& client : clients_) total += client->Stats().checksum_failures;
    return total;
  }

  // Flips one byte in every replica of a stored key (the segments live in this process), then
  // reads it: never a hit; a miss counted as a checksum failure unless the object went away.
  void Corrupt() {
    const int key = static_cast<int>(random_() % kKeys);
    auto location = master_->Current().service->GetReplicaList(KeyName(key));
    if (!location.ok() || location->replicas.empty()) return;
    const uint64_t at = random_() % location->size;
    for (const master::Replica& replica : location->replicas) {
      char* bytes = reinterpret_cast<char*>(replica.address);
      bytes[at] = static_cast<char>(bytes[at] ^ 0x5a);
    }
    ++c_.corruptions;
    const uint64_t failures_before = ChecksumFailures();
    const Clock::time_point start = Clock::now();
    absl::StatusOr<std::string> got = AnyClient().Get(KeyName(key));
    CheckTime(start, "Get of a corrupted object");
    if (got.ok()) {
      ++c_.wrong;
      ADD_FAILURE() << "corrupted " << KeyName(key) << " was returned at " << Where();
    } else {
      CountReadError(got.status(), "Get of a corrupted object");
      if (ToErrorCode(got.status()) == ErrorCode::kObjectNotFound &&
          ChecksumFailures() > failures_before) {
        ++c_.corrupt_detected;
      }
    }
    (void)master_->Current().service->Remove(KeyName(key), /*force=*/true);
  }

  const uint64_t seed_;
  std::mt19937_64 random_;
  std::unique_ptr<InProcessMaster> master_;
  std::vector<std::unique_ptr<Client>> clients_;
  std::map<int, std::set<uint64_t>> written_;  // versions whose put may have completed
  uint64_t next_version_ = 0;
  int step_ = 0;
  Counters c_;
};

TEST(ClientSimulationTest, RealClientsAgainstRealMasterCore) {
  std::vector<uint64_t> seeds;
  if (const char* seed = std::getenv("YUEBING_SIM_SEED")) {
    seeds.push_back(std::strtoull(seed, nullptr, 10));
  } else {
    const int n =
        std::getenv("YUEBING_SIM_SEEDS") ? std::atoi(std::getenv("YUEBING_SIM_SEEDS")) : 4;
    for (int i = 1; i <= n; ++i) seeds.push_back(static_cast<uint64_t>(i));
  }
  Counters total;
  for (uint64_t seed : seeds) {
    Simulation simulation(seed);
    simulation.Run(total);
    if (::testing::Test::HasFailure()) break;
  }
  std::printf(
      "client simulation: seeds=%zu puts_ok=%lu gets_ok=%lu wrong=%lu late=%lu misses=%lu "
      "lease_expired=%lu rpc_fail=%lu corruptions=%lu detected=%lu restarts=%lu\n",
      seeds.size(), total.puts_ok, total.gets_ok, total.wrong, total.late, total.misses,
      total.lease_expired, total.rpc_fail, total.corruptions, total.corrupt_detected,
      total.restarts);
  EXPECT_EQ(total.wrong, 0u);
  EXPECT_EQ(total.late, 0u);
  EXPECT_GT(total.gets_ok, 0u);
  EXPECT_GT(total.corrupt_detected, 0u);
  EXPECT_GT(total.restarts, 0u);
}

}  // namespace
}  // namespace yuebing::store
