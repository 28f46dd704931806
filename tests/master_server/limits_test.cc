// yuebing/common/limits.h is enforced alike by every layer: the MasterService called directly,
// the master over gRPC, and the store client. At each limit the value is accepted by all of
// them; one past it is refused by all of them with kInvalidParams.
#include "yuebing/common/limits.h"

#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "master.grpc.pb.h"
#include "master/grpc_master_server.h"
#include "yuebing/common/error_code.h"
#include "yuebing/master/master_service.h"
#include "yuebing/store/client.h"

namespace yuebing {
namespace {

namespace rpc = ::yuebing::rpc;
using master::MasterService;
using master::Segment;

constexpr int32_t kOk = 0;
constexpr int32_t kInvalid = static_cast<int32_t>(ErrorCode::kInvalidParams);
constexpr uint64_t kSegmentSize = 16 << 20;

ErrorCode Code(const absl::Status& status) { return ToErrorCode(status); }

class LimitsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    service_ = std::make_unique<MasterService>(master::MasterOptions{});
    auto server = master::GrpcMasterServer::Start("127.0.0.1:0", service_.get());
    ASSERT_TRUE(server.ok()) << server.status();
    server_ = std::move(server).value();
    address_ = absl::StrCat("127.0.0.1:", server_->port());
    stub_ = rpc::MasterService::NewStub(
        grpc::CreateChannel(address_, grpc::InsecureChannelCredentials()));
  }

  static std::unique_ptr<grpc::ClientContext> Context() {
    auto context = std::make_unique<grpc::ClientContext>();
    context->set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
    return context;
  }

  // MountSegment over gRPC; returns the reply's code.
  int32_t RpcMount(const std::string& client, const std::string& name, uint64_t base) {
    rpc::MountSegmentRequest request;
    request.set_client_id(client);
    request.mutable_segment()->set_name(name);
    request.mutable_segment()->set_base(base);
    request.mutable_segment()->set_size(kSegmentSize);
    rpc::MountSegmentReply reply;
    EXPECT_TRUE(stub_->MountSegment(Context().get(), request, &reply).ok());
    return reply.status().code();
  }

  // PutStart of one key over gRPC; returns that key's code.
  int32_t RpcPutStart(const std::string& client, const std::string& key) {
    rpc::BatchPutStartRequest request;
    request.set_client_id(client);
    request.add_keys(key);
    request.add_sizes(64);
    request.mutable_config()->set_replica_num(1);
    rpc::BatchPutStartReply reply;
    EXPECT_TRUE(stub_->BatchPutStart(Context().get(), request, &reply).ok());
    if (reply.status().code() != kOk) return reply.status().code();
    EXPECT_EQ(reply.results_size(), 1);
    return reply.results_size() == 1 ? reply.results(0).status().code() : -1;
  }

  int32_t RpcRemoveByRegex(const std::string& pattern) {
    rpc::RemoveByRegexRequest request;
    request.set_pattern(pattern);
    rpc::RemoveCountReply reply;
    EXPECT_TRUE(stub_->RemoveByRegex(Context().get(), request, &reply).ok());
    return reply.status().code();
  }

  // A store client of this master contributing `segment_size` bytes; nullptr on failure.
  std::unique_ptr<store::Client> MakeStore(uint64_t segment_size) {
    store::ClientConfig config;
    config.master_server_address = address_;
    config.global_segment_size = segment_size;
    config.enable_shm = false;
    auto store = store::Client::Create(config);
    EXPECT_TRUE(store.ok()) << store.status();
    return store.ok() ? std::move(store).value() : nullptr;
  }

  std::unique_ptr<MasterService> service_;
  std::unique_ptr<master::GrpcMasterServer> server_;
  std::string address_;
  std::unique_ptr<rpc::MasterService::Stub> stub_;
};

TEST_F(LimitsTest, ClientIdOfTheMaximumLengthIsAcceptedByBothLayersAndOneMoreByNeither) {
  const std::string longest(limits::kMaxClientIdBytes, 'c');
  const std::string too_long(limits::kMaxClientIdBytes + 1, 'c');
  EXPECT_TRUE(service_->MountSegment(longest, Segment{"direct", 0x100000, kSegmentSize}).ok());
  EXPECT_EQ(RpcMount(longest, "wire", 0x10000000), kOk);
  EXPECT_EQ(
      Code(service_->MountSegment(too_long, Segment{"direct2", 0x20000000, kSegmentSize}).status()),
      ErrorCode::kInvalidParams);
  EXPECT_EQ(RpcMount(too_long, "wire2", 0x30000000), kInvalid);
  EXPECT_EQ(service_->Stats().segments.size(), 2u);
}

TEST_F(LimitsTest, KeyOfTheMaximumLengthIsAcceptedByMasterAndClientAndOneMoreByNone) {
  // A store client with a segment of its own; the master places every object there.
  auto store = MakeStore(kSegmentSize);
  ASSERT_NE(store, nullptr);
  const std::string key(limits::kMaxKeyBytes, 's');
  ASSERT_TRUE(store->Put(key, "value").ok());
  EXPECT_EQ(*store->Get(key), "value");
  EXPECT_EQ(Code(store->Put(key + "s", "value")), ErrorCode::kInvalidParams);

  const std::string client(32, 'a');
  EXPECT_TRUE(service_->PutStart(client, std::string(limits::kMaxKeyBytes, 'd'), 64, {}).ok());
  EXPECT_EQ(RpcPutStart(client, std::string(limits::kMaxKeyBytes, 'w')), kOk);
  const std::string too_long(limits::kMaxKeyBytes + 1, 'k');
  EXPECT_EQ(Code(service_->PutStart(client, too_long, 64, {}).status()), ErrorCode::kInvalidParams);
  EXPECT_EQ(RpcPutStart(client, too_long), kInvalid);
}

TEST_F(LimitsTest, RegexOfTheMaximumLengthIsAcceptedByBothLayersAndOneMoreByNeither) {
  const std::string longest(limits::kMaxRegexBytes, 'r');
  const std::string too_long(limits::kMaxRegexBytes + 1, 'r');
  EXPECT_TRUE(service_->RemoveByRegex(longest).ok());
  EXPECT_EQ(RpcRemoveByRegex(longest), kOk);
  EXPECT_EQ(Code(service_->RemoveByRegex(too_long).status()), ErrorCode::kInvalidParams);
  EXPECT_EQ(RpcRemoveByRegex(too_long), kInvalid);
}

TEST_F(LimitsTest, ReplicasPastTheLimitAreRefusedByTheClientAndCappedByTheMaster) {
  master::ReplicateConfig most;
  most.replica_num = limits::kMaxReplicas;
  master::ReplicateConfig more;
  more.replica_num = limits::kMaxReplicas + 1;
  {
    auto store = MakeStore(kSegmentSize);
    ASSERT_NE(store, nullptr);
    EXPECT_TRUE(store->Put("most", "v", most).ok());  // best effort: one segment, one replica
    EXPECT_EQ(Code(store->Put("more", "v", more)), ErrorCode::kInvalidParams);
  }
  // A caller on the wire may ask for more; the master places at most kMaxReplicas.
  const std::string client(32, 'b');
  for (uint64_t i = 0; i <= limits::kMaxReplicas; ++i) {
    ASSERT_TRUE(
        service_->MountSegment(client, Segment{absl::StrCat("seg-", i), (i + 1) << 28, 1 << 20})
            .ok());
  }
  auto placed = service_->PutStart(client, "many", 64, more);
  ASSERT_TRUE(placed.ok()) << placed.status();
  EXPECT_EQ(placed->size(), limits::kMaxReplicas);
}

TEST_F(LimitsTest, BatchOfTheMaximumSizeIsAcceptedByBothLayersAndOneMoreByNeither) {
  std::vector<std::string> keys;
  for (size_t i = 0; i < limits::kMaxBatchKeys; ++i) keys.push_back(absl::StrCat("k", i));
  EXPECT_EQ(service_->BatchExist(keys).size(), keys.size());
  for (const auto& r : service_->BatchRemove(keys)) {
    EXPECT_EQ(Code(r), ErrorCode::kObjectNotFound);
  }
  rpc::BatchKeysRequest request;
  for (const std::string& key : keys) request.add_keys(key);
  rpc::BatchStatusReply reply;
  ASSERT_TRUE(stub_->BatchRemove(Context().get(), request, &reply).ok());
  EXPECT_EQ(reply.status().code(), kOk);

  keys.push_back("one-more");
  for (const auto& r : service_->BatchRemove(keys)) {
    EXPECT_EQ(Code(r), ErrorCode::kInvalidParams);
  }
  request.add_keys("one-more");
  ASSERT_TRUE(stub_->BatchRemove(Context().get(), request, &reply).ok());
  EXPECT_EQ(reply.status().code(), kInvalid);
}

}  // namespace
}  // namespace yuebing
