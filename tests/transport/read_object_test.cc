// TransferEngine::ReadObject against another engine's object source over real sockets on
// 127.0.0.1: found (one buffer and scattered pieces), unknown key, buffer too small, no source,
// a source reporting a broken copy, another error of the source, bad arguments, nobody answering
// within the deadline, replacing the source while it is being called, and the reader's pool of
// connections (reused, bounded, replaced when the target restarted).
#include <gtest/gtest.h>
#include <sys/socket.h>

#include <atomic>
#include <chrono>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "engine_test_util.h"
#include "transport/object_reader.h"
#include "transport/socket_util.h"
#include "transport/wire_format.h"
#include "yuebing/transport/transfer_engine.h"

namespace yuebing::transport {
namespace {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;
using testing::FillPattern;
using testing::MakeEngine;

Clock::time_point In(milliseconds timeout) { return Clock::now() + timeout; }

class ReadObjectTest : public ::testing::Test {
 protected:
  void SetUp() override {
    server_ = MakeEngine();
    reader_ = MakeEngine();
    ASSERT_NE(server_, nullptr);
    ASSERT_NE(reader_, nullptr);
    std::string big(3 << 20, '\0');
    FillPattern(big.data(), big.size(), 11);
    objects_["small"] = "hello, disk tier";
    objects_["big"] = big;
  }

  void ServeObjects() {
    server_->SetObjectSource([this](absl::string_view key) -> absl::StatusOr<std::string> {
      if (key == "broken") return absl::DataLossError("value checksum mismatch");
      if (key == "failing") return absl::InternalError("disk on fire");
      auto it = objects_.find(key);
      if (it == objects_.end()) return absl::NotFoundError("no such file");
      return it->second;
    });
  }

  absl::StatusOr<uint64_t> Read(absl::string_view key, void* dest, uint64_t capacity,
                                milliseconds timeout = milliseconds(5000)) {
    return reader_->ReadObject(server_->LocalSegmentName(), key, dest, capacity, In(timeout));
  }

  absl::flat_hash_map<std::string, std::string> objects_;  // outlives the engines
  std::unique_ptr<TransferEngine> server_;
  std::unique_ptr<TransferEngine> reader_;
};

TEST_F(ReadObjectTest, FoundObjectLandsInTheBuffer) {
  ServeObjects();
  std::string out(64, 'x');
  absl::StatusOr<uint64_t> size = Read("small", out.data(), out.size());
  ASSERT_TRUE(size.ok()) << size.status();
  EXPECT_EQ(*size, objects_["small"].size());
  EXPECT_EQ(out.substr(0, *size), objects_["small"]);
  EXPECT_EQ(out.substr(*size), std::string(64 - *size, 'x'));  // nothing past the object

  std::string big(objects_["big"].size(), '\0');
  size = Read("big", big.data(), big.size());
  ASSERT_TRUE(size.ok()) << size.status();
  EXPECT_EQ(big, objects_["big"]);
}

TEST_F(ReadObjectTest, ScattersIntoPiecesInOrder) {
  ServeObjects();
  const std::string& expected = objects_["big"];
  std::vector<char> a(1000), b(1 << 20), c(expected.size());  // the last one has room to spare
  std::vector<ObjectBuffer> pieces = {
      {a.data(), a.size()}, {b.data(), b.size()}, {c.data(), c.size()}};
  absl::StatusOr<uint64_t> size =
      reader_->ReadObject(server_->LocalSegmentName(), "big", pieces, In(milliseconds(5000)));
  ASSERT_TRUE(size.ok()) << size.status();
  ASSERT_EQ(*size, expected.size());
  std::string joined(a.begin(), a.end());
  joined.append(b.begin(), b.end());
  joined.append(c.begin(), c.begin() + (expected.size() - a.size() - b.size()));
  EXPECT_EQ(joined, expected);
}

TEST_F(ReadObjectTest, EachFailureHasItsOwnError) {
  ServeObjects();
  std::string out(64, '\0');
  EXPECT_EQ(Read("absent", out.data(), out.size()).status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(Read("broken", out.data(), out.size()).status().code(), absl::StatusCode::kDataLoss);
  EXPECT_EQ(Read("failing", out.data(), out.size()).status().code(), absl::StatusCode::kInternal);
  // Too small: refused before any byte is written, and the size is named.
  std::string small(4, 'x');
  absl::StatusOr<uint64_t> size = Read("small", small.data(), small.size());
  EXPECT_EQ(size.status().code(), absl::StatusCode::kOutOfRange);
  EXPECT_NE(size.status().message().find(std::to_string(objects_["small"].size())),
            absl::string_view::npos)
      << size.status();
  EXPECT_EQ(small, "xxxx");
  // Bad arguments are refused without a connection.
  EXPECT_EQ(Read("", out.data(), out.size()).status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(Read(std::string(kMaxObjectKeyBytes + 1, 'k'), out.data(), out.size()).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(reader_->ReadObject("no-port", "small", out.data(), out.size(), In(milliseconds(1000)))
                .status()
                .code(),
            absl::StatusCode::kInvalidArgument);
  // The server still answers after all of that.
  EXPECT_TRUE(Read("small", out.data(), out.size()).ok());
}

TEST_F(ReadObjectTest, WithoutSourceTheTargetSaysSo) {
  std::string out(64, '\0');
  EXPECT_EQ(Read("small", out.data(), out.size()).status().code(),
            absl::StatusCode::kUnimplemented);
  ServeObjects();
  EXPECT_TRUE(Read("small", out.data(), out.size()).ok());
  server_->SetObjectSource(nullptr);
  EXPECT_EQ(Read("small", out.data(), out.size()).status().code(),
            absl::StatusCode::kUnimplemented);
}

TEST_F(ReadObjectTest, WrongNameIsRefused) {
  // A target listening on every address, reached under a name that is not its segment name.
  TransferEngineOptions options;
  options.local_server_name = "127.0.0.1";
  options.bind_address = "0.0.0.0";
  auto target = TransferEngine::Create(options);
  ASSERT_TRUE(target.ok()) << target.status();
  (*target)->SetObjectSource([](absl::string_view) { return std::string("value"); });
  const std::string name = (*target)->LocalSegmentName();
  std::string out(64, '\0');
  ASSERT_TRUE(reader_->ReadObject(name, "k", out.data(), out.size(), In(milliseconds(3000))).ok());
  const std::string alias = "127.0.0.2" + name.substr(name.find(':'));
  EXPECT_EQ(reader_->ReadObject(alias, "k", out.data(), out.size(), In(milliseconds(3000)))
                .status()
                .code(),
            absl::StatusCode::kFailedPrecondition);
}

TEST_F(ReadObjectTest, DeadlineBoundsASilentTarget) {
  // A listener that never accepts: the kernel completes the connection, nobody answers.
  uint16_t port = 0;
  absl::StatusOr<int> listener = ListenTcp("127.0.0.1", 0, &port);
  ASSERT_TRUE(listener.ok()) << listener.status();
  std::string out(64, '\0');
  const auto start = Clock::now();
  absl::StatusOr<uint64_t> size = reader_->ReadObject(
      absl::StrCat("127.0.0.1:", port), "small", out.data(), out.size(), In(milliseconds(300)));
  const auto took = Clock::now() - start;
  EXPECT_EQ(size.status().code(), absl::StatusCode::kDeadlineExceeded) << size.status();
  EXPECT_LT(took, milliseconds(2000));
  CloseFd(*listener);
}

TEST_F(ReadObjectTest, DeadlineBoundsASlowSource) {
  std::atomic<bool> release{false};
  server_->SetObjectSource([&](absl::string_view) -> absl::StatusOr<std::string> {
    for (int i = 0; i < 200 && !release; ++i) std::this_thread::sleep_for(milliseconds(10));
    return std::string("late");
  });
  std::string out(64, '\0');
  const auto start = Clock::now();
  EXPECT_EQ(Read("k", out.data(), out.size(), milliseconds(300)).status().code(),
            absl::StatusCode::kDeadlineExceeded);
  EXPECT_LT(Clock::now() - start, milliseconds(1500));
  release = true;
  server_->SetObjectSource(nullptr);  // returns once the slow call is over
}

TEST_F(ReadObjectTest, ReplacingTheSourceWaitsForCallsInProgress) {
  std::atomic<bool> inside{false}, finished{false};
  server_->SetObjectSource([&](absl::string_view) -> absl::StatusOr<std::string> {
    inside = true;
    std::this_thread::sleep_for(milliseconds(300));
    finished = true;
    return std::string("value");
  });
  std::thread reader([&] {
    std::string out(64, '\0');
    EXPECT_TRUE(Read("k", out.data(), out.size()).ok());
  });
  while (!inside) std::this_thread::sleep_for(milliseconds(1));
  server_->SetObjectSource(nullptr);
  EXPECT_TRUE(finished);  // the old source is no longer running once SetObjectSource returned
  reader.join();
}

// The target serves each connection on a thread of its own, so the distinct threads that ran the
// object source count the connections the reader used.
class ObjectReaderPoolTest : public ReadObjectTest {
 protected:
  void CountConnections() {
    server_->SetObjectSource([this](absl::string_view key) -> absl::StatusOr<std::string> {
      {
        std::lock_guard<std::mutex> lock(threads_mu_);
        threads_.insert(std::this_thread::get_id());
      }
      auto it = objects_.find(key);
      if (it == objects_.end()) return absl::NotFoundError("no such file");
      return it->second;
    });
  }
  size_t ConnectionsSeen() {
    std::lock_guard<std::mutex> lock(threads_mu_);
    return threads_.size();
  }

  std::mutex threads_mu_;
  absl::flat_hash_set<std::thread::id> threads_;
};

TEST_F(ObjectReaderPoolTest, SequentialReadsShareOneConnection) {
  CountConnections();
  ObjectReader reader(ObjectReadOptions{});
  std::string out(64, '\0');
  for (int i = 0; i < 20; ++i) {
    // A refusal (unknown key) leaves the connection usable as well.
    const char* key = i % 2 == 0 ? "small" : "missing";
    absl::StatusOr<uint64_t> size =
        reader.Read(server_->LocalSegmentName(), key, {ObjectBuffer{out.data(), out.size()}},
                    In(milliseconds(5000)));
    if (i % 2 == 0) {
      ASSERT_TRUE(size.ok()) << size.status();
      EXPECT_EQ(out.substr(0, *size), objects_["small"]);
    } else {
      EXPECT_EQ(size.status().code(), absl::StatusCode::kNotFound) << size.status();
    }
  }
  EXPECT_EQ(ConnectionsSeen(), 1u);
  EXPECT_EQ(reader.IdleConnections(), 1u);
}

TEST_F(ObjectReaderPoolTest, ConcurrentReadsKeepAtMostTheIdleLimit) {
  CountConnections();
  ObjectReader reader(ObjectReadOptions{});
  constexpr int kThreads = 8;
  std::vector<std::thread> threads;
  std::atomic<int> good{0};
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&] {
      std::string out(objects_["big"].size(), '\0');
      for (int i = 0; i < 5; ++i) {
        absl::StatusOr<uint64_t> size =
            reader.Read(server_->LocalSegmentName(), "big", {ObjectBuffer{out.data(), out.size()}},
                        In(milliseconds(10000)));
        if (size.ok() && out == objects_["big"]) ++good;
      }
    });
  }
  for (auto& thread : threads) thread.join();
  EXPECT_EQ(good.load(), kThreads * 5);
  EXPECT_LE(ConnectionsSeen(), static_cast<size_t>(kThreads));
  EXPECT_LE(reader.IdleConnections(), kMaxIdleObjectConnections);
}

TEST_F(ObjectReaderPoolTest, RestartedTargetIsReadOverAFreshConnection) {
  ServeObjects();
  const std::string segment = server_->LocalSegmentName();
  ObjectReader reader(ObjectReadOptions{});
  std::string out(64, '\0');
  ASSERT_TRUE(
      reader.Read(segment, "small", {ObjectBuffer{out.data(), out.size()}}, In(milliseconds(5000)))
          .ok());
  ASSERT_EQ(reader.IdleConnections(), 1u);

  // The target goes away: its pooled connection is dead, and nobody listens.
  server_.reset();
  absl::StatusOr<uint64_t> size =
      reader.Read(segment, "small", {ObjectBuffer{out.data(), out.size()}}, In(milliseconds(2000)));
  EXPECT_EQ(size.status().code(), absl::StatusCode::kUnavailable) << size.status();
  EXPECT_EQ(reader.IdleConnections(), 0u);

  // A new target on the same address: the reader connects again.
  auto restart_on_same_address = [&] {
    TransferEngineOptions options;
    options.metadata_conn = "P2PHANDSHAKE";
    options.local_server_name = segment;
    auto restarted = TransferEngine::Create(options);
    ASSERT_TRUE(restarted.ok()) << restarted.status();
    server_ = std::move(restarted).value();
    ServeObjects();
  };
  restart_on_same_address();
  size =
      reader.Read(segment, "small", {ObjectBuffer{out.data(), out.size()}}, In(milliseconds(5000)));
  ASSERT_TRUE(size.ok()) << size.status();
  EXPECT_EQ(out.substr(0, *size), objects_["small"]);

  // And a pooled connection the new target closes is replaced within the same call.
  ASSERT_EQ(reader.IdleConnections(), 1u);
  server_.reset();
  restart_on_same_address();
  size =
      reader.Read(segment, "small", {ObjectBuffer{out.data(), out.size()}}, In(milliseconds(5000)));
  ASSERT_TRUE(size.ok()) << size.status();
}

}  // namespace
}  // namespace yuebing::transport

namespace yuebing::transport {
namespace {

TEST_F(ReadObjectTest, ProbeContactsThePeerEveryTime) {
  const std::string segment = server_->LocalSegmentName();
  EXPECT_TRUE(reader_->Probe(segment, In(milliseconds(5000))).ok());
  ASSERT_TRUE(reader_->OpenSegment(segment).ok());  // a cached handle does not answer for it
  server_.reset();
  absl::Status gone = reader_->Probe(segment, In(milliseconds(2000)));
  EXPECT_EQ(gone.code(), absl::StatusCode::kUnavailable) << gone;
  EXPECT_EQ(reader_->Probe("no port", In(milliseconds(1000))).code(),
            absl::StatusCode::kInvalidArgument);

  uint16_t port = 0;  // a listener that never accepts: the handshake gets no answer
  absl::StatusOr<int> listener = ListenTcp("127.0.0.1", 0, &port);
  ASSERT_TRUE(listener.ok()) << listener.status();
  const auto start = Clock::now();
  absl::Status silent = reader_->Probe(absl::StrCat("127.0.0.1:", port), In(milliseconds(300)));
  EXPECT_EQ(silent.code(), absl::StatusCode::kDeadlineExceeded) << silent;
  EXPECT_LT(Clock::now() - start, milliseconds(2000));
  CloseFd(*listener);
}

}  // namespace
}  // namespace yuebing::transport
