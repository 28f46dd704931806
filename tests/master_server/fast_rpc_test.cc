// The master's fast path (rpc/fast_rpc_wire.h) end to end: an in-process MasterServer and a real
// store::MasterClient on 127.0.0.1. The hot calls travel as frames with the same results, metrics
// and terms as over gRPC; the client falls back to gRPC when the master has no fast path, when
// the environment turns it off, and while a restarted master's new port is unknown; a cluster
// secret keeps the fast path closed; malformed frames are refused without harming the server, and
// partial ones cost their connection after the frame timeout; and a call whose master does not
// answer ends at its deadline.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <httplib.h>
#include <sys/socket.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "master.pb.h"
#include "master/fast_rpc_server.h"
#include "master/master_server.h"
#include "rpc/fast_rpc_wire.h"
#include "store/fast_master_channel.h"
#include "store/master_client.h"
#include "support/local_master_options.h"
#include "transport/socket_util.h"
#include "transport/tcp_auth.h"
#include "yuebing/common/error_code.h"

namespace yuebing::master {
namespace {

using test_support::LocalMasterOptions;

using std::chrono::milliseconds;
using ::testing::HasSubstr;
using ::testing::Not;
using SteadyClock = std::chrono::steady_clock;

const std::string kClient = "0123456789abcdef0123456789abcdef";

std::unique_ptr<MasterServer> StartServer(MasterServer::Options options = LocalMasterOptions()) {
  auto server = MasterServer::Start(std::move(options));
  EXPECT_TRUE(server.ok()) << server.status();
  return server.ok() ? std::move(server).value() : nullptr;
}

std::unique_ptr<store::MasterClient> MakeClient(const MasterServer& server) {
  auto client = store::MasterClient::Create(absl::StrCat("127.0.0.1:", server.rpc_port()),
                                            milliseconds(2000));
  EXPECT_TRUE(client.ok()) << client.status();
  return client.ok() ? std::move(client).value() : nullptr;
}

// One sample of the master's /metrics page, e.g. "fast_rpc_frames_total" or
// "rpc_requests_total{rpc=\"BatchExist\"}"; -1 when absent.
int64_t Metric(const MasterServer& server, const std::string& name) {
  httplib::Client http("127.0.0.1", server.metrics_port());
  auto response = http.Get("/metrics");
  if (!response || response->status != 200) return -1;
  const std::string prefix = absl::StrCat("\nyuebing_master_", name, " ");
  const size_t at = response->body.find(prefix);
  if (at == std::string::npos) return -1;
  return std::stoll(response->body.substr(at + prefix.size()));
}

int64_t Requests(const MasterServer& server, const std::string& rpc) {
  return Metric(server, absl::StrCat("rpc_requests_total{rpc=\"", rpc, "\"}"));
}

// A put of `keys` (4 KiB each) from start to end on a freshly mounted segment: 2 hot calls.
void PutObjects(store::MasterClient& client, const std::vector<std::string>& keys) {
  const std::vector<uint64_t> sizes(keys.size(), 4096);
  auto started = client.BatchPutStart(kClient, keys, sizes, ReplicateConfig{}, false, {});
  ASSERT_EQ(started.size(), keys.size());
  for (const auto& result : started) ASSERT_TRUE(result.ok()) << result.status();
  for (const auto& status : client.BatchPutEnd(kClient, keys, {})) {
    ASSERT_TRUE(status.ok()) << status;
  }
}

void Mount(store::MasterClient& client) {
  ASSERT_TRUE(client.MountSegment(kClient, Segment{"seg-a:1", 1 << 20, 64 << 20}).ok());
}

TEST(FastRpcTest, HotCallsTravelOnTheFastPathWithTheSameResults) {
  auto server = StartServer();
  ASSERT_NE(server, nullptr);
  ASSERT_NE(server->fast_rpc_port(), 0);
  EXPECT_THAT(server->Endpoints(), HasSubstr(absl::StrCat(" fast ", server->fast_rpc_port())));
  auto client = MakeClient(*server);
  ASSERT_NE(client, nullptr);
  Mount(*client);  // gRPC: not a hot call
  PutObjects(*client, {"a", "b"});

  auto found = client->BatchGetReplicaList({"a", "missing"});
  ASSERT_EQ(found.size(), 2u);
  ASSERT_TRUE(found[0].ok()) << found[0].status();
  EXPECT_EQ(found[0]->size, 4096u);
  ASSERT_EQ(found[0]->replicas.size(), 1u);
  EXPECT_EQ(found[0]->replicas[0].segment_name, "seg-a:1");
  EXPECT_EQ(ToErrorCode(found[1].status()), ErrorCode::kObjectNotFound);
  client->ReleaseLeases({found[0]->lease_id});  // rides along with the next call, or goes alone
  auto exists = client->BatchExist({"a", "b", "c"});
  ASSERT_TRUE(exists.ok());
  EXPECT_EQ(*exists, (std::vector<bool>{true, true, false}));
  auto removed = client->BatchRemove({"a", "c"}, /*force=*/false);
  ASSERT_EQ(removed.size(), 2u);
  EXPECT_TRUE(removed[0].ok()) << removed[0];
  EXPECT_EQ(ToErrorCode(removed[1]), ErrorCode::kObjectNotFound);
  exists = client->BatchExist({"a", "b"});
  ASSERT_TRUE(exists.ok());
  EXPECT_EQ(*exists, (std::vector<bool>{false, true}));

  // Six hot calls (seven when the release went alone), all as frames, and counted per RPC like
  // gRPC calls. A release that went alone (its flusher's timer fired before the next call, on a
  // busy machine) may still be in the server, counted per RPC but not yet as a frame: the two
  // counters are read until they agree (bounded), then checked.
  int64_t releases = 0, frames = 0;
  const auto settle_deadline = SteadyClock::now() + milliseconds(2000);
  do {
    releases = Requests(*server, "ReleaseLeases");
    frames = Metric(*server, "fast_rpc_frames_total");
    if (frames == 6 + releases && Requests(*server, "ReleaseLeases") == releases) break;
    std::this_thread::sleep_for(milliseconds(5));
  } while (SteadyClock::now() < settle_deadline);
  EXPECT_LE(releases, 1);
  EXPECT_EQ(frames, 6 + releases);
  EXPECT_EQ(Requests(*server, "BatchExist"), 2);
  EXPECT_EQ(Requests(*server, "BatchRemove"), 1);
  EXPECT_EQ(Requests(*server, "BatchPutStart"), 1);
  EXPECT_EQ(Requests(*server, "BatchPutEnd"), 1);
  EXPECT_EQ(Requests(*server, "MountSegment"), 1);
  EXPECT_GE(Metric(*server, "fast_rpc_connections"), 1);
}

// A release queued just before a revoke rides along with it and is applied: the object, no longer
// leased, can be removed without force at once. (The server once dropped releases that came with
// a revoke; they then held their object until the lease's TTL.)
TEST(FastRpcTest, ReleasesRidingOnARevokeAreApplied) {
  auto server = StartServer();
  ASSERT_NE(server, nullptr);
  auto client = MakeClient(*server);
  ASSERT_NE(client, nullptr);
  Mount(*client);
  PutObjects(*client, {"read-me"});
  auto found = client->BatchGetReplicaList({"read-me"});
  ASSERT_TRUE(found[0].ok()) << found[0].status();
  ASSERT_TRUE(client->BatchPutStart(kClient, {"pending"}, {4096}, {}, false, {})[0].ok());
  client->ReleaseLeases({found[0]->lease_id});  // queued; the revoke right after carries it
  ASSERT_TRUE(client->BatchPutRevoke(kClient, {"pending"})[0].ok());
  auto removed = client->BatchRemove({"read-me"}, /*force=*/false);
  EXPECT_TRUE(removed[0].ok()) << removed[0];
}

// Releases ride along with the calls that follow them; the last one, with no call after it, goes
// out on its own within a few release periods (store::kReleaseDelay), so the object is free to
// remove at once, even by a client that carries no releases.
TEST(FastRpcTest, CallsCarryReleasesAndTheLastOneGoesAlone) {
  auto server = StartServer();
  ASSERT_NE(server, nullptr);
  auto client = MakeClient(*server);
  ASSERT_NE(client, nullptr);
  Mount(*client);
  PutObjects(*client, {"read-me"});
  for (int i = 0; i < 20; ++i) {
    auto found = client->BatchGetReplicaList({"read-me"});
    ASSERT_TRUE(found[0].ok()) << found[0].status();
    client->ReleaseLeases({found[0]->lease_id});
  }
  const auto deadline = SteadyClock::now() + milliseconds(3000);
  while (Requests(*server, "ReleaseLeases") < 1 && SteadyClock::now() < deadline) {
    std::this_thread::sleep_for(milliseconds(1));
  }
  EXPECT_GE(Requests(*server, "ReleaseLeases"), 1) << "the last release never went out";
  auto other = MakeClient(*server);
  ASSERT_NE(other, nullptr);
  auto removed = other->BatchRemove({"read-me"}, /*force=*/false);
  EXPECT_TRUE(removed[0].ok()) << removed[0];
}

// A store's journal long poll travels as frames too: parked until an entry comes, and its
// acknowledgement lets a PutEnd waiting for the manifest answer.
TEST(FastRpcTest, JournalLongPollTravelsOnTheFastPath) {
  auto server = StartServer();
  ASSERT_NE(server, nullptr);
  auto owner = MakeClient(*server);
  auto writer = MakeClient(*server);
  ASSERT_NE(owner, nullptr);
  ASSERT_NE(writer, nullptr);
  auto mount = owner->MountSegmentForRestore(kClient, Segment{"seg-j:1", 1 << 20, 64 << 20}, false);
  ASSERT_TRUE(mount.ok()) << mount.status();
  ASSERT_TRUE(owner->RestoreObjects(kClient, "seg-j:1", {}, /*last=*/true).ok());
  auto first = owner->PullJournal(kClient, 0, 0, milliseconds(0));
  ASSERT_TRUE(first.ok()) << first.status();
  const int64_t frames_before = Metric(*server, "fast_rpc_frames_total");

  // The owner's poll is parked; the writer's PutStart announces an object, which answers it.
  std::thread poller([&] {
    auto batch = owner->PullJournal(kClient, first->journal_id, first->last_seq, milliseconds(900));
    ASSERT_TRUE(batch.ok()) << batch.status();
    ASSERT_EQ(batch->entries.size(), 1u);
    EXPECT_EQ(batch->entries[0].key, "journaled");
    EXPECT_FALSE(batch->entries[0].committed);
    // Acknowledge it, as a store does with its next poll.
    auto next = owner->PullJournal(kClient, batch->journal_id, batch->last_seq, milliseconds(0));
    EXPECT_TRUE(next.ok()) << next.status();
  });
  std::this_thread::sleep_for(milliseconds(100));
  const auto start = SteadyClock::now();
  auto started = writer->BatchPutStart("fedcba9876543210fedcba9876543210", {"journaled"}, {4096},
                                       {}, false, {0x1234});
  ASSERT_TRUE(started[0].ok()) << started[0].status();
  auto ended = writer->BatchPutEnd("fedcba9876543210fedcba9876543210", {"journaled"}, {0x1234});
  ASSERT_TRUE(ended[0].ok()) << ended[0];
  poller.join();
  EXPECT_LT(SteadyClock::now() - start, milliseconds(450));  // not the 500 ms wait bound
  EXPECT_EQ(Metric(*server, "manifest_lag_puts_total"), 0);
  // Two polls, a PutStart and a PutEnd.
  EXPECT_EQ(Metric(*server, "fast_rpc_frames_total") - frames_before, 4);
}

TEST(FastRpcTest, ClientUsesGrpcWhenTheMasterHasNoFastPath) {
  MasterServer::Options options = LocalMasterOptions();
  options.fast_rpc = false;
  auto server = StartServer(options);
  ASSERT_NE(server, nullptr);
  EXPECT_EQ(server->fast_rpc_port(), 0);
  EXPECT_THAT(server->Endpoints(), Not(HasSubstr("fast")));
  auto client = MakeClient(*server);
  ASSERT_NE(client, nullptr);
  Mount(*client);
  PutObjects(*client, {"x"});
  auto exists = client->BatchExist({"x", "y"});
  ASSERT_TRUE(exists.ok());
  EXPECT_EQ(*exists, (std::vector<bool>{true, false}));
  EXPECT_EQ(Metric(*server, "fast_rpc_frames_total"), 0);
  EXPECT_EQ(Requests(*server, "BatchExist"), 1);
}

TEST(FastRpcTest, EnvironmentTurnsTheFastPathOffInTheClient) {
  auto server = StartServer();
  ASSERT_NE(server, nullptr);
  ASSERT_EQ(setenv(store::kMasterFastRpcEnv, "0", 1), 0);
  auto client = MakeClient(*server);
  unsetenv(store::kMasterFastRpcEnv);
  ASSERT_NE(client, nullptr);
  auto exists = client->BatchExist({"x"});
  ASSERT_TRUE(exists.ok());
  EXPECT_EQ(Metric(*server, "fast_rpc_frames_total"), 0);
  EXPECT_EQ(Requests(*server, "BatchExist"), 1);
}

TEST(FastRpcTest, NoFastPathWithAClusterSecret) {
  MasterServer::Options options = LocalMasterOptions();
  options.security.cluster_secret = "a-cluster-secret-of-enough-length";
  auto server = StartServer(options);
  ASSERT_NE(server, nullptr);
  EXPECT_EQ(server->fast_rpc_port(), 0);
  EXPECT_THAT(server->Endpoints(), Not(HasSubstr("fast")));
}

TEST(FastRpcTest, ClientFollowsAMasterRestartedOnAnotherFastPort) {
  auto first = StartServer();
  ASSERT_NE(first, nullptr);
  const uint16_t rpc_port = first->rpc_port();
  auto client = MakeClient(*first);
  ASSERT_NE(client, nullptr);
  ASSERT_TRUE(client->BatchExist({"k"}).ok());
  EXPECT_EQ(Metric(*first, "fast_rpc_frames_total"), 1);
  first->Stop();
  first.reset();

  MasterServer::Options options = LocalMasterOptions();
  options.rpc_port = rpc_port;  // same gRPC port; the fast port is a fresh free one
  auto second = StartServer(options);
  ASSERT_NE(second, nullptr);
  // Every call succeeds (over gRPC while the new port is unknown), and the fast path resumes.
  const auto give_up = SteadyClock::now() + std::chrono::seconds(10);
  int calls = 0;
  while (Metric(*second, "fast_rpc_frames_total") < 1 && SteadyClock::now() < give_up) {
    auto exists = client->BatchExist({"k"});
    ASSERT_TRUE(exists.ok()) << "call " << calls << ": " << exists.status();
    ++calls;
    std::this_thread::sleep_for(milliseconds(20));
  }
  EXPECT_GE(Metric(*second, "fast_rpc_frames_total"), 1) << calls << " calls";
}

// Raw frames on one connection to the fast port.
class RawConnection {
 public:
  explicit RawConnection(uint16_t port) {
    auto fd = transport::ConnectTcp("127.0.0.1", port, milliseconds(2000));
    EXPECT_TRUE(fd.ok()) << fd.status();
    fd_ = fd.ok() ? *fd : -1;
  }
  ~RawConnection() { transport::CloseFd(fd_); }

  void Send(const uint8_t* header, const std::string& payload) {
    ASSERT_TRUE(transport::SendAll(fd_, header, rpc::kFastHeaderBytes).ok());
    ASSERT_TRUE(transport::SendAll(fd_, payload.data(), payload.size()).ok());
  }
  void SendBytes(const std::string& bytes) {
    ASSERT_TRUE(transport::SendAll(fd_, bytes.data(), bytes.size()).ok());
  }
  void Send(uint8_t method, const std::string& payload) {
    uint8_t header[rpc::kFastHeaderBytes];
    rpc::EncodeFastHeader({method, rpc::FastStatus::kOk, static_cast<uint32_t>(payload.size())},
                          header);
    Send(header, payload);
  }
  // The next reply's header, or nullopt when the connection closed or nothing came in 2 s.
  std::optional<rpc::FastHeader> Receive() {
    uint8_t header[rpc::kFastHeaderBytes];
    if (!transport::RecvAllUntil(fd_, header, sizeof(header),
                                 SteadyClock::now() + milliseconds(2000))
             .ok()) {
      return std::nullopt;
    }
    return rpc::DecodeFastHeader(header);
  }
  // True when the server closed the connection within 2 s.
  bool Closed() {
    char byte;
    return transport::RecvAllUntil(fd_, &byte, 1, SteadyClock::now() + milliseconds(2000)).code() ==
           absl::StatusCode::kUnavailable;
  }

 private:
  int fd_ = -1;
};

TEST(FastRpcTest, MalformedFramesAreRefusedAndTheServerKeepsServing) {
  auto server = StartServer();
  ASSERT_NE(server, nullptr);
  {
    RawConnection raw(server->fast_rpc_port());
    raw.Send(99, "");  // a method the master does not serve: refused, connection kept
    auto reply = raw.Receive();
    ASSERT_TRUE(reply.has_value());
    EXPECT_EQ(reply->status, rpc::FastStatus::kUnknownMethod);
    EXPECT_EQ(reply->length, 0u);
    raw.Send(static_cast<uint8_t>(rpc::FastMethod::kBatchExist), "\xff\xff\xff");  // not protobuf
    reply = raw.Receive();
    ASSERT_TRUE(reply.has_value());
    EXPECT_EQ(reply->status, rpc::FastStatus::kBadRequest);
    rpc::BatchKeysRequest request;  // the same connection still serves a good frame
    request.add_keys("nothing-here");
    raw.Send(static_cast<uint8_t>(rpc::FastMethod::kBatchExist), request.SerializeAsString());
    reply = raw.Receive();
    ASSERT_TRUE(reply.has_value());
    EXPECT_EQ(reply->status, rpc::FastStatus::kOk);
    EXPECT_GT(reply->length, 0u);
  }
  {
    RawConnection raw(server->fast_rpc_port());
    const uint8_t garbage[rpc::kFastHeaderBytes] = {'G', 'E', 'T', ' ', '/',
                                                    ' ', 'H', 'T', 'T', 'P'};
    raw.Send(garbage, "");
    EXPECT_TRUE(raw.Closed());
  }
  {
    RawConnection raw(server->fast_rpc_port());
    uint8_t header[rpc::kFastHeaderBytes];
    rpc::EncodeFastHeader({static_cast<uint8_t>(rpc::FastMethod::kBatchExist), rpc::FastStatus::kOk,
                           rpc::kFastMaxPayloadBytes},
                          header);
    header[11] = 0xff;  // length far over the limit
    raw.Send(header, "");
    EXPECT_TRUE(raw.Closed());
  }
  auto client = MakeClient(*server);
  ASSERT_NE(client, nullptr);
  auto exists = client->BatchExist({"k"});
  ASSERT_TRUE(exists.ok()) << exists.status();
  EXPECT_EQ(Metric(*server, "fast_rpc_frames_total"), 2);  // the raw good frame and this call
}

// A peer that sends part of a frame and stops loses its connection after frame_timeout instead
// of holding the connection's thread; an idle connection with nothing sent is kept.
TEST(FastRpcTest, PartialFramesAreDroppedAfterTheFrameTimeout) {
  FastRpcServer::Options options;
  options.frame_timeout = milliseconds(300);
  auto server = FastRpcServer::Start(
      "127.0.0.1", 0,
      [](uint8_t, std::string request, FastRpcServer::Done done) {
        done(rpc::FastStatus::kOk, std::move(request));  // echoes the message
      },
      options);
  ASSERT_TRUE(server.ok()) << server.status();
  RawConnection idle((*server)->port());
  uint8_t header[rpc::kFastHeaderBytes];
  rpc::EncodeFastHeader(
      {static_cast<uint8_t>(rpc::FastMethod::kBatchExist), rpc::FastStatus::kOk, 4}, header);
  for (size_t sent : {size_t{1}, size_t{5}, rpc::kFastHeaderBytes + 2}) {
    SCOPED_TRACE(sent);
    RawConnection raw((*server)->port());
    const std::string frame =
        std::string(reinterpret_cast<const char*>(header), sizeof(header)) + "echo";
    raw.SendBytes(frame.substr(0, sent));
    const auto start = SteadyClock::now();
    EXPECT_TRUE(raw.Closed());
    EXPECT_GE(SteadyClock::now() - start, milliseconds(200)) << "closed before its frame timeout";
  }
  // The idle connection, silent for longer than the frame timeout, still gets its answer.
  idle.Send(static_cast<uint8_t>(rpc::FastMethod::kBatchExist), "echo");
  auto reply = idle.Receive();
  ASSERT_TRUE(reply.has_value());
  EXPECT_EQ(reply->status, rpc::FastStatus::kOk);
  EXPECT_EQ(reply->length, 4u);
}

// A call that ran but whose reply is too large for a frame fails instead of being handed to gRPC
// to run a second time.
TEST(FastMasterChannelTest, ReplyTooLargeIsTheCallsFailureNotAFallback) {
  std::atomic<int> runs{0};
  auto server = FastRpcServer::Start(
      "127.0.0.1", 0,
      [&runs](uint8_t, std::string, FastRpcServer::Done done) {
        ++runs;
        done(rpc::FastStatus::kOk, std::string(rpc::kFastMaxPayloadBytes + 1, 'x'));
      },
      FastRpcServer::Options{});
  ASSERT_TRUE(server.ok()) << server.status();
  const uint16_t port = (*server)->port();
  store::FastMasterChannel channel("127.0.0.1",
                                   [port](auto) { return absl::StatusOr<uint16_t>(port); });
  rpc::BatchKeysRequest request;
  request.add_keys("k");
  rpc::BatchExistReply reply;
  auto used = channel.Call(rpc::FastMethod::kBatchExist, request, &reply,
                           SteadyClock::now() + milliseconds(5000));
  EXPECT_EQ(used.status().code(), absl::StatusCode::kResourceExhausted) << used.status();
  EXPECT_EQ(runs.load(), 1);
  // The connection stays usable.
  used = channel.Call(rpc::FastMethod::kBatchExist, request, &reply,
                      SteadyClock::now() + milliseconds(5000));
  EXPECT_EQ(used.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_EQ(runs.load(), 2);
}

TEST(FastMasterChannelTest, CallEndsAtItsDeadlineWhenTheMasterDoesNotAnswer) {
  uint16_t port = 0;
  auto listener = transport::ListenTcp("127.0.0.1", 0, &port);
  ASSERT_TRUE(listener.ok()) << listener.status();
  // Accepts (the kernel does, from the backlog) and never answers.
  store::FastMasterChannel channel("127.0.0.1", [port](auto) { return port; });
  rpc::BatchKeysRequest request;
  request.add_keys("k");
  rpc::BatchExistReply reply;
  const auto start = SteadyClock::now();
  auto result =
      channel.Call(rpc::FastMethod::kBatchExist, request, &reply, start + milliseconds(300));
  const auto took = SteadyClock::now() - start;
  EXPECT_EQ(result.status().code(), absl::StatusCode::kDeadlineExceeded) << result.status();
  EXPECT_GE(took, milliseconds(290));
  EXPECT_LT(took, milliseconds(1500));
  transport::CloseFd(*listener);
}

TEST(FastMasterChannelTest, NothingIsSentWhenThePortCannotBeReached) {
  uint16_t port = 0;
  auto listener = transport::ListenTcp("127.0.0.1", 0, &port);
  ASSERT_TRUE(listener.ok());
  transport::CloseFd(*listener);  // nothing listens there now
  int lookups = 0;
  store::FastMasterChannel channel("127.0.0.1", [&](auto) {
    ++lookups;
    return port;
  });
  rpc::BatchKeysRequest request;
  rpc::BatchExistReply reply;
  auto result = channel.Call(rpc::FastMethod::kBatchExist, request, &reply,
                             SteadyClock::now() + milliseconds(500));
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_FALSE(*result);
  // Backing off: the next call neither looks the port up nor connects.
  result = channel.Call(rpc::FastMethod::kBatchExist, request, &reply,
                        SteadyClock::now() + milliseconds(500));
  ASSERT_TRUE(result.ok());
  EXPECT_FALSE(*result);
  EXPECT_EQ(lookups, 1);
  EXPECT_EQ(channel.calls(), 0u);
}

}  // namespace
}  // namespace yuebing::master
