#include "transport/metadata_store.h"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <httplib.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "support/etcd_process.h"
#include "yuebing/common/http_metadata_server.h"

namespace yuebing::transport {
namespace {

using namespace std::chrono_literals;
using std::chrono::milliseconds;
using test_support::EtcdProcess;
using test_support::PickFreeTcpPort;

constexpr milliseconds kTimeout(2000);
constexpr milliseconds kShortTimeout(400);
// Allowed overrun of a call past its timeout (scheduling on a loaded machine).
constexpr milliseconds kOverrun(600);

std::unique_ptr<MetadataStore> CreateOrDie(const std::string& conn, milliseconds timeout) {
  auto store = CreateMetadataStore(conn, timeout);
  EXPECT_TRUE(store.ok()) << conn << ": " << store.status();
  if (!store.ok()) return nullptr;
  EXPECT_NE(*store, nullptr) << conn;
  return std::move(store).value();
}

std::string BinaryValue(size_t size, uint32_t seed) {
  std::string value(size, '\0');
  uint32_t x = seed * 2654435761u + 1;
  for (char& c : value) {
    x ^= x << 13;
    x ^= x >> 17;
    x ^= x << 5;
    c = static_cast<char>(x);
  }
  return value;
}

// A TCP socket on 127.0.0.1 that listens but never accepts nor answers: connects succeed (the
// kernel completes them) and requests then hang until the caller gives up.
class BlackHole {
 public:
  BlackHole() {
    fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof(addr);
    if (fd_ < 0 || ::bind(fd_, reinterpret_cast<sockaddr*>(&addr), len) != 0 ||
        ::listen(fd_, 16) != 0 || ::getsockname(fd_, reinterpret_cast<sockaddr*>(&addr), &len)) {
      ADD_FAILURE() << "cannot create a listening socket";
      return;
    }
    port_ = ntohs(addr.sin_port);
  }
  ~BlackHole() {
    if (fd_ >= 0) ::close(fd_);
  }
  BlackHole(const BlackHole&) = delete;
  BlackHole& operator=(const BlackHole&) = delete;
  std::string endpoint() const { return absl::StrCat("127.0.0.1:", port_); }

 private:
  int fd_ = -1;
  uint16_t port_ = 0;
};

// An HTTP server that answers every request with `status`.
class FixedAnswerServer {
 public:
  explicit FixedAnswerServer(int status) {
    server_.set_error_handler([status](const httplib::Request&, httplib::Response& res) {
      res.status = status;
      res.set_content("{\"error\":\"fixed answer\",\"message\":\"fixed answer\"}",
                      "application/json");
    });
    port_ = server_.bind_to_any_port("127.0.0.1");
    thread_ = std::thread([this] { server_.listen_after_bind(); });
    for (int i = 0; i < 2000 && !server_.is_running(); ++i) std::this_thread::sleep_for(1ms);
  }
  ~FixedAnswerServer() {
    server_.stop();
    thread_.join();
  }
  std::string endpoint() const { return absl::StrCat("127.0.0.1:", port_); }

 private:
  httplib::Server server_;
  std::thread thread_;
  int port_ = 0;
};

// ---------------------------------------------------------------------------------------------
// Connection strings.

TEST(CreateMetadataStoreTest, P2pHandshakeHasNoStore) {
  auto store = CreateMetadataStore("P2PHANDSHAKE", kTimeout);
  ASSERT_TRUE(store.ok()) << store.status();
  EXPECT_EQ(*store, nullptr);
}

TEST(CreateMetadataStoreTest, DescribesWhatItParsed) {
  EXPECT_EQ(CreateOrDie("http://127.0.0.1:8080/metadata", kTimeout)->Describe(),
            "http://127.0.0.1:8080/metadata");
  EXPECT_EQ(CreateOrDie("http://meta-host:9000", kTimeout)->Describe(),
            "http://meta-host:9000/metadata");
  EXPECT_EQ(CreateOrDie("HTTP://[::1]:8080/md", kTimeout)->Describe(), "http://[::1]:8080/md");
  EXPECT_EQ(CreateOrDie("etcd://10.0.0.1:2379,10.0.0.2,10.0.0.3:3379", kTimeout)->Describe(),
            "etcd://10.0.0.1:2379,10.0.0.2:2379,10.0.0.3:3379");
  // Without a scheme the address names etcd endpoints, as in Mooncake.
  EXPECT_EQ(CreateOrDie("127.0.0.1:2379", kTimeout)->Describe(), "etcd://127.0.0.1:2379");
}

TEST(CreateMetadataStoreTest, RejectsMalformedConnections) {
  for (const char* conn :
       {"", "redis://127.0.0.1:6379", "ftp://x:1/metadata", "http://", "http://:8080/metadata",
        "http://host:0/metadata", "http://host:65536/metadata", "http://host:80x/metadata",
        "http://host:8080/metadata?key=1", "http://ho st:8080/metadata", "etcd://",
        "etcd://a:1,,b:2", "etcd://a:", "etcd://[::1"}) {
    auto store = CreateMetadataStore(conn, kTimeout);
    EXPECT_EQ(store.status().code(), absl::StatusCode::kInvalidArgument)
        << "\"" << conn << "\": " << store.status();
  }
}

TEST(CreateMetadataStoreTest, RejectsNonPositiveTimeout) {
  EXPECT_EQ(CreateMetadataStore("http://127.0.0.1:8080/metadata", 0ms).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(CreateMetadataStore("etcd://127.0.0.1:2379", -5ms).status().code(),
            absl::StatusCode::kInvalidArgument);
}

// ---------------------------------------------------------------------------------------------
// Behaviour common to both backends, against real servers.

enum class Backend { kHttp, kEtcd };

std::string BackendName(const ::testing::TestParamInfo<Backend>& info) {
  return info.param == Backend::kHttp ? "Http" : "Etcd";
}

class MetadataStoreTest : public ::testing::TestWithParam<Backend> {
 protected:
  static void SetUpTestSuite() {
    auto server = HttpMetadataServer::Start("127.0.0.1", 0);
    http_status_ = new absl::Status(server.status());
    if (server.ok()) http_server_ = std::move(server).value().release();
    auto etcd = EtcdProcess::Start();
    etcd_status_ = new absl::Status(etcd.status());
    if (etcd.ok()) etcd_ = std::move(etcd).value().release();
  }
  static void TearDownTestSuite() {
    delete http_server_;
    delete etcd_;
    delete http_status_;
    delete etcd_status_;
    http_server_ = nullptr;
    etcd_ = nullptr;
  }

  void SetUp() override {
    if (GetParam() == Backend::kHttp) {
      ASSERT_TRUE(http_status_->ok()) << "metadata server did not start: " << *http_status_;
      conn_ = absl::StrCat("http://127.0.0.1:", http_server_->port(), "/metadata");
    } else {
      ASSERT_TRUE(etcd_status_->ok()) << "cannot run the etcd backend tests: " << *etcd_status_;
      conn_ = absl::StrCat("etcd://", etcd_->endpoint());
    }
    store_ = CreateOrDie(conn_, kTimeout);
    ASSERT_NE(store_, nullptr);
  }

  // A key unique to the running test.
  static std::string Key(absl::string_view suffix) {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    return absl::StrCat("yb-test/", info->name(), "/", suffix);
  }

  static HttpMetadataServer* http_server_;
  static EtcdProcess* etcd_;
  static absl::Status* http_status_;
  static absl::Status* etcd_status_;
  std::string conn_;
  std::unique_ptr<MetadataStore> store_;
};

HttpMetadataServer* MetadataStoreTest::http_server_ = nullptr;
EtcdProcess* MetadataStoreTest::etcd_ = nullptr;
absl::Status* MetadataStoreTest::http_status_ = nullptr;
absl::Status* MetadataStoreTest::etcd_status_ = nullptr;

TEST_P(MetadataStoreTest, PutGetOverwriteDelete) {
  const std::string key = Key("k");
  ASSERT_TRUE(store_->Put(key, "v1").ok());
  EXPECT_EQ(store_->Get(key).value_or("<error>"), "v1");
  ASSERT_TRUE(store_->Put(key, "v2").ok());
  EXPECT_EQ(store_->Get(key).value_or("<error>"), "v2");
  ASSERT_TRUE(store_->Delete(key).ok());
  EXPECT_EQ(store_->Get(key).status().code(), absl::StatusCode::kNotFound);
}

TEST_P(MetadataStoreTest, MissingKeyIsNotFoundAndDeleteOfMissingIsOk) {
  EXPECT_EQ(store_->Get(Key("never-written")).status().code(), absl::StatusCode::kNotFound);
  EXPECT_TRUE(store_->Delete(Key("never-written")).ok());
}

TEST_P(MetadataStoreTest, EmptyValueRoundTrips) {
  const std::string key = Key("empty");
  ASSERT_TRUE(store_->Put(key, "").ok());
  auto value = store_->Get(key);
  ASSERT_TRUE(value.ok()) << value.status();
  EXPECT_EQ(*value, "");
}

TEST_P(MetadataStoreTest, BinaryValuesRoundTrip) {
  std::string all_bytes;
  for (int i = 0; i < 256; ++i) all_bytes.push_back(static_cast<char>(i));
  const std::string key = Key("binary");
  ASSERT_TRUE(store_->Put(key, all_bytes + all_bytes).ok());
  EXPECT_EQ(store_->Get(key).value_or("<error>"), all_bytes + all_bytes);
}

TEST_P(MetadataStoreTest, OneMebibyteValueRoundTrips) {
  const std::string key = Key("large");
  const std::string value = BinaryValue(1 << 20, 7);
  absl::Status put = store_->Put(key, value);
  ASSERT_TRUE(put.ok()) << put;
  auto got = store_->Get(key);
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_TRUE(*got == value) << "1 MiB value differs, got " << got->size() << " bytes";
}

TEST_P(MetadataStoreTest, SpecialKeysRoundTrip) {
  const std::vector<std::string> keys = {Key("a b/c?d=e&f"),
                                         Key("plus+and%25percent"),
                                         Key("#hash;semi,comma"),
                                         Key("\xe6\x9c\x88\xe9\xa5\xbc"),
                                         Key(std::string("nul\0inside", 10)),
                                         "a b/c?d=e&f"};
  for (size_t i = 0; i < keys.size(); ++i) {
    absl::Status put = store_->Put(keys[i], absl::StrCat("value-", i));
    ASSERT_TRUE(put.ok()) << put;
  }
  for (size_t i = 0; i < keys.size(); ++i) {
    EXPECT_EQ(store_->Get(keys[i]).value_or("<error>"), absl::StrCat("value-", i)) << i;
  }
  // Encodings must not collide: the decoded forms of the keys above are distinct keys.
  EXPECT_EQ(store_->Get(Key("plus and%percent")).status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(store_->Get(Key("plus+and%percent")).status().code(), absl::StatusCode::kNotFound);
  for (const std::string& key : keys) EXPECT_TRUE(store_->Delete(key).ok());
}

TEST_P(MetadataStoreTest, BadKeysAreInvalidArgument) {
  EXPECT_EQ(store_->Put("", "v").code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(store_->Get("").status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(store_->Delete("").code(), absl::StatusCode::kInvalidArgument);
  const std::string too_long(HttpMetadataServer::kMaxKeyBytes + 1, 'k');
  EXPECT_EQ(store_->Put(too_long, "v").code(), absl::StatusCode::kInvalidArgument);
}

TEST_P(MetadataStoreTest, OversizedValueIsRefusedAndOldValueKept) {
  const std::string key = Key("oversized");
  ASSERT_TRUE(store_->Put(key, "small").ok());
  // Over the HTTP server's limit, and over etcd's default request limit (1.5 MiB).
  const size_t size =
      GetParam() == Backend::kHttp ? HttpMetadataServer::kMaxValueBytes + 1 : 2 << 20;
  absl::Status put = store_->Put(key, std::string(size, 'x'));
  EXPECT_TRUE(put.code() == absl::StatusCode::kInvalidArgument ||
              put.code() == absl::StatusCode::kResourceExhausted)
      << put;
  EXPECT_EQ(store_->Get(key).value_or("<error>"), "small");
}

TEST_P(MetadataStoreTest, ConcurrentCallers) {
  constexpr int kThreads = 4;
  constexpr int kOps = 25;
  std::atomic<int> failures{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([this, t, &failures] {
      for (int i = 0; i < kOps; ++i) {
        const std::string key = absl::StrCat(Key("c"), t, "-", i);
        const std::string value = BinaryValue(100 + i, t * 1000 + i);
        if (!store_->Put(key, value).ok() || store_->Get(key).value_or("") != value ||
            !store_->Delete(key).ok()) {
          failures.fetch_add(1);
        }
      }
    });
  }
  for (std::thread& thread : threads) thread.join();
  EXPECT_EQ(failures.load(), 0);
}

TEST_P(MetadataStoreTest, SeparateStoresSeeEachOthersWrites) {
  auto other = CreateOrDie(conn_, kTimeout);
  ASSERT_NE(other, nullptr);
  ASSERT_TRUE(store_->Put(Key("shared"), "from-first").ok());
  EXPECT_EQ(other->Get(Key("shared")).value_or("<error>"), "from-first");
  ASSERT_TRUE(other->Delete(Key("shared")).ok());
  EXPECT_EQ(store_->Get(Key("shared")).status().code(), absl::StatusCode::kNotFound);
}

INSTANTIATE_TEST_SUITE_P(Backends, MetadataStoreTest,
                         ::testing::Values(Backend::kHttp, Backend::kEtcd), BackendName);

// ---------------------------------------------------------------------------------------------
// Unreachable and misbehaving servers: every call ends within its timeout.

bool IsUnreachableCode(absl::StatusCode code) {
  return code == absl::StatusCode::kUnavailable || code == absl::StatusCode::kDeadlineExceeded;
}

// Runs Put, Get and Delete on `conn`; each must fail with an unreachable code within
// `timeout` + kOverrun. Returns the codes seen.
std::vector<absl::StatusCode> ExpectAllCallsFailInTime(const std::string& conn,
                                                       milliseconds timeout) {
  std::vector<absl::StatusCode> codes;
  auto store = CreateOrDie(conn, timeout);
  if (store == nullptr) return codes;
  for (int op = 0; op < 3; ++op) {
    const auto start = std::chrono::steady_clock::now();
    absl::Status status = op == 0   ? store->Put("k", "v")
                          : op == 1 ? store->Get("k").status()
                                    : store->Delete("k");
    const auto elapsed = std::chrono::steady_clock::now() - start;
    EXPECT_TRUE(IsUnreachableCode(status.code())) << conn << " op " << op << ": " << status;
    EXPECT_LE(elapsed, timeout + kOverrun)
        << conn << " op " << op << " took "
        << std::chrono::duration_cast<milliseconds>(elapsed).count() << " ms";
    codes.push_back(status.code());
  }
  return codes;
}

TEST(UnreachableMetadataTest, ClosedPortIsUnavailableQuickly) {
  auto port = PickFreeTcpPort();
  ASSERT_TRUE(port.ok()) << port.status();
  for (const std::string& conn : {absl::StrCat("http://127.0.0.1:", *port, "/metadata"),
                                  absl::StrCat("etcd://127.0.0.1:", *port)}) {
    for (absl::StatusCode code : ExpectAllCallsFailInTime(conn, kTimeout)) {
      EXPECT_EQ(code, absl::StatusCode::kUnavailable) << conn;
    }
  }
}

TEST(UnreachableMetadataTest, SilentServerIsDeadlineExceededWithinTimeout) {
  BlackHole hole;
  for (const std::string& conn : {absl::StrCat("http://", hole.endpoint(), "/metadata"),
                                  absl::StrCat("etcd://", hole.endpoint())}) {
    const auto start = std::chrono::steady_clock::now();
    for (absl::StatusCode code : ExpectAllCallsFailInTime(conn, kShortTimeout)) {
      EXPECT_EQ(code, absl::StatusCode::kDeadlineExceeded) << conn;
    }
    // The calls really waited: none gave up long before its timeout.
    EXPECT_GE(std::chrono::steady_clock::now() - start, 3 * kShortTimeout - 150ms);
  }
}

TEST(UnreachableMetadataTest, LargePutToSilentServerEndsWithinTimeout) {
  BlackHole hole;
  auto store = CreateOrDie(absl::StrCat("http://", hole.endpoint(), "/metadata"), kShortTimeout);
  ASSERT_NE(store, nullptr);
  const std::string value = BinaryValue(8 << 20, 3);  // built before the clock starts
  const auto start = std::chrono::steady_clock::now();
  absl::Status status = store->Put("k", value);
  EXPECT_TRUE(IsUnreachableCode(status.code())) << status;
  EXPECT_LE(std::chrono::steady_clock::now() - start, kShortTimeout + kOverrun);
}

TEST(UnreachableMetadataTest, EtcdWithAllEndpointsSilentStaysWithinOneTimeout) {
  BlackHole first;
  BlackHole second;
  ExpectAllCallsFailInTime(absl::StrCat("etcd://", first.endpoint(), ",", second.endpoint()),
                           kShortTimeout);
}

TEST(UnreachableMetadataTest, ServerErrorsAreUnavailable) {
  FixedAnswerServer broken(500);
  for (const std::string& conn : {absl::StrCat("http://", broken.endpoint(), "/metadata"),
                                  absl::StrCat("etcd://", broken.endpoint())}) {
    auto store = CreateOrDie(conn, kTimeout);
    ASSERT_NE(store, nullptr);
    EXPECT_EQ(store->Put("k", "v").code(), absl::StatusCode::kUnavailable) << conn;
    EXPECT_EQ(store->Get("k").status().code(), absl::StatusCode::kUnavailable) << conn;
    EXPECT_EQ(store->Delete("k").code(), absl::StatusCode::kUnavailable) << conn;
  }
}

// ---------------------------------------------------------------------------------------------
// etcd endpoint lists: failover to the next endpoint.

class EtcdFailoverTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    auto etcd = EtcdProcess::Start();
    status_ = new absl::Status(etcd.status());
    if (etcd.ok()) etcd_ = std::move(etcd).value().release();
  }
  static void TearDownTestSuite() {
    delete etcd_;
    delete status_;
    etcd_ = nullptr;
  }
  void SetUp() override {
    ASSERT_TRUE(status_->ok()) << "cannot run the etcd backend tests: " << *status_;
  }
  static EtcdProcess* etcd_;
  static absl::Status* status_;
};

EtcdProcess* EtcdFailoverTest::etcd_ = nullptr;
absl::Status* EtcdFailoverTest::status_ = nullptr;

TEST_F(EtcdFailoverTest, SkipsDeadAndBrokenEndpoints) {
  auto closed = PickFreeTcpPort();
  ASSERT_TRUE(closed.ok());
  FixedAnswerServer broken(503);
  auto store = CreateOrDie(
      absl::StrCat("etcd://127.0.0.1:", *closed, ",", broken.endpoint(), ",", etcd_->endpoint()),
      kTimeout);
  ASSERT_NE(store, nullptr);
  for (int i = 0; i < 3; ++i) {
    absl::Status put = store->Put("failover", absl::StrCat("v", i));
    ASSERT_TRUE(put.ok()) << put;
    EXPECT_EQ(store->Get("failover").value_or("<error>"), absl::StrCat("v", i));
  }
  EXPECT_TRUE(store->Delete("failover").ok());
}

TEST_F(EtcdFailoverTest, KilledEtcdIsUnavailable) {
  auto own = EtcdProcess::Start();
  ASSERT_TRUE(own.ok()) << own.status();
  auto store = CreateOrDie(absl::StrCat("etcd://", (*own)->endpoint()), kShortTimeout);
  ASSERT_NE(store, nullptr);
  ASSERT_TRUE(store->Put("k", "v").ok());
  (*own)->Kill();
  const auto start = std::chrono::steady_clock::now();
  absl::StatusOr<std::string> got = store->Get("k");
  EXPECT_TRUE(IsUnreachableCode(got.status().code())) << got.status();
  EXPECT_LE(std::chrono::steady_clock::now() - start, kShortTimeout + kOverrun);
}

TEST_F(EtcdFailoverTest, PausedEtcdIsDeadlineExceededWithinTimeout) {
  auto store = CreateOrDie(absl::StrCat("etcd://", etcd_->endpoint()), kShortTimeout);
  ASSERT_NE(store, nullptr);
  ASSERT_TRUE(store->Put("paused", "v").ok());
  etcd_->Pause();
  const auto start = std::chrono::steady_clock::now();
  absl::StatusOr<std::string> got = store->Get("paused");
  const auto elapsed = std::chrono::steady_clock::now() - start;
  etcd_->Resume();
  EXPECT_EQ(got.status().code(), absl::StatusCode::kDeadlineExceeded) << got.status();
  EXPECT_LE(elapsed, kShortTimeout + kOverrun);
  EXPECT_EQ(store->Get("paused").value_or("<error>"), "v");
}

}  // namespace
}  // namespace yuebing::transport
