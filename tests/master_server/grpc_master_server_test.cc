// The gRPC adapter of the master over a real channel on 127.0.0.1: status codes, validation,
// terms, metrics, and survival of arbitrary requests.
#include "master/grpc_master_server.h"

#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <memory>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "master.grpc.pb.h"
#include "master/master_metrics.h"
#include "yuebing/common/clock.h"
#include "yuebing/common/error_code.h"
#include "yuebing/common/limits.h"
#include "yuebing/master/master_service.h"

namespace yuebing::master {
namespace {

namespace rpc = ::yuebing::rpc;

constexpr int32_t kOk = 0;
constexpr int32_t kInvalidParams = static_cast<int32_t>(ErrorCode::kInvalidParams);
constexpr int32_t kNotFound = static_cast<int32_t>(ErrorCode::kObjectNotFound);
constexpr int32_t kHasLease = static_cast<int32_t>(ErrorCode::kObjectHasLease);
constexpr int32_t kAlreadyExists = static_cast<int32_t>(ErrorCode::kObjectAlreadyExists);
constexpr uint64_t kSegmentBase = 0x7f0000000000;
constexpr uint64_t kSegmentSize = 64 << 20;
const std::string kClient = "0123456789abcdef0123456789abcdef";

class GrpcMasterServerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    service_ = std::make_unique<MasterService>(MasterOptions{}, clock_);
    GrpcMasterServer::Options options;
    options.term_provider = [this] { return term_.load(); };
    options.metrics = &metrics_;
    auto server = GrpcMasterServer::Start("127.0.0.1:0", service_.get(), options);
    ASSERT_TRUE(server.ok()) << server.status();
    server_ = std::move(server).value();
    ASSERT_NE(server_->port(), 0);
    stub_ = rpc::MasterService::NewStub(grpc::CreateChannel(
        absl::StrCat("127.0.0.1:", server_->port()), grpc::InsecureChannelCredentials()));
  }

  static std::unique_ptr<grpc::ClientContext> Context() {
    auto context = std::make_unique<grpc::ClientContext>();
    context->set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
    return context;
  }

  rpc::MountSegmentReply Mount(const std::string& name, const std::string& client = kClient) {
    rpc::MountSegmentRequest request;
    request.set_client_id(client);
    request.mutable_segment()->set_name(name);
    request.mutable_segment()->set_base(kSegmentBase);
    request.mutable_segment()->set_size(kSegmentSize);
    rpc::MountSegmentReply reply;
    EXPECT_TRUE(stub_->MountSegment(Context().get(), request, &reply).ok());
    return reply;
  }

  rpc::BatchPutStartReply PutStart(const std::vector<std::string>& keys,
                                   const std::vector<uint64_t>& sizes, bool upsert = false) {
    rpc::BatchPutStartRequest request;
    request.set_client_id(kClient);
    for (const auto& key : keys) request.add_keys(key);
    for (uint64_t size : sizes) request.add_sizes(size);
    request.mutable_config()->set_replica_num(1);
    request.set_upsert(upsert);
    rpc::BatchPutStartReply reply;
    EXPECT_TRUE(stub_->BatchPutStart(Context().get(), request, &reply).ok());
    return reply;
  }

  rpc::BatchStatusReply PutEnd(const std::vector<std::string>& keys,
                               const std::vector<uint64_t>& checksums) {
    rpc::BatchPutEndRequest request;
    request.set_client_id(kClient);
    for (const auto& key : keys) request.add_keys(key);
    for (uint64_t checksum : checksums) request.add_checksums(checksum);
    rpc::BatchStatusReply reply;
    EXPECT_TRUE(stub_->BatchPutEnd(Context().get(), request, &reply).ok());
    return reply;
  }

  // Puts complete objects of the given sizes.
  void Put(const std::vector<std::string>& keys, const std::vector<uint64_t>& sizes) {
    auto started = PutStart(keys, sizes);
    ASSERT_EQ(started.status().code(), kOk) << started.status().message();
    ASSERT_EQ(started.results_size(), static_cast<int>(keys.size()));
    for (const auto& result : started.results()) {
      ASSERT_EQ(result.status().code(), kOk) << result.status().message();
    }
    auto ended = PutEnd(keys, std::vector<uint64_t>(keys.size(), 42));
    ASSERT_EQ(ended.status().code(), kOk);
    for (const auto& status : ended.statuses()) ASSERT_EQ(status.code(), kOk) << status.message();
  }

  static rpc::BatchKeysRequest Keys(const std::vector<std::string>& keys, bool force = false) {
    rpc::BatchKeysRequest request;
    request.set_client_id(kClient);
    for (const auto& key : keys) request.add_keys(key);
    request.set_force(force);
    return request;
  }

  rpc::BatchGetReplicaListReply Get(const std::vector<std::string>& keys) {
    rpc::BatchGetReplicaListReply reply;
    EXPECT_TRUE(stub_->BatchGetReplicaList(Context().get(), Keys(keys), &reply).ok());
    return reply;
  }

  rpc::BatchStatusReply Remove(const std::vector<std::string>& keys, bool force = false) {
    rpc::BatchStatusReply reply;
    EXPECT_TRUE(stub_->BatchRemove(Context().get(), Keys(keys, force), &reply).ok());
    return reply;
  }

  FakeClock clock_;
  std::atomic<uint64_t> term_{0};
  MasterMetrics metrics_;
  std::unique_ptr<MasterService> service_;
  std::unique_ptr<GrpcMasterServer> server_;
  std::unique_ptr<rpc::MasterService::Stub> stub_;
};

TEST_F(GrpcMasterServerTest, MountPutGetExistRoundTrip) {
  auto mounted = Mount("127.0.0.1:12345");
  ASSERT_EQ(mounted.status().code(), kOk) << mounted.status().message();
  EXPECT_GT(mounted.epoch(), 0u);

  auto started = PutStart({"k1", "k2"}, {100, 200});
  ASSERT_EQ(started.status().code(), kOk);
  ASSERT_EQ(started.results_size(), 2);
  for (int i = 0; i < 2; ++i) {
    const auto& result = started.results(i);
    ASSERT_EQ(result.status().code(), kOk) << result.status().message();
    ASSERT_EQ(result.replicas_size(), 1);
    const auto& replica = result.replicas(0);
    EXPECT_EQ(replica.segment_name(), "127.0.0.1:12345");
    EXPECT_EQ(replica.epoch(), mounted.epoch());
    EXPECT_EQ(replica.size(), i == 0 ? 100u : 200u);
    EXPECT_GE(replica.address(), kSegmentBase);
    EXPECT_LE(replica.address() + replica.size(), kSegmentBase + kSegmentSize);
  }
  // In progress: invisible.
  auto early = Get({"k1"});
  ASSERT_EQ(early.results_size(), 1);
  EXPECT_EQ(early.results(0).status().code(), kNotFound);

  auto ended = PutEnd({"k1", "k2"}, {7, 8});
  ASSERT_EQ(ended.status().code(), kOk);
  ASSERT_EQ(ended.statuses_size(), 2);
  EXPECT_EQ(ended.statuses(0).code(), kOk);
  EXPECT_EQ(ended.statuses(1).code(), kOk);

  auto got = Get({"k1", "k2"});
  ASSERT_EQ(got.status().code(), kOk);
  ASSERT_EQ(got.results_size(), 2);
  EXPECT_EQ(got.results(0).status().code(), kOk);
  EXPECT_EQ(got.results(0).size(), 100u);
  EXPECT_EQ(got.results(0).checksum(), 7u);
  EXPECT_EQ(got.results(1).checksum(), 8u);
  EXPECT_EQ(got.results(0).lease_ttl_ms(), 10000u);
  ASSERT_EQ(got.results(0).replicas_size(), 1);
  EXPECT_EQ(got.results(0).replicas(0).address(), started.results(0).replicas(0).address());

  rpc::BatchExistReply exist;
  ASSERT_TRUE(stub_->BatchExist(Context().get(), Keys({"k1", "missing", "k2"}), &exist).ok());
  ASSERT_EQ(exist.exists_size(), 3);
  EXPECT_TRUE(exist.exists(0));
  EXPECT_FALSE(exist.exists(1));
  EXPECT_TRUE(exist.exists(2));

  rpc::GetSizeRequest size_request;
  size_request.set_key("k2");
  rpc::GetSizeReply size;
  ASSERT_TRUE(stub_->GetSize(Context().get(), size_request, &size).ok());
  EXPECT_EQ(size.status().code(), kOk);
  EXPECT_EQ(size.size(), 200u);

  // Immutable: a second put of the same key is refused per key.
  auto again = PutStart({"k1"}, {100});
  ASSERT_EQ(again.results_size(), 1);
  EXPECT_EQ(again.results(0).status().code(), kAlreadyExists);
  // Upsert takes the other path and succeeds.
  auto upsert = PutStart({"k1"}, {300}, /*upsert=*/true);
  ASSERT_EQ(upsert.results_size(), 1);
  EXPECT_EQ(upsert.results(0).status().code(), kOk) << upsert.results(0).status().message();
}

TEST_F(GrpcMasterServerTest, RemoveOfLeasedObjectIsRefusedUnlessForced) {
  ASSERT_EQ(Mount("seg").status().code(), kOk);
  Put({"leased"}, {64});
  auto got = Get({"leased"});
  ASSERT_EQ(got.results(0).status().code(), kOk);

  auto refused = Remove({"leased"});
  ASSERT_EQ(refused.status().code(), kOk);
  ASSERT_EQ(refused.statuses_size(), 1);
  EXPECT_EQ(refused.statuses(0).code(), kHasLease);
  EXPECT_FALSE(refused.statuses(0).message().empty());

  auto forced = Remove({"leased"}, /*force=*/true);
  ASSERT_EQ(forced.statuses_size(), 1);
  EXPECT_EQ(forced.statuses(0).code(), kOk);
  EXPECT_EQ(Get({"leased"}).results(0).status().code(), kNotFound);
}

TEST_F(GrpcMasterServerTest, MissesAreNotFound) {
  auto got = Get({"nothing"});
  ASSERT_EQ(got.status().code(), kOk);
  ASSERT_EQ(got.results_size(), 1);
  EXPECT_EQ(got.results(0).status().code(), kNotFound);
  EXPECT_EQ(got.results(0).replicas_size(), 0);

  rpc::GetSizeRequest request;
  request.set_key("nothing");
  rpc::GetSizeReply size;
  ASSERT_TRUE(stub_->GetSize(Context().get(), request, &size).ok());
  EXPECT_EQ(size.status().code(), kNotFound);

  EXPECT_EQ(Remove({"nothing"}).statuses(0).code(), kNotFound);
  EXPECT_EQ(metrics_.misses(), 1u);
  EXPECT_EQ(metrics_.hits(), 0u);
}

TEST_F(GrpcMasterServerTest, MismatchedListsAreRefusedWhole) {
  ASSERT_EQ(Mount("seg").status().code(), kOk);
  auto started = PutStart({"a", "b"}, {10});
  EXPECT_EQ(started.status().code(), kInvalidParams);
  EXPECT_FALSE(started.status().message().empty());
  EXPECT_EQ(started.results_size(), 0);
  EXPECT_FALSE(service_->Exist("a"));

  Put({"c", "d"}, {10, 10});
  auto ended = PutEnd({"c", "d"}, {1, 2, 3});
  EXPECT_EQ(ended.status().code(), kInvalidParams);
  EXPECT_EQ(ended.statuses_size(), 0);
}

TEST_F(GrpcMasterServerTest, OversizeBatchesAreRefusedWhole) {
  ASSERT_EQ(Mount("seg").status().code(), kOk);
  std::vector<std::string> keys;
  for (size_t i = 0; i <= limits::kMaxBatchKeys; ++i) keys.push_back(absl::StrCat("key-", i));

  auto started = PutStart(keys, std::vector<uint64_t>(keys.size(), 1));
  EXPECT_EQ(started.status().code(), kInvalidParams);
  EXPECT_EQ(started.results_size(), 0);
  EXPECT_EQ(service_->Stats().objects, 0u);

  EXPECT_EQ(Get(keys).status().code(), kInvalidParams);
  EXPECT_EQ(Remove(keys).status().code(), kInvalidParams);
  rpc::BatchExistReply exist;
  ASSERT_TRUE(stub_->BatchExist(Context().get(), Keys(keys), &exist).ok());
  EXPECT_EQ(exist.status().code(), kInvalidParams);
  EXPECT_EQ(exist.exists_size(), 0);
  EXPECT_EQ(PutEnd(keys, {}).status().code(), kInvalidParams);
  rpc::BatchStatusReply revoked;
  ASSERT_TRUE(stub_->BatchPutRevoke(Context().get(), Keys(keys), &revoked).ok());
  EXPECT_EQ(revoked.status().code(), kInvalidParams);

  // Exactly at the limit is fine.
  keys.pop_back();
  ASSERT_TRUE(stub_->BatchExist(Context().get(), Keys(keys), &exist).ok());
  EXPECT_EQ(exist.status().code(), kOk);
  EXPECT_EQ(exist.exists_size(), static_cast<int>(limits::kMaxBatchKeys));
  EXPECT_EQ(metrics_.Rpc(RpcOp::kBatchExist).failed, 1u);
}

TEST_F(GrpcMasterServerTest, ClientIdsAreChecked) {
  EXPECT_EQ(Mount("seg", "").status().code(), kInvalidParams);
  EXPECT_EQ(Mount("seg", std::string(limits::kMaxClientIdBytes + 1, 'a')).status().code(),
            kInvalidParams);
  EXPECT_EQ(service_->Stats().segments.size(), 0u);

  rpc::MountSegmentRequest wraps;
  wraps.set_client_id(kClient);
  wraps.mutable_segment()->set_name("wraps");
  wraps.mutable_segment()->set_base(~uint64_t{0} - 10);
  wraps.mutable_segment()->set_size(100);
  rpc::MountSegmentReply reply;
  ASSERT_TRUE(stub_->MountSegment(Context().get(), wraps, &reply).ok());
  EXPECT_EQ(reply.status().code(), kInvalidParams);
}

TEST_F(GrpcMasterServerTest, PingAndUnmount) {
  rpc::PingRequest ping;
  ping.set_client_id(kClient);
  rpc::PingReply pong;
  ASSERT_TRUE(stub_->Ping(Context().get(), ping, &pong).ok());
  EXPECT_EQ(pong.status().code(), kOk);
  EXPECT_TRUE(pong.need_remount());

  ASSERT_EQ(Mount("seg").status().code(), kOk);
  ASSERT_TRUE(stub_->Ping(Context().get(), ping, &pong).ok());
  EXPECT_FALSE(pong.need_remount());

  rpc::UnmountSegmentRequest unmount;
  unmount.set_client_id(kClient);
  unmount.set_name("no-such-segment");
  rpc::StatusReply status;
  ASSERT_TRUE(stub_->UnmountSegment(Context().get(), unmount, &status).ok());
  EXPECT_EQ(status.status().code(), static_cast<int32_t>(ErrorCode::kSegmentNotFound));
  unmount.set_name("seg");
  ASSERT_TRUE(stub_->UnmountSegment(Context().get(), unmount, &status).ok());
  EXPECT_EQ(status.status().code(), kOk);
  EXPECT_EQ(service_->Stats().segments.size(), 0u);
}

TEST_F(GrpcMasterServerTest, RemoveByRegexAndRemoveAll) {
  ASSERT_EQ(Mount("seg").status().code(), kOk);
  Put({"layer-1", "layer-2", "other"}, {8, 8, 8});

  rpc::RemoveByRegexRequest empty;
  rpc::RemoveCountReply count;
  ASSERT_TRUE(stub_->RemoveByRegex(Context().get(), empty, &count).ok());
  EXPECT_EQ(count.status().code(), kInvalidParams);

  rpc::RemoveByRegexRequest too_long;
  too_long.set_pattern(std::string(limits::kMaxRegexBytes + 1, 'a'));
  ASSERT_TRUE(stub_->RemoveByRegex(Context().get(), too_long, &count).ok());
  EXPECT_EQ(count.status().code(), kInvalidParams);

  rpc::RemoveByRegexRequest layers;
  layers.set_pattern("layer-.*");
  ASSERT_TRUE(stub_->RemoveByRegex(Context().get(), layers, &count).ok());
  EXPECT_EQ(count.status().code(), kOk);
  EXPECT_EQ(count.removed(), 2u);

  rpc::RemoveAllRequest all;
  ASSERT_TRUE(stub_->RemoveAll(Context().get(), all, &count).ok());
  EXPECT_EQ(count.status().code(), kOk);
  EXPECT_EQ(count.removed(), 1u);
  EXPECT_EQ(service_->Stats().objects, 0u);
}

TEST_F(GrpcMasterServerTest, EveryReplyCarriesTheTerm) {
  term_.store(7);
  rpc::MountSegmentReply mount = Mount("seg");
  EXPECT_EQ(mount.term(), 7u);
  EXPECT_EQ(Mount("", "").term(), 7u);  // errors too

  rpc::StatusReply status;
  rpc::UnmountSegmentRequest unmount;
  ASSERT_TRUE(stub_->UnmountSegment(Context().get(), unmount, &status).ok());
  EXPECT_EQ(status.term(), 7u);

  rpc::PingRequest ping;
  ping.set_client_id(kClient);
  rpc::PingReply pong;
  ASSERT_TRUE(stub_->Ping(Context().get(), ping, &pong).ok());
  EXPECT_EQ(pong.term(), 7u);

  EXPECT_EQ(PutStart({"t"}, {8}).term(), 7u);
  EXPECT_EQ(PutStart({"t", "u"}, {8}).term(), 7u);
  EXPECT_EQ(PutEnd({"t"}, {}).term(), 7u);
  rpc::BatchStatusReply revoked;
  ASSERT_TRUE(stub_->BatchPutRevoke(Context().get(), Keys({"t"}), &revoked).ok());
  EXPECT_EQ(revoked.term(), 7u);
  EXPECT_EQ(Get({"t"}).term(), 7u);
  rpc::BatchExistReply exist;
  ASSERT_TRUE(stub_->BatchExist(Context().get(), Keys({"t"}), &exist).ok());
  EXPECT_EQ(exist.term(), 7u);
  EXPECT_EQ(Remove({"t"}).term(), 7u);
  rpc::GetSizeRequest size_request;
  rpc::GetSizeReply size;
  ASSERT_TRUE(stub_->GetSize(Context().get(), size_request, &size).ok());
  EXPECT_EQ(size.term(), 7u);
  rpc::RemoveCountReply count;
  ASSERT_TRUE(stub_->RemoveByRegex(Context().get(), rpc::RemoveByRegexRequest(), &count).ok());
  EXPECT_EQ(count.term(), 7u);
  ASSERT_TRUE(stub_->RemoveAll(Context().get(), rpc::RemoveAllRequest(), &count).ok());
  EXPECT_EQ(count.term(), 7u);

  term_.store(9);
  EXPECT_EQ(Get({"t"}).term(), 9u);
}

// A segment mounted for restore has an owner that keeps a manifest: BatchPutEnd answers only
// once that owner has acknowledged the journal entries of the put (so a master killed after the
// reply loses none of it), and after at most 500 ms when the owner does not (counted).
TEST_F(GrpcMasterServerTest, PutEndWaitsUntilTheSegmentOwnerAcknowledgesTheJournal) {
  rpc::MountSegmentRequest mount;
  mount.set_client_id(kClient);
  mount.mutable_segment()->set_name("journaled");
  mount.mutable_segment()->set_base(kSegmentBase);
  mount.mutable_segment()->set_size(kSegmentSize);
  mount.set_restoring(true);
  rpc::MountSegmentReply mounted;
  ASSERT_TRUE(stub_->MountSegment(Context().get(), mount, &mounted).ok());
  ASSERT_EQ(mounted.status().code(), kOk);
  rpc::RestoreObjectsRequest restore;
  restore.set_client_id(kClient);
  restore.set_segment_name("journaled");
  restore.set_last(true);
  rpc::BatchStatusReply restored;
  ASSERT_TRUE(stub_->RestoreObjects(Context().get(), restore, &restored).ok());
  ASSERT_EQ(restored.status().code(), kOk);
  auto pull = [&](uint64_t journal_id, uint64_t ack) {
    rpc::PullJournalRequest request;
    request.set_client_id(kClient);
    request.set_journal_id(journal_id);
    request.set_ack(ack);
    rpc::PullJournalReply reply;
    EXPECT_TRUE(stub_->PullJournal(Context().get(), request, &reply).ok());
    EXPECT_EQ(reply.status().code(), kOk);
    return reply;
  };
  using Clock = std::chrono::steady_clock;
  const rpc::PullJournalReply first = pull(0, 0);  // nothing queued yet

  // Acknowledged while the PutEnd waits: it answers then, not at the bound.
  ASSERT_EQ(PutStart({"acked"}, {4096}).results(0).status().code(), kOk);
  std::atomic<bool> ended{false};
  Clock::time_point ended_at;
  std::thread put_end([&] {
    EXPECT_EQ(PutEnd({"acked"}, {42}).statuses(0).code(), kOk);
    ended_at = Clock::now();
    ended = true;
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(150));
  EXPECT_FALSE(ended.load()) << "PutEnd answered before the owner had the put";
  const rpc::PullJournalReply entries = pull(first.journal_id(), 0);
  ASSERT_GE(entries.entries_size(), 1);
  EXPECT_EQ(entries.entries(0).key(), "acked");
  const Clock::time_point acked_at = Clock::now();
  pull(entries.journal_id(), entries.last_seq());
  put_end.join();
  EXPECT_LT(ended_at - acked_at, std::chrono::milliseconds(250));
  EXPECT_EQ(metrics_.manifest_lags(), 0u);

  // Never acknowledged: answered OK at the bound, and counted.
  ASSERT_EQ(PutStart({"lagging"}, {4096}).results(0).status().code(), kOk);
  const Clock::time_point start = Clock::now();
  EXPECT_EQ(PutEnd({"lagging"}, {42}).statuses(0).code(), kOk);
  EXPECT_GE(Clock::now() - start, std::chrono::milliseconds(450));
  EXPECT_EQ(metrics_.manifest_lags(), 1u);

  // A segment mounted without restoring keeps no manifest: nothing to wait for.
  rpc::MountSegmentRequest plain = mount;
  plain.set_client_id("fedcba9876543210fedcba9876543210");
  plain.mutable_segment()->set_name("plain");
  plain.mutable_segment()->set_base(kSegmentBase + kSegmentSize);
  plain.set_restoring(false);
  ASSERT_TRUE(stub_->MountSegment(Context().get(), plain, &mounted).ok());
  rpc::UnmountSegmentRequest unmount;
  unmount.set_client_id(kClient);
  unmount.set_name("journaled");
  rpc::StatusReply unmounted;
  ASSERT_TRUE(stub_->UnmountSegment(Context().get(), unmount, &unmounted).ok());
  ASSERT_EQ(unmounted.status().code(), kOk);
  const Clock::time_point plain_start = Clock::now();
  Put({"plain-key"}, {4096});
  EXPECT_LT(Clock::now() - plain_start, std::chrono::milliseconds(400));
  EXPECT_EQ(metrics_.manifest_lags(), 1u);
}

TEST_F(GrpcMasterServerTest, MetricsCountRpcsHitsAndMisses) {
  ASSERT_EQ(Mount("seg").status().code(), kOk);
  Put({"a", "b"}, {16, 16});
  auto got = Get({"a", "b", "c"});
  ASSERT_EQ(got.results_size(), 3);
  EXPECT_EQ(metrics_.hits(), 2u);
  EXPECT_EQ(metrics_.misses(), 1u);

  const auto get = metrics_.Rpc(RpcOp::kBatchGetReplicaList);
  EXPECT_EQ(get.requests, 1u);
  EXPECT_EQ(get.failed, 0u);
  EXPECT_EQ(get.keys, 3u);
  EXPECT_EQ(get.key_errors, 1u);
  uint64_t in_buckets = 0;
  for (uint64_t n : get.buckets) in_buckets += n;
  EXPECT_EQ(in_buckets, 1u);
  EXPECT_EQ(metrics_.Rpc(RpcOp::kBatchPutStart).requests, 1u);
  EXPECT_EQ(metrics_.Rpc(RpcOp::kBatchPutEnd).keys, 2u);
  EXPECT_EQ(metrics_.Rpc(RpcOp::kMountSegment).requests, 1u);
}

// Arbitrary (seeded) requests: every call gets an answer and the server keeps serving.
TEST_F(GrpcMasterServerTest, ArbitraryRequestsNeverBreakTheServer) {
  ASSERT_EQ(Mount("seg").status().code(), kOk);
  std::mt19937_64 rng(20240611);
  auto pick = [&rng](uint64_t n) { return n == 0 ? 0 : rng() % n; };
  auto key = [&]() -> std::string {
    switch (pick(5)) {
      case 0:
        return "";
      case 1:
        return std::string(5000 + pick(3000), 'k');
      case 2:
        return absl::StrCat("key-", pick(40));
      default: {
        std::string out(pick(64), ' ');
        for (char& c : out) c = static_cast<char>(0x20 + pick(0x5f));
        return out;
      }
    }
  };
  auto size = [&]() -> uint64_t {
    switch (pick(4)) {
      case 0:
        return 0;
      case 1:
        return ~uint64_t{0} - pick(3);
      case 2:
        return kSegmentSize + pick(2);
      default:
        return 1 + pick(1 << 20);
    }
  };
  for (int round = 0; round < 300; ++round) {
    const int keys = static_cast<int>(pick(6));
    rpc::BatchPutStartRequest put;
    put.set_client_id(pick(8) == 0 ? std::string(100, 'x') : kClient);
    for (int i = 0; i < keys; ++i) put.add_keys(key());
    const int sizes = pick(4) == 0 ? static_cast<int>(pick(6)) : keys;
    for (int i = 0; i < sizes; ++i) put.add_sizes(size());
    put.mutable_config()->set_replica_num(static_cast<uint32_t>(pick(3) == 0 ? rng() : pick(4)));
    put.mutable_config()->set_with_soft_pin(pick(2) == 0);
    put.mutable_config()->set_with_hard_pin(pick(2) == 0);
    put.mutable_config()->set_preferred_segment(pick(2) == 0 ? "seg" : key());
    put.set_upsert(pick(3) == 0);
    rpc::BatchPutStartReply put_reply;
    ASSERT_TRUE(stub_->BatchPutStart(Context().get(), put, &put_reply).ok());

    rpc::BatchPutEndRequest end;
    end.set_client_id(pick(5) == 0 ? "someone-else" : kClient);
    for (const auto& k : put.keys()) end.add_keys(k);
    if (pick(2) == 0) {
      for (int i = 0; i < end.keys_size(); ++i) end.add_checksums(rng());
    }
    rpc::BatchStatusReply end_reply;
    ASSERT_TRUE(stub_->BatchPutEnd(Context().get(), end, &end_reply).ok());

    rpc::BatchKeysRequest keys_request = Keys({key(), key(), absl::StrCat("key-", pick(40))});
    keys_request.set_force(pick(2) == 0);
    rpc::BatchGetReplicaListReply get_reply;
    ASSERT_TRUE(stub_->BatchGetReplicaList(Context().get(), keys_request, &get_reply).ok());
    rpc::BatchStatusReply status_reply;
    if (pick(3) == 0) {
      ASSERT_TRUE(stub_->BatchRemove(Context().get(), keys_request, &status_reply).ok());
    } else {
      ASSERT_TRUE(stub_->BatchPutRevoke(Context().get(), keys_request, &status_reply).ok());
    }
    rpc::GetSizeRequest size_request;
    size_request.set_key(key());
    rpc::GetSizeReply size_reply;
    ASSERT_TRUE(stub_->GetSize(Context().get(), size_request, &size_reply).ok());
  }
  rpc::RemoveByRegexRequest bad_regex;
  bad_regex.set_pattern("([unclosed");
  rpc::RemoveCountReply count;
  ASSERT_TRUE(stub_->RemoveByRegex(Context().get(), bad_regex, &count).ok());
  EXPECT_EQ(count.status().code(), kInvalidParams);
  // Still serving normally (on a fresh segment: unfinished puts may have filled the first one).
  ASSERT_EQ(Mount("seg-after").status().code(), kOk);
  Put({"after-fuzz"}, {128});
  EXPECT_EQ(Get({"after-fuzz"}).results(0).status().code(), kOk);
}

TEST_F(GrpcMasterServerTest, PortInUseIsAnError) {
  auto second =
      GrpcMasterServer::Start(absl::StrCat("127.0.0.1:", server_->port()), service_.get());
  ASSERT_FALSE(second.ok());
  EXPECT_EQ(second.status().code(), absl::StatusCode::kUnavailable) << second.status();
  // The first one is unaffected.
  EXPECT_EQ(Mount("seg").status().code(), kOk);
}

TEST_F(GrpcMasterServerTest, BadStartArgumentsAndIdempotentShutdown) {
  EXPECT_FALSE(GrpcMasterServer::Start("127.0.0.1:0", nullptr).ok());
  EXPECT_FALSE(GrpcMasterServer::Start("no-port", service_.get()).ok());
  EXPECT_FALSE(GrpcMasterServer::Start("127.0.0.1:99999", service_.get()).ok());
  EXPECT_FALSE(GrpcMasterServer::Start(":80", service_.get()).ok());
  GrpcMasterServer::Options no_streams;
  no_streams.max_concurrent_streams = 0;
  EXPECT_FALSE(GrpcMasterServer::Start("127.0.0.1:0", service_.get(), no_streams).ok());

  EXPECT_EQ(Mount("seg").status().code(), kOk);  // a live connection
  const auto start = std::chrono::steady_clock::now();
  server_->Shutdown();
  server_->Shutdown();
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(2));
  rpc::MountSegmentReply reply;
  rpc::MountSegmentRequest request;
  auto context = std::make_unique<grpc::ClientContext>();
  context->set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(2));
  EXPECT_FALSE(stub_->MountSegment(context.get(), request, &reply).ok());
}

}  // namespace
}  // namespace yuebing::master

namespace yuebing::master {
namespace {

// Many clients at once: every RPC is answered (a thread-capped synchronous server would refuse
// some with RESOURCE_EXHAUSTED).
TEST(GrpcMasterServerThreadsTest, ManyConcurrentClientsAreAllServed) {
  FakeClock clock;
  MasterService service(MasterOptions{}, clock);
  MasterMetrics metrics;
  GrpcMasterServer::Options options;
  options.metrics = &metrics;
  auto server = GrpcMasterServer::Start("127.0.0.1:0", &service, options);
  ASSERT_TRUE(server.ok()) << server.status();
  constexpr int kClients = 16;
  constexpr int kCalls = 100;
  std::atomic<int> failures{0};
  std::vector<std::thread> clients;
  for (int c = 0; c < kClients; ++c) {
    clients.emplace_back([&, c] {
      // One channel per client thread, like separate processes.
      grpc::ChannelArguments args;
      args.SetInt("yuebing.test.channel", c);
      auto stub = rpc::MasterService::NewStub(grpc::CreateCustomChannel(
          absl::StrCat("127.0.0.1:", (*server)->port()), grpc::InsecureChannelCredentials(), args));
      for (int i = 0; i < kCalls; ++i) {
        grpc::ClientContext context;
        context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
        rpc::BatchKeysRequest request;
        request.add_keys(absl::StrCat("key-", c, "-", i));
        rpc::BatchExistReply reply;
        const grpc::Status status = stub->BatchExist(&context, request, &reply);
        if (!status.ok() || reply.exists_size() != 1) {
          failures.fetch_add(1);
          ADD_FAILURE() << status.error_code() << " " << status.error_message();
        }
      }
    });
  }
  for (auto& client : clients) client.join();
  EXPECT_EQ(failures.load(), 0);
  EXPECT_EQ(metrics.Rpc(RpcOp::kBatchExist).requests, uint64_t{kClients * kCalls});
}

}  // namespace
}  // namespace yuebing::master
