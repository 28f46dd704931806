// Seeded, deterministic simulation of one master with many clients. Clients write real bytes
// into simulated segment memory, read them back through the replica lists the master hands out,
// crash, stall past their TTL, restart, unmount, and the master itself restarts with empty
// metadata — all on a FakeClock, in one thread, driven by one seeded generator.
//
// The oracle checks what users rely on, not the master's internals:
//  - never wrong bytes: a replica the master lists (with a current epoch, read within the lease)
//    holds exactly bytes whose xxh3 is the checksum the master returned, and that checksum is one
//    a completed put of that key recorded;
//  - no loss without cause: a completed object is found while nothing could have dropped it (no
//    remove, eviction, master restart, or death/unmount of a segment holding one of its replicas);
//  - accounting: used bytes never exceed capacity; once every client is gone, nothing is left.
// A failing run prints its seed and step; `YUEBING_SIM_SEED=<seed>` reruns exactly that run.
#include <gtest/gtest.h>
#include <xxhash.h>

#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <map>
#include <memory>
#include <optional>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "yuebing/common/clock.h"
#include "yuebing/common/error_code.h"
#include "yuebing/common/logging.h"
#include "yuebing/master/master_service.h"

namespace yuebing::master {
namespace {

using namespace std::chrono_literals;

constexpr int kClients = 12;
constexpr int kKeys = 240;
constexpr uint64_t kSegmentBytes = 64 << 10;
constexpr int64_t kLeaseMs = 500;
constexpr int64_t kTtlMs = 2000;
constexpr int64_t kPingMs = 400;
constexpr int64_t kDiscardMs = 1500;
constexpr int64_t kReleaseMs = 4000;
// A writer stops writing a put's bytes this long after PutStart (its transfer deadline)...
constexpr int64_t kWriteDeadlineMs = 700;
// ...unless it was stalled mid-put: then bytes already in flight may still land this long after
// PutStart (the master must keep such space retired until put_start_release_timeout).
constexpr int64_t kStaleWriteMs = kReleaseMs * 3 / 4;

uint64_t Checksum(const std::vector<uint8_t>& bytes) {
  return XXH3_64bits(bytes.data(), bytes.size());
}

struct SimClient {
  std::string segment_name;  // stable across restarts, as host:port is
  uint64_t base = 0;
  ClientId id;  // a fresh id per incarnation, as real clients pick one at start
  int incarnation = 0;
  bool alive = true;
  int64_t stalled_until_ms = -1;  // SIGSTOP-like: no pings, no writes, no reads until then
  int64_t restart_at_ms = -1;     // when dead: the time it comes back
  bool mounted = false;           // mounted at the current master
  uint64_t epoch = 0;             // epoch of that mount
  std::vector<uint8_t> memory;    // this incarnation's segment bytes (empty when dead)
  int64_t last_ping_ms = 0;
};

struct PendingPut {
  int client = 0;
  int incarnation = 0;
  std::string key;
  std::vector<Replica> replicas;
  std::vector<uint8_t> value;
  size_t written = 0;  // bytes of `value` written to every replica so far
  int64_t start_ms = 0;
  uint64_t master_generation = 0;
  bool writer_stalled = false;
};

struct PendingRead {
  std::string key;
  ObjectLocation location;
  int64_t deadline_ms = 0;
  int64_t ready_at_ms = 0;             // when the client gets to move the bytes
  std::optional<uint64_t> must_equal;  // the checksum the oracle was sure of
};

struct Counters {
  uint64_t puts_ok = 0, put_errors = 0, reads_verified = 0, misses = 0, lease_expired = 0,
           unreachable = 0, crashes = 0, stalls = 0, master_restarts = 0, unmounts = 0;
  // Must stay 0:
  uint64_t wrong_bytes = 0, phantom_values = 0, unexplained_misses = 0;
};

class Simulation {
 public:
  explicit Simulation(uint64_t seed) : seed_(seed), rng_(seed) {
    for (int i = 0; i < kClients; ++i) {
      SimClient c;
      c.segment_name = absl::StrCat("10.0.0.", i + 1, ":17000");
      c.base = 0x100000000ull * (i + 1);
      clients_.push_back(std::move(c));
    }
    StartMaster();
    for (int i = 0; i < kClients; ++i) StartClient(i);
  }

  void Run(int steps) {
    for (step_ = 0; step_ < steps; ++step_) {
      Step();
      if (::testing::Test::HasFatalFailure()) return;
    }
    Drain();
  }

  std::string Where() const {
    return absl::StrCat("seed ", seed_, " step ", step_, " (rerun: YUEBING_SIM_SEED=", seed_, ")");
  }
  const Counters& counters() const { return n_; }

 private:
  int64_t NowMs() const {
    return std::chrono::duration_cast<std::chrono::milliseconds>(clock_.Now().time_since_epoch())
        .count();
  }
  uint64_t Pick(uint64_t n) { return std::uniform_int_distribution<uint64_t>(0, n - 1)(rng_); }
  bool Chance(double p) { return std::bernoulli_distribution(p)(rng_); }
  std::string Key(uint64_t i) const { return absl::StrCat("key-", i); }

  void StartMaster() {
    MasterOptions options;
    options.default_kv_lease_ttl = std::chrono::milliseconds(kLeaseMs);
    options.client_ttl = std::chrono::milliseconds(kTtlMs);
    options.put_start_discard_timeout = std::chrono::milliseconds(kDiscardMs);
    options.put_start_release_timeout = std::chrono::milliseconds(kReleaseMs);
    options.num_shards = 8;
    master_.reset();
    master_ = std::make_unique<MasterService>(options, clock_);
    ++master_generation_;
    for (SimClient& c : clients_) c.mounted = false;
    sure_.clear();
    last_evicted_ = 0;
  }

  void StartClient(int i) {
    SimClient& c = clients_[i];
    c.alive = true;
    c.restart_at_ms = -1;
    c.stalled_until_ms = -1;
    ++c.incarnation;
    c.id = absl::StrCat("client-", i, "-", c.incarnation);
    c.memory.assign(kSegmentBytes, 0xEE);  // fresh process memory: not any object's bytes
    c.mounted = false;
    Mount(i);
    c.last_ping_ms = NowMs();
  }

  void Mount(int i) {
    SimClient& c = clients_[i];
    absl::StatusOr<uint64_t> epoch =
        master_->MountSegment(c.id, Segment{c.segment_name, c.base, kSegmentBytes});
    if (epoch.ok()) {
      ASSERT_GT(*epoch, c.epoch) << "mount epochs must grow, " << Where();
      c.epoch = *epoch;
      c.mounted = true;
    } else {
      // The name is still held by the previous incarnation until its TTL runs out.
      ASSERT_EQ(ToErrorCode(epoch.status()), ErrorCode::kSegmentAlreadyExists) << Where();
    }
  }

  // Forgets what the oracle was sure of for objects with a replica on `segment_name`.
  void ForgetSegment(const std::string& segment_name) {
    for (auto it = sure_.begin(); it != sure_.end();) {
      bool on_segment = false;
      for (const Replica& r : replicas_of_[it->first]) on_segment |= r.segment_name == segment_name;
      it = on_segment ? sure_.erase(it) : std::next(it);
    }
  }

  void Step() {
    clock_.Advance(std::chrono::milliseconds(Pick(40)));
    LifeCycle();
    const uint64_t op = Pick(100);
    if (op < 32) {
      StartPut(/*upsert=*/false);
    } else if (op < 37) {
      StartPut(/*upsert=*/true);
    } else if (op < 70) {
      StartRead();
    } else if (op < 76) {
      Exist();
    } else if (op < 82) {
      Remove();
    } else if (op < 83) {
      Crash();
    } else if (op < 84) {
      Stall();
    } else if (op < 85) {
      Unmount();
    } else if (op == 85 && Chance(0.15)) {
      ++n_.master_restarts;
      clock_.Advance(std::chrono::milliseconds(200 + Pick(2000)));  // the outage
      StartMaster();
    }
    ProgressPuts();
    ProgressReads();
    CheckAccounting();
  }

  // Pings, TTL expiry (through Tick), restarts of dead clients, re-mounts.
  void LifeCycle() {
    const int64_t now = NowMs();
    if (now / 100 != last_tick_ms_ / 100) {
      master_->Tick();
      last_tick_ms_ = now;
      NoteEvictions();
    }
    for (int i = 0; i < kClients; ++i) {
      SimClient& c = clients_[i];
      if (!c.alive) {
        if (now >= c.restart_at_ms) StartClient(i);
        continue;
      }
      if (c.stalled_until_ms > now) continue;
      if (!c.mounted) Mount(i);
      if (now - c.last_ping_ms >= kPingMs) {
        c.last_ping_ms = now;
        if (master_->Ping(c.id) == ClientState::kNeedRemount) {
          // Expired while stalled (or a new master): its objects are gone; mount again.
          ForgetSegment(c.segment_name);
          c.mounted = false;
          Mount(i);
        }
      }
    }
  }

  void StartPut(bool upsert) {
    const int writer = static_cast<int>(Pick(kClients));
    SimClient& c = clients_[writer];
    if (!c.alive || c.stalled_until_ms > NowMs()) return;
    const std::string key = Key(Pick(kKeys));
    std::vector<uint8_t> value(64 + Pick(6000));
    std::mt19937_64 fill(rng_());
    for (uint8_t& b : value) b = static_cast<uint8_t>(fill());
    ReplicateConfig config;
    config.replica_num = 1 + static_cast<uint32_t>(Pick(2));
    if (Chance(0.3)) config.preferred_segment = c.segment_name;
    absl::StatusOr<std::vector<Replica>> replicas =
        upsert ? master_->UpsertStart(c.id, key, value.size(), config)
               : master_->PutStart(c.id, key, value.size(), config);
    if (!replicas.ok()) {
      ++n_.put_errors;
      return;
    }
    ASSERT_FALSE(replicas->empty()) << Where();
    for (const Replica& r : *replicas) ASSERT_EQ(r.size, value.size()) << Where();
    puts_.push_back(PendingPut{writer, c.incarnation, key, *replicas, std::move(value), 0, NowMs(),
                               master_generation_});
  }

  // The segment memory a replica names, if that segment is mounted at the replica's epoch.
  uint8_t* ReplicaBytes(const Replica& r) {
    for (SimClient& c : clients_) {
      if (c.segment_name != r.segment_name) continue;
      if (!c.alive || !c.mounted || c.epoch != r.epoch || c.stalled_until_ms > NowMs()) {
        return nullptr;
      }
      EXPECT_GE(r.address, c.base) << Where();
      EXPECT_LE(r.address - c.base + r.size, kSegmentBytes) << Where();
      if (r.address < c.base || r.address - c.base + r.size > kSegmentBytes) return nullptr;
      return c.memory.data() + (r.address - c.base);
    }
    ADD_FAILURE() << "replica on an unknown segment " << r.segment_name << ", " << Where();
    return nullptr;
  }

  void ProgressPuts() {
    const int64_t now = NowMs();
    for (size_t i = 0; i < puts_.size();) {
      PendingPut& p = puts_[i];
      const SimClient& c = clients_[p.client];
      const bool writer_gone = !c.alive || c.incarnation != p.incarnation;
      if (writer_gone || p.master_generation != master_generation_) {
        puts_.erase(puts_.begin() + static_cast<long>(i));  // the writer or its master is gone
        continue;
      }
      if (c.stalled_until_ms > now) p.writer_stalled = true;
      if (c.stalled_until_ms > now || !Chance(0.5)) {
        ++i;
        continue;
      }
      const int64_t deadline_ms = p.writer_stalled ? kStaleWriteMs : kWriteDeadlineMs;
      if (now - p.start_ms > deadline_ms || Chance(0.02)) {
        (void)master_->PutRevoke(c.id, p.key);  // transfer deadline passed, or gave up
        puts_.erase(puts_.begin() + static_cast<long>(i));
        continue;
      }
      const size_t chunk = std::min<size_t>(p.value.size() - p.written, 1 + Pick(4096));
      bool reachable = true;
      for (const Replica& r : p.replicas) {
        uint8_t* bytes = ReplicaBytes(r);
        if (bytes == nullptr) {
          reachable = false;
          continue;
        }
        std::copy(p.value.begin() + static_cast<long>(p.written),
                  p.value.begin() + static_cast<long>(p.written + chunk), bytes + p.written);
      }
      p.written += chunk;
      if (!reachable) {
        (void)master_->PutRevoke(c.id, p.key);
        puts_.erase(puts_.begin() + static_cast<long>(i));
        continue;
      }
      if (p.written == p.value.size()) {
        const uint64_t checksum = Checksum(p.value);
        if (master_->PutEnd(c.id, p.key, checksum).ok()) {
          ++n_.puts_ok;
          completed_[p.key].insert(checksum);
          replicas_of_[p.key] = p.replicas;
          // Sure only of a fresh object: a put over an existing key may legitimately lose.
          sure_[p.key] = checksum;
        }
        puts_.erase(puts_.begin() + static_cast<long>(i));
        continue;
      }
      ++i;
    }
  }

  // After any eviction (by Tick or by a PutStart that found no room) nothing is certain.
  void NoteEvictions() {
    const uint64_t evicted = master_->Stats().evicted_objects;
    if (evicted != last_evicted_) sure_.clear();
    last_evicted_ = evicted;
  }

  void StartRead() {
    NoteEvictions();
    const std::string key = Key(Pick(kKeys));
    absl::StatusOr<ObjectLocation> location = master_->GetReplicaList(key);
    auto sure = sure_.find(key);
    if (!location.ok()) {
      ASSERT_EQ(ToErrorCode(location.status()), ErrorCode::kObjectNotFound) << Where();
      ++n_.misses;
      if (sure != sure_.end()) {
        ++n_.unexplained_misses;
        ADD_FAILURE() << "completed object " << key << " lost without cause, " << Where();
      }
      return;
    }
    PendingRead read{key, *location, NowMs() + location->lease_ttl.count(),
                     NowMs() + static_cast<int64_t>(Pick(kLeaseMs * 3 / 2)), std::nullopt};
    if (sure != sure_.end()) read.must_equal = sure->second;
    reads_.push_back(std::move(read));
  }

  void ProgressReads() {
    const int64_t now = NowMs();
    for (size_t i = 0; i < reads_.size();) {
      if (reads_[i].ready_at_ms > now) {
        ++i;
        continue;
      }
      PendingRead read = std::move(reads_[i]);
      reads_.erase(reads_.begin() + static_cast<long>(i));
      if (now > read.deadline_ms) {
        ++n_.lease_expired;  // a real client reports kLeaseExpired and uses nothing
        continue;
      }
      VerifyRead(read);
    }
  }

  void VerifyRead(const PendingRead& read) {
    for (const Replica& r : read.location.replicas) {
      const uint8_t* bytes = ReplicaBytes(r);
      if (bytes == nullptr) continue;  // a real client moves on to the next replica
      const std::vector<uint8_t> got(bytes, bytes + r.size);
      const uint64_t checksum = Checksum(got);
      if (checksum != read.location.checksum) {
        ++n_.wrong_bytes;
        ADD_FAILURE() << "replica of " << read.key << " at " << r.segment_name << "+0x" << std::hex
                      << r.address << std::dec << " was overwritten under a lease, " << Where();
        return;
      }
      if (completed_[read.key].count(checksum) == 0) {
        ++n_.phantom_values;
        ADD_FAILURE() << read.key << " served a value no put completed, " << Where();
      }
      if (read.must_equal.has_value() && *read.must_equal != checksum) {
        ADD_FAILURE() << read.key << " served an older value, " << Where();
      }
      ++n_.reads_verified;
      return;
    }
    ++n_.unreachable;
  }

  void Exist() {
    NoteEvictions();
    const std::string key = Key(Pick(kKeys));
    const bool exists = master_->Exist(key);
    if (sure_.count(key) != 0 && !exists) {
      ++n_.unexplained_misses;
      ADD_FAILURE() << "Exist lost " << key << ", " << Where();
    }
  }

  void Remove() {
    const std::string key = Key(Pick(kKeys));
    const absl::Status status = master_->Remove(key, /*force=*/Chance(0.2));
    if (!status.ok()) {
      const ErrorCode code = ToErrorCode(status);
      ASSERT_TRUE(code == ErrorCode::kObjectNotFound || code == ErrorCode::kObjectHasLease)
          << status << ", " << Where();
    }
    sure_.erase(key);
  }

  int PickLiveClient() {
    const int i = static_cast<int>(Pick(kClients));
    return clients_[i].alive && clients_[i].stalled_until_ms <= NowMs() ? i : -1;
  }

  // kill -9: memory gone, no unmount; comes back later as a new incarnation.
  void Crash() {
    const int i = PickLiveClient();
    if (i < 0) return;
    SimClient& c = clients_[i];
    ++n_.crashes;
    c.alive = false;
    c.mounted = false;
    c.memory.clear();
    c.restart_at_ms = NowMs() + static_cast<int64_t>(Pick(3 * kTtlMs));
    ForgetSegment(c.segment_name);
  }

  // SIGSTOP: sometimes longer than the TTL, so the master expires it while its memory lives on.
  void Stall() {
    const int i = PickLiveClient();
    if (i < 0) return;
    ++n_.stalls;
    clients_[i].stalled_until_ms = NowMs() + static_cast<int64_t>(Pick(2 * kTtlMs));
    ForgetSegment(clients_[i].segment_name);
  }

  // A graceful shutdown: unmount, then exit; restarts later.
  void Unmount() {
    const int i = PickLiveClient();
    if (i < 0 || !clients_[i].mounted) return;
    SimClient& c = clients_[i];
    ++n_.unmounts;
    ASSERT_TRUE(master_->UnmountSegment(c.id, c.segment_name).ok()) << Where();
    ForgetSegment(c.segment_name);
    c.alive = false;
    c.mounted = false;
    c.memory.clear();
    c.restart_at_ms = NowMs() + static_cast<int64_t>(Pick(kTtlMs));
  }

  void CheckAccounting() {
    const MasterStats stats = master_->Stats();
    ASSERT_LE(stats.used_bytes, stats.capacity_bytes) << Where();
    uint64_t used = 0;
    for (const SegmentUsage& s : stats.segments) {
      ASSERT_LE(s.used_bytes, s.segment.size) << s.segment.name << ", " << Where();
      used += s.used_bytes;
    }
    ASSERT_EQ(used, stats.used_bytes) << Where();
  }

  // Every client dies; after the TTL and release timeout nothing may be left.
  void Drain() {
    for (SimClient& c : clients_) {
      c.alive = false;
      c.restart_at_ms = INT64_MAX;
      c.memory.clear();
    }
    puts_.clear();
    reads_.clear();
    clock_.Advance(std::chrono::milliseconds(kTtlMs + kReleaseMs + kLeaseMs + 100));
    master_->Tick();
    clock_.Advance(std::chrono::milliseconds(kLeaseMs + 100));
    master_->Tick();
    const MasterStats stats = master_->Stats();
    EXPECT_EQ(stats.objects, 0u) << Where();
    EXPECT_EQ(stats.used_bytes, 0u) << Where();
    EXPECT_EQ(stats.segments.size(), 0u) << Where();
  }

  const uint64_t seed_;
  std::mt19937_64 rng_;
  FakeClock clock_;
  std::unique_ptr<MasterService> master_;
  uint64_t master_generation_ = 0;
  std::vector<SimClient> clients_;
  std::vector<PendingPut> puts_;
  std::vector<PendingRead> reads_;
  std::map<std::string, std::set<uint64_t>> completed_;  // checksums of completed puts, by key
  std::map<std::string, std::vector<Replica>> replicas_of_;
  std::map<std::string, uint64_t> sure_;  // objects that must be found, with their checksum
  uint64_t last_evicted_ = 0;
  int64_t last_tick_ms_ = 0;
  int step_ = 0;
  Counters n_;
};

void RunSeed(uint64_t seed, int steps) {
  Simulation sim(seed);
  sim.Run(steps);
  const Counters& n = sim.counters();
  std::printf(
      "seed %llu: puts %llu ok / %llu refused, reads verified %llu, misses %llu, lease expired "
      "%llu, unreachable %llu, crashes %llu, stalls %llu, unmounts %llu, master restarts %llu; "
      "wrong bytes %llu, phantom values %llu, unexplained misses %llu\n",
      static_cast<unsigned long long>(seed), static_cast<unsigned long long>(n.puts_ok),
      static_cast<unsigned long long>(n.put_errors),
      static_cast<unsigned long long>(n.reads_verified), static_cast<unsigned long long>(n.misses),
      static_cast<unsigned long long>(n.lease_expired),
      static_cast<unsigned long long>(n.unreachable), static_cast<unsigned long long>(n.crashes),
      static_cast<unsigned long long>(n.stalls), static_cast<unsigned long long>(n.unmounts),
      static_cast<unsigned long long>(n.master_restarts),
      static_cast<unsigned long long>(n.wrong_bytes),
      static_cast<unsigned long long>(n.phantom_values),
      static_cast<unsigned long long>(n.unexplained_misses));
  EXPECT_EQ(n.wrong_bytes, 0u);
  EXPECT_EQ(n.phantom_values, 0u);
  EXPECT_EQ(n.unexplained_misses, 0u);
  // The run must have exercised what it claims to.
  EXPECT_GT(n.puts_ok, 0u);
  EXPECT_GT(n.reads_verified, 0u);
}

TEST(MasterSimulationTest, ManyClientsWithFailuresMatchTheOracle) {
  InitLogging();
  spdlog::set_level(spdlog::level::warn);  // mounts and expiries log at info on every step
  if (const char* seed = std::getenv("YUEBING_SIM_SEED")) {
    RunSeed(std::strtoull(seed, nullptr, 10), 20000);
    return;
  }
  const int seeds =
      std::getenv("YUEBING_SIM_SEEDS") ? std::atoi(std::getenv("YUEBING_SIM_SEEDS")) : 16;
  for (int s = 1; s <= seeds && !::testing::Test::HasFailure(); ++s) {
    RunSeed(static_cast<uint64_t>(s) * 7919, 20000);
  }
}

}  // namespace
}  // namespace yuebing::master
