// Fault scenarios against real processes (docs/reliability.md). Each TEST is one ctest entry
// (fault_<Name>). Every scenario asserts: no wrong bytes, no call over its deadline budget, and
// that the cluster serves puts and gets again after the fault ends; each prints one summary line.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <functional>
#include <memory>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "fault/checker.h"
#include "fault/load.h"
#include "store/master_client.h"
#include "support/test_cluster.h"
#include "yuebing/common/error_code.h"

namespace yuebing::fault {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;
using Clock = std::chrono::steady_clock;
using test_support::TestCluster;

constexpr milliseconds kRpc{1000};
constexpr milliseconds kTransfer{1000};

// A fault cluster: one master on `rpc_address` with `master_flags`, stores of `store_size` that
// give up on a master call after 1 s.
TestCluster::Options FaultOptions(std::vector<std::string> master_flags,
                                  std::string store_size = "32MB",
                                  std::string rpc_address = "127.0.0.1") {
  return {.master_rpc_address = std::move(rpc_address),
          .master_flags = std::move(master_flags),
          .store_size = std::move(store_size),
          .store_flags = {"--rpc_timeout_ms=1000"}};
}

// A client of `cluster` with the fault suite's deadlines and no segment of its own.
std::unique_ptr<store::Client> MakeClient(TestCluster& cluster, bool enable_shm) {
  store::ClientConfig config;
  config.rpc_timeout = kRpc;
  config.transfer_timeout = kTransfer;
  config.enable_shm = enable_shm;
  config.global_segment_size = 0;
  return cluster.MakeClient(config);
}

// Runs a shell command; returns its exit status (0 on success). Output goes to the test's stderr.
int RunCommand(const std::string& command) {
  int status = std::system(command.c_str());
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

Budget DefaultBudget() { return Budget{kRpc, kTransfer, milliseconds(1500), 2}; }

uint64_t RunSeed() { return std::random_device{}() | (uint64_t{std::random_device{}()} << 32); }

double SecondsSince(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

// Polls `done` until it is true or `timeout` passes.
bool WaitFor(const std::function<bool()>& done, milliseconds timeout,
             milliseconds poll = milliseconds(100)) {
  const auto deadline = Clock::now() + timeout;
  while (Clock::now() < deadline) {
    if (done()) return true;
    std::this_thread::sleep_for(poll);
  }
  return done();
}

// Waits until `count` fresh puts in a row succeed and read back correctly; returns the seconds it
// took, or -1 when `timeout` passed first.
double WaitForRecovery(Checker& checker, store::Client& client, const std::string& prefix,
                       int count, milliseconds timeout,
                       const master::ReplicateConfig& config = {}) {
  const auto start = Clock::now();
  int streak = 0;
  uint64_t n = 0;
  bool ok = WaitFor(
      [&] {
        const std::string key = absl::StrCat(prefix, "-", n++);
        if (checker.Put(client, key, 1, 4096, config).ok() && checker.Get(client, key).ok()) {
          ++streak;
        } else {
          streak = 0;
        }
        return streak >= count;
      },
      timeout, milliseconds(50));
  return ok ? SecondsSince(start) : -1;
}

// The segments holding `key`'s replicas, asked from the master directly.
std::vector<master::Replica> ReplicasOf(const std::string& master_address, const std::string& key) {
  auto master = store::MasterClient::Create(master_address, kRpc);
  if (!master.ok()) return {};
  auto locations = (*master)->BatchGetReplicaList({key});
  if (locations.empty() || !locations[0].ok()) return {};
  return locations[0]->replicas;
}

void ExpectClean(const Checker& checker) {
  Tally t = checker.Snapshot();
  EXPECT_EQ(t.wrong, 0u) << "wrong bytes were returned";
  EXPECT_EQ(t.late, 0u) << "calls exceeded their deadline budget (put " << t.max_put.count()
                        << " ms, get " << t.max_get.count() << " ms)";
}

// (1) kill -9 of stores at random points under a put/get load from several threads.
TEST(Fault, KillStores) {
  TestCluster cluster(FaultOptions({"--client_ttl=2"}));
  ASSERT_GE(cluster.StartMaster(), 0);
  for (int i = 0; i < 4; ++i) ASSERT_GE(cluster.StartStore(), 0);
  auto shm_client = MakeClient(cluster, /*enable_shm=*/true);
  auto tcp_client = MakeClient(cluster, /*enable_shm=*/false);
  ASSERT_NE(shm_client, nullptr);
  ASSERT_NE(tcp_client, nullptr);

  Checker checker("kill_stores", RunSeed(), DefaultBudget());
  master::ReplicateConfig two;
  two.replica_num = 2;
  Load load(checker, {.prefix = "ks", .config = two});
  load.Start({shm_client.get(), shm_client.get(), tcp_client.get(), tcp_client.get()});
  std::mt19937_64 random(RunSeed());
  int kills = 0;
  for (; kills < 5; ++kills) {
    std::this_thread::sleep_for(milliseconds(800 + random() % 1500));
    std::vector<int> alive;
    for (int i = 0; i < cluster.store_count(); ++i) {
      if (cluster.store(i).alive) alive.push_back(i);
    }
    cluster.KillStore(alive[random() % alive.size()]);
    ASSERT_GE(cluster.StartStore(), 0);  // a replacement joins
  }
  std::this_thread::sleep_for(milliseconds(1000));
  load.Stop();
  const Tally during = checker.Snapshot();

  // Recovery: dead segments leave the master after client_ttl; then fresh puts and gets work.
  const double recovery = WaitForRecovery(checker, *tcp_client, "ks-after", 10, seconds(20), two);
  checker.Print(
      absl::StrCat("kills=", kills, " iterations=", load.iterations(), " checksum_failures=",
                   shm_client->Stats().checksum_failures + tcp_client->Stats().checksum_failures,
                   " recovery_s=", recovery));
  ExpectClean(checker);
  EXPECT_GT(during.puts_ok, 0u);
  EXPECT_GT(during.gets_ok, 0u);
  EXPECT_GE(recovery, 0) << "puts and gets did not work again after the kills";
}

// (2) kill -9 of a client process between PutStart and PutEnd.
TEST(Fault, KillClientMidPut) {
  TestCluster cluster(FaultOptions({"--put_start_discard_timeout_sec=2"}));
  ASSERT_GE(cluster.StartMaster(), 0);
  for (int i = 0; i < 2; ++i) ASSERT_GE(cluster.StartStore(), 0);
  auto client = MakeClient(cluster, /*enable_shm=*/false);
  ASSERT_NE(client, nullptr);
  Checker checker("kill_client_mid_put", RunSeed(), DefaultBudget());

  std::string figures;
  for (const std::string point : {"put_after_start", "put_before_end"}) {
    SCOPED_TRACE(point);
    const std::string key = "crash-" + point;
    auto writer = test_support::ChildProcess::Start(
        {"/usr/bin/env", "YUEBING_TEST_FAULT_POINT=" + point,
         test_support::BuildPath("tests/fault/yb_fault_writer"), cluster.master_address(), key, "1",
         "65536", std::to_string(checker.seed())});
    ASSERT_TRUE(writer.ok()) << writer.status();
    auto status = (*writer)->Wait(seconds(20));
    ASSERT_TRUE(status.ok()) << "the writer neither died nor finished";
    ASSERT_TRUE(WIFSIGNALED(*status) && WTERMSIG(*status) == SIGKILL)
        << "the writer was meant to die at " << point << "; wait status " << *status;

    // The unfinished object is invisible (promise 2).
    auto exists = client->IsExist(key);
    ASSERT_TRUE(exists.ok()) << exists.status();
    EXPECT_FALSE(*exists);
    auto first = checker.Get(*client, key);
    EXPECT_EQ(ToErrorCode(first.status()), ErrorCode::kObjectNotFound) << first.status();

    // Another writer is not stuck forever: once the discard timeout passed, its put lands and
    // reads back as its own value (version 2), never the dead writer's bytes.
    const auto start = Clock::now();
    uint64_t version = 0;
    bool landed = WaitFor(
        [&] {
          if (!checker.Put(*client, key, 2, 65536).ok()) return false;
          auto got = checker.Get(*client, key);
          return got.ok() && VerifyValue(checker.seed(), key, *got, &version);
        },
        seconds(20), milliseconds(200));
    EXPECT_TRUE(landed) << "the key stayed blocked after the writer died";
    EXPECT_EQ(version, 2u) << "served the dead writer's unfinished value";
    absl::StrAppend(&figures, " ", point, "_unblocked_s=", SecondsSince(start));
  }
  checker.Print(absl::StrCat("discard_timeout_s=2", figures));
  ExpectClean(checker);
}

// (3) kill -9 of the master and a restart on the same port (no HA).
TEST(Fault, MasterRestart) {
  TestCluster cluster(FaultOptions({}));
  ASSERT_GE(cluster.StartMaster(), 0);
  for (int i = 0; i < 2; ++i) ASSERT_GE(cluster.StartStore(), 0);
  auto client = MakeClient(cluster, /*enable_shm=*/true);
  ASSERT_NE(client, nullptr);
  Checker checker("master_restart", RunSeed(), DefaultBudget());

  // On a fast machine the load below fills both 32 MB stores before the restart (CI's did, and
  // evicted these, the oldest objects). They are soft-pinned so that eviction takes the load's
  // objects first: a missing one then means the restart lost it.
  master::ReplicateConfig pinned;
  pinned.with_soft_pin = true;
  std::vector<std::string> before;
  for (int i = 0; i < 20; ++i) {
    before.push_back(absl::StrCat("mr-before-", i));
    ASSERT_TRUE(checker.Put(*client, before.back(), 1, 8192, pinned).ok());
  }
  Load load(checker, {.prefix = "mr"});
  load.Start({client.get(), client.get()});
  std::this_thread::sleep_for(milliseconds(1000));
  cluster.KillMaster();
  const Tally at_kill = checker.Snapshot();
  std::this_thread::sleep_for(milliseconds(3000));  // the outage, under load
  const Tally outage = checker.Snapshot();
  ASSERT_TRUE(cluster.RestartMaster());
  const auto restarted = Clock::now();
  // The load keeps running until its puts and gets succeed again.
  bool load_recovered = WaitFor(
      [&] {
        Tally t = checker.Snapshot();
        return t.gets_ok > outage.gets_ok + 5 && t.puts_ok > outage.puts_ok + 5;
      },
      seconds(5));  // reconnect backoff is capped at 1 s (store/channel_keeper.h)
  const double load_recovery = SecondsSince(restarted);
  load.Stop();
  const double recovery = WaitForRecovery(checker, *client, "mr-after", 10, seconds(10));

  // The stores report their segment manifests to the restarted master: the objects put before
  // the kill are readable again (the checker verifies their bytes) within 5 s of the restart
  // (issue 15's target; a store's report can trail the first successful calls under load).
  uint64_t old_readable = 0;
  std::string unreadable;
  for (const auto deadline = restarted + seconds(5);;) {
    old_readable = 0;
    unreadable.clear();
    for (const std::string& key : before) {
      auto got = checker.Get(*client, key);
      if (got.ok()) {
        ++old_readable;
      } else {
        absl::StrAppend(&unreadable, " ", key, ":", got.status().ToString());
      }
    }
    if (old_readable == before.size() || Clock::now() > deadline) break;
    std::this_thread::sleep_for(milliseconds(100));
  }
  uint64_t outage_errors = 0;
  for (const auto& [code, n] : outage.errors) outage_errors += n;
  for (const auto& [code, n] : at_kill.errors) outage_errors -= n;
  checker.Print(absl::StrCat("outage_s=3 outage_errors=", outage_errors,
                             " load_recovery_s=", load_recovery, " recovery_s=", recovery,
                             " old_keys_readable=", old_readable, "/", before.size()));
  ExpectClean(checker);
  EXPECT_GT(outage_errors, 0u) << "calls during the outage should fail";
  EXPECT_TRUE(load_recovered) << "the load did not recover after the master restart";
  EXPECT_GE(recovery, 0);
  EXPECT_EQ(old_readable, before.size()) << "objects put before the kill were lost:" << unreadable;
}

// (4) a store holding replicas stops responding (SIGSTOP), then continues (SIGCONT).
TEST(Fault, StoppedPeer) {
  TestCluster cluster(FaultOptions({}));
  ASSERT_GE(cluster.StartMaster(), 0);
  for (int i = 0; i < 3; ++i) ASSERT_GE(cluster.StartStore(), 0);
  auto client = MakeClient(cluster, /*enable_shm=*/false);
  ASSERT_NE(client, nullptr);
  Checker checker("stopped_peer", RunSeed(), DefaultBudget());
  master::ReplicateConfig two;
  two.replica_num = 2;
  std::vector<std::string> keys;
  for (int i = 0; i < 30; ++i) {
    keys.push_back(absl::StrCat("sp-", i));
    ASSERT_TRUE(checker.Put(*client, keys.back(), 1, 32768, two).ok());
  }
  // Warm every segment handle so the stop hits the data path, not only the handshake.
  for (const std::string& key : keys) ASSERT_TRUE(checker.Get(*client, key).ok());
  int on_stopped = 0;
  for (const std::string& key : keys) {
    for (const master::Replica& r : ReplicasOf(cluster.master_address(), key)) {
      on_stopped += r.segment_name == cluster.store(0).segment ? 1 : 0;
    }
  }
  ASSERT_GT(on_stopped, 0) << "the store to stop holds no replica";

  cluster.StopStore(0);
  const uint64_t failovers_before = client->Stats().replica_failovers;
  // Every key has a replica on a running store: each read fails over and succeeds.
  int batch_ok = 0;
  for (const auto& got : checker.BatchGet(*client, keys)) batch_ok += got.ok() ? 1 : 0;
  int single_ok = 0;
  for (int i = 0; i < 10; ++i) single_ok += checker.Get(*client, keys[i]).ok() ? 1 : 0;
  // A client that never talked to the stopped store must first open its segment
  // (a handshake the stopped process never answers): that too is bounded, once
  // per call, not once per key.
  auto fresh = MakeClient(cluster, /*enable_shm=*/false);
  ASSERT_NE(fresh, nullptr);
  int fresh_ok = 0;
  for (const auto& got : checker.BatchGet(*fresh, keys)) fresh_ok += got.ok() ? 1 : 0;
  for (int i = 0; i < 5; ++i) fresh_ok += checker.Get(*fresh, keys[i]).ok() ? 1 : 0;
  // Puts whose first replica goes to the stopped store fail within their deadline.
  master::ReplicateConfig to_stopped = two;
  to_stopped.preferred_segment = cluster.store(0).segment;
  int puts_ok = 0;
  for (int i = 0; i < 6; ++i) {
    puts_ok +=
        checker.Put(*client, absl::StrCat("sp-stopped-", i), 1, 32768, to_stopped).ok() ? 1 : 0;
  }
  const uint64_t failovers = client->Stats().replica_failovers - failovers_before;
  cluster.ContStore(0);
  const auto continued = Clock::now();
  bool all_back = WaitFor(
      [&] {
        int ok = 0;
        for (const auto& got : checker.BatchGet(*client, keys)) ok += got.ok() ? 1 : 0;
        return ok == static_cast<int>(keys.size());
      },
      seconds(15), milliseconds(200));
  const double reads_back = SecondsSince(continued);
  const double recovery = WaitForRecovery(checker, *client, "sp-after", 10, seconds(15), two);
  checker.Print(absl::StrCat("replicas_on_stopped=", on_stopped, " batch_ok=", batch_ok, "/",
                             keys.size(), " single_ok=", single_ok,
                             "/10 fresh_client_ok=", fresh_ok, "/", keys.size() + 5,
                             " puts_ok_while_stopped=", puts_ok, "/6 failovers=", failovers,
                             " reads_back_s=", reads_back, " recovery_s=", recovery));
  ExpectClean(checker);
  EXPECT_EQ(batch_ok, static_cast<int>(keys.size())) << "a read did not fail over";
  EXPECT_EQ(single_ok, 10);
  EXPECT_EQ(fresh_ok, static_cast<int>(keys.size()) + 5)
      << "a client new to the stopped store did not fail over within the deadline";
  EXPECT_GT(failovers, 0u);
  EXPECT_TRUE(all_back);
  EXPECT_GE(recovery, 0);
}

// A veth pair between this namespace and a fresh one; removed on destruction.
class Netns {
 public:
  Netns()
      : tag_(std::to_string(getpid() % 100000)),
        ns_("ybf" + tag_),
        outer_("ybfa" + tag_),
        inner_("ybfb" + tag_),
        subnet_(absl::StrCat("10.213.", getpid() % 250, ".")) {}
  ~Netns() {
    if (created_) {
      (void)RunCommand("ip netns del " + ns_ + " 2>/dev/null");
      (void)RunCommand("ip link del " + outer_ + " 2>/dev/null");
    }
  }
  // Returns an empty string on success, else why the namespace could not be made.
  std::string Create() {
    if (geteuid() != 0) return "not root";
    // Leftovers of an earlier run that was killed (same pid, by chance) would block the names.
    (void)RunCommand("ip netns del " + ns_ + " 2>/dev/null");
    (void)RunCommand("ip link del " + outer_ + " 2>/dev/null");
    if (RunCommand("ip netns add " + ns_) != 0) return "ip netns add failed";
    created_ = true;
    const std::vector<std::string> steps = {
        "ip link add " + outer_ + " type veth peer name " + inner_,
        "ip link set " + inner_ + " netns " + ns_,
        "ip addr add " + outer_ip() + "/30 dev " + outer_,
        "ip link set " + outer_ + " up",
        InNs("ip addr add " + inner_ip() + "/30 dev " + inner_),
        InNs("ip link set " + inner_ + " up"),
        InNs("ip link set lo up"),
    };
    for (const std::string& step : steps) {
      if (RunCommand(step) != 0) return "failed: " + step;
    }
    // Silent drops are the hard case (no RST, no ICMP): netem loss 100% where the kernel has it,
    // else a token bucket too small for any packet (tbf drops what exceeds its burst); taking the
    // link down (errors at once) is the last resort.
    for (const char* qdisc : {"netem loss 100%", "tbf rate 8bit burst 10 limit 1"}) {
      if (RunCommand("tc qdisc add dev " + outer_ + " root " + qdisc + " 2>/dev/null") == 0) {
        (void)RunCommand("tc qdisc del dev " + outer_ + " root");
        qdisc_ = qdisc;
        break;
      }
    }
    return "";
  }
  void Partition() {
    if (!qdisc_.empty()) {
      EXPECT_EQ(RunCommand("tc qdisc add dev " + outer_ + " root " + qdisc_), 0);
      EXPECT_EQ(RunCommand(InNs("tc qdisc add dev " + inner_ + " root " + qdisc_)), 0);
    } else {
      EXPECT_EQ(RunCommand("ip link set " + outer_ + " down"), 0);
    }
  }
  void Heal() {
    if (!qdisc_.empty()) {
      EXPECT_EQ(RunCommand("tc qdisc del dev " + outer_ + " root"), 0);
      EXPECT_EQ(RunCommand(InNs("tc qdisc del dev " + inner_ + " root")), 0);
    } else {
      EXPECT_EQ(RunCommand("ip link set " + outer_ + " up"), 0);
    }
  }
  std::vector<std::string> Prefix() const { return {"/usr/bin/env", "ip", "netns", "exec", ns_}; }
  std::string outer_ip() const { return subnet_ + "1"; }
  std::string inner_ip() const { return subnet_ + "2"; }
  std::string method() const {
    return qdisc_.empty() ? "link_down" : absl::StrReplaceAll(qdisc_, {{" ", "_"}, {"%", ""}});
  }

 private:
  std::string InNs(const std::string& command) const {
    return "ip netns exec " + ns_ + " " + command;
  }
  const std::string tag_, ns_, outer_, inner_, subnet_;
  bool created_ = false;
  std::string qdisc_;  // the qdisc that drops everything, or empty: take the link down
};

// (5) a store in its own network namespace, reached over a veth pair, is cut off mid-load and
// then reconnected.
TEST(Fault, NetworkPartition) {
  Netns netns;
  const std::string why = netns.Create();
  if (!why.empty()) GTEST_SKIP() << "network namespaces unavailable (" << why << ")";
  TestCluster cluster(FaultOptions({"--client_ttl=2"}, "64MB", "0.0.0.0"));
  ASSERT_GE(cluster.StartMaster(), 0);
  for (int i = 0; i < 2; ++i) ASSERT_GE(cluster.StartStore(), 0);
  const int far =
      cluster.StartStore({.prefix = netns.Prefix(),
                          .master_address = absl::StrCat(netns.outer_ip(), ":", cluster.rpc_port()),
                          .local_hostname = netns.inner_ip()});
  ASSERT_GE(far, 0);
  const std::string far_segment = cluster.store(far).segment;
  // No shared memory: a same-host client could otherwise read the far store's memory directly.
  auto client = MakeClient(cluster, /*enable_shm=*/false);
  ASSERT_NE(client, nullptr);
  Checker checker("network_partition", RunSeed(), DefaultBudget());

  // Half the puts prefer the far store with a single replica (reads must cross the link), half
  // keep two replicas (reads can fail over).
  Load load(checker, {.prefix = "np", .config_for = [&](uint64_t n) {
                        master::ReplicateConfig config;
                        config.replica_num = n % 2 == 0 ? 1 : 2;
                        config.preferred_segment = far_segment;
                        return config;
                      }});
  load.Start({client.get(), client.get(), client.get()});
  std::this_thread::sleep_for(milliseconds(2000));
  const Tally before = checker.Snapshot();
  netns.Partition();
  std::this_thread::sleep_for(milliseconds(5000));
  const Tally partitioned = checker.Snapshot();
  netns.Heal();
  const auto healed = Clock::now();
  std::this_thread::sleep_for(milliseconds(1000));
  load.Stop();

  // Recovery: a single-replica put lands on the far store again (it re-mounted after the master
  // dropped it) and reads back over the link. Each try first empties the cluster: the far store
  // may come back full (it restores the objects it held), and a put it has no room for goes to
  // another store instead of evicting there.
  master::ReplicateConfig far_only;
  far_only.preferred_segment = far_segment;
  uint64_t n = 0;
  bool far_back = WaitFor(
      [&] {
        if (!client->RemoveAll(/*force=*/true).ok()) return false;
        const std::string key = absl::StrCat("np-far-", n++);
        if (!checker.Put(*client, key, 1, 4096, far_only).ok()) return false;
        auto replicas = ReplicasOf(cluster.master_address(), key);
        return replicas.size() == 1 && replicas[0].segment_name == far_segment &&
               checker.Get(*client, key).ok();
      },
      seconds(25), milliseconds(200));
  const double far_recovery = SecondsSince(healed);
  uint64_t failed_during = 0;
  for (const auto& [code, count] : partitioned.errors) failed_during += count;
  for (const auto& [code, count] : before.errors) failed_during -= count;
  failed_during += partitioned.misses - before.misses;
  checker.Print(absl::StrCat("method=", netns.method(), " partition_s=5 ok_before=", before.gets_ok,
                             " failed_during=", failed_during, " far_store_back_s=", far_recovery));
  ExpectClean(checker);
  EXPECT_GT(before.gets_ok, 0u);
  EXPECT_GT(failed_during, 0u) << "the partition did not affect any call";
  EXPECT_TRUE(far_back) << "the far store did not come back after the partition healed";
}

// Writes `bytes` into process `pid`'s memory at `address` (the store's segment is shared memory,
// so the write lands in the very pages peers read).
bool PokeMemory(pid_t pid, uint64_t address, const std::string& bytes) {
  int fd = open(absl::StrCat("/proc/", pid, "/mem").c_str(), O_RDWR | O_CLOEXEC);
  if (fd < 0) return false;
  ssize_t n = pwrite(fd, bytes.data(), bytes.size(), static_cast<off_t>(address));
  close(fd);
  return n == static_cast<ssize_t>(bytes.size());
}

std::string PeekMemory(pid_t pid, uint64_t address, size_t length) {
  std::string bytes(length, '\0');
  int fd = open(absl::StrCat("/proc/", pid, "/mem").c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return "";
  ssize_t n = pread(fd, bytes.data(), length, static_cast<off_t>(address));
  close(fd);
  return n == static_cast<ssize_t>(length) ? bytes : "";
}

// Flips one random bit of the replica `r` of an object of `size` bytes held by process `pid`.
bool FlipBit(pid_t pid, const master::Replica& r, uint64_t size, std::mt19937_64& random) {
  const uint64_t at = r.address + random() % size;
  std::string byte = PeekMemory(pid, at, 1);
  if (byte.size() != 1) return false;
  byte[0] = static_cast<char>(byte[0] ^ (1 << (random() % 8)));
  return PokeMemory(pid, at, byte);
}

// (6) bit flips in the segment memory of stores holding objects.
TEST(Fault, BitFlips) {
  TestCluster cluster(FaultOptions({}));
  ASSERT_GE(cluster.StartMaster(), 0);
  for (int i = 0; i < 2; ++i) ASSERT_GE(cluster.StartStore(), 0);
  auto shm_client = MakeClient(cluster, /*enable_shm=*/true);
  auto tcp_client = MakeClient(cluster, /*enable_shm=*/false);
  ASSERT_NE(shm_client, nullptr);
  ASSERT_NE(tcp_client, nullptr);
  Checker checker("bit_flips", RunSeed(), DefaultBudget());
  master::ReplicateConfig two;
  two.replica_num = 2;
  constexpr uint64_t kSize = 16384;
  constexpr int kKeys = 40;  // the first half: one replica flipped; the second half: both
  std::vector<std::string> keys;
  for (int i = 0; i < kKeys; ++i) {
    keys.push_back(absl::StrCat("bf-", i));
    ASSERT_TRUE(checker.Put(*shm_client, keys.back(), 1, kSize, two).ok());
  }
  std::mt19937_64 random(RunSeed());
  int flipped = 0;
  for (int i = 0; i < kKeys; ++i) {
    std::vector<master::Replica> replicas = ReplicasOf(cluster.master_address(), keys[i]);
    ASSERT_EQ(replicas.size(), 2u) << keys[i];
    for (size_t r = 0; r < (i < kKeys / 2 ? 1u : 2u); ++r) {
      int owner = -1;
      for (int s = 0; s < cluster.store_count(); ++s) {
        if (cluster.store(s).segment == replicas[r].segment_name) owner = s;
      }
      ASSERT_GE(owner, 0) << "replica on an unknown segment " << replicas[r].segment_name;
      ASSERT_TRUE(FlipBit(cluster.store(owner).process->pid(), replicas[r], kSize, random))
          << "cannot write the store's memory through /proc/<pid>/mem";
      ++flipped;
    }
  }
  // One flipped replica: the other replica serves the right bytes. Both flipped: a miss. Each
  // key is read several times through both paths so the flipped replica is read too.
  int one_ok = 0, both_missed = 0;
  for (store::Client* client : {shm_client.get(), tcp_client.get()}) {
    for (int round = 0; round < 3; ++round) {
      for (int i = 0; i < kKeys; ++i) {
        auto got = checker.Get(*client, keys[i]);
        if (i < kKeys / 2) {
          one_ok += got.ok() ? 1 : 0;
        } else {
          both_missed += ToErrorCode(got.status()) == ErrorCode::kObjectNotFound ? 1 : 0;
        }
      }
    }
  }
  const uint64_t failures =
      shm_client->Stats().checksum_failures + tcp_client->Stats().checksum_failures;
  // The flips are real and the checker sees them on its own: a client with checksums off gets
  // bytes that fail the checker's verification (these reads are not part of the tally).
  store::ClientConfig unchecked;
  unchecked.master_server_address = cluster.master_address();
  unchecked.enable_checksum = false;
  auto raw = store::Client::Create(unchecked);
  ASSERT_TRUE(raw.ok()) << raw.status();
  auto corrupt = (*raw)->Get(keys[kKeys - 1]);
  ASSERT_TRUE(corrupt.ok()) << corrupt.status();
  EXPECT_FALSE(VerifyValue(checker.seed(), keys[kKeys - 1], *corrupt))
      << "a flipped replica read without checksums should fail the checker";
  checker.Print(absl::StrCat("flipped_replicas=", flipped, " one_flipped_ok=", one_ok, "/",
                             6 * kKeys / 2, " both_flipped_missed=", both_missed, "/",
                             6 * kKeys / 2, " checksum_failures=", failures));
  ExpectClean(checker);
  EXPECT_EQ(one_ok, 6 * kKeys / 2);
  EXPECT_EQ(both_missed, 6 * kKeys / 2);
  // Every read of a doubly flipped key fails both checksums; singly flipped keys add some more.
  EXPECT_GE(failures, static_cast<uint64_t>(2 * 6 * kKeys / 2));
  EXPECT_LE(failures, static_cast<uint64_t>(2 * 6 * kKeys / 2 + 6 * kKeys / 2));
}

}  // namespace
}  // namespace yuebing::fault
