// The master's gRPC API with a cluster secret and with TLS, over real channels on 127.0.0.1,
// through the store's MasterClient: matching secrets are served; a client without the secret or
// with another one gets UNAUTHENTICATED (kRpcFail) and the master's state is untouched; a TLS
// master serves TLS clients that trust its CA, and a plaintext client fails within its deadline.
#include <gtest/gtest.h>
#include <httplib.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/wait.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <string>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "master/grpc_master_server.h"
#include "store/master_client.h"
#include "support/child_process.h"
#include "support/etcd_process.h"
#include "support/test_cluster.h"
#include "yuebing/common/error_code.h"
#include "yuebing/master/master_service.h"
#include "yuebing/store/client.h"

namespace yuebing::master {
namespace {

using store::MasterClient;

const std::string kSecret = "correct horse battery staple 42";
const std::string kOtherSecret = "another cluster's secret value";
const std::string kClient = "0123456789abcdef0123456789abcdef";
constexpr auto kRpcTimeout = std::chrono::milliseconds(3000);

MasterRpcSecurity Security(const std::string& secret, const std::string& cert = "",
                           const std::string& key = "", const std::string& ca = "") {
  MasterRpcSecurity security;
  security.cluster_secret = secret;
  security.tls_cert_pem = cert;
  security.tls_key_pem = key;
  security.tls_ca_pem = ca;
  return security;
}

class MasterAuthTest : public ::testing::Test {
 protected:
  void StartServer(MasterRpcSecurity security) {
    service_ = std::make_unique<MasterService>(MasterOptions{});
    GrpcMasterServer::Options options;
    options.security = std::move(security);
    auto server = GrpcMasterServer::Start("127.0.0.1:0", service_.get(), options);
    ASSERT_TRUE(server.ok()) << server.status();
    server_ = std::move(server).value();
    address_ = absl::StrCat("127.0.0.1:", server_->port());
  }

  std::unique_ptr<MasterClient> Client(MasterRpcSecurity security) {
    auto client = MasterClient::Create(address_, kRpcTimeout, security);
    EXPECT_TRUE(client.ok()) << client.status();
    return client.ok() ? std::move(client).value() : nullptr;
  }

  // Puts object "k" straight into the MasterService, as a legitimate client would.
  void SeedObject() {
    ASSERT_TRUE(service_->MountSegment(kClient, Segment{"seg", 0x7f0000000000, 1 << 20}).ok());
    ASSERT_TRUE(service_->PutStart(kClient, "k", 4096, ReplicateConfig{}).ok());
    ASSERT_TRUE(service_->PutEnd(kClient, "k", 0).ok());
  }

  std::unique_ptr<MasterService> service_;
  std::unique_ptr<GrpcMasterServer> server_;
  std::string address_;
};

TEST_F(MasterAuthTest, MatchingSecretIsServed) {
  StartServer(Security(kSecret));
  SeedObject();
  auto client = Client(Security(kSecret));
  ASSERT_NE(client, nullptr);
  auto exist = client->BatchExist({"k", "missing"});
  ASSERT_TRUE(exist.ok()) << exist.status();
  EXPECT_EQ(*exist, (std::vector<bool>{true, false}));
  EXPECT_TRUE(client->Ping(kClient).ok());
}

TEST_F(MasterAuthTest, ClientsWithoutTheSecretAreRefusedAndChangeNothing) {
  StartServer(Security(kSecret));
  SeedObject();
  for (const std::string& secret : {std::string(), kOtherSecret}) {
    SCOPED_TRACE(secret.empty() ? "no secret" : "wrong secret");
    auto stranger = Client(Security(secret));
    ASSERT_NE(stranger, nullptr);
    auto removed = stranger->RemoveAll(/*force=*/true, "");
    ASSERT_FALSE(removed.ok());
    EXPECT_EQ(ToErrorCode(removed.status()), ErrorCode::kRpcFail) << removed.status();
    EXPECT_TRUE(absl::StrContains(
        removed.status().message(),
        secret.empty() ? "requires the cluster secret" : "does not match this cluster's secret"))
        << removed.status();
    auto mounted = stranger->MountSegment(kClient, Segment{"other", 0x7f1000000000, 1 << 20});
    EXPECT_FALSE(mounted.ok());
    EXPECT_TRUE(service_->Exist("k")) << "a refused call reached the master";
  }
  auto client = Client(Security(kSecret));
  ASSERT_NE(client, nullptr);
  auto exist = client->BatchExist({"k"});
  ASSERT_TRUE(exist.ok()) << exist.status();
  EXPECT_TRUE((*exist)[0]);
}

// A client with a secret talking to a master without one is served: the master does not ask.
TEST_F(MasterAuthTest, MasterWithoutSecretIgnoresCredential) {
  StartServer(Security(""));
  auto client = Client(Security(kSecret));
  ASSERT_NE(client, nullptr);
  EXPECT_TRUE(client->Ping(kClient).ok());
}

// A self-signed certificate for 127.0.0.1/localhost made with the openssl CLI.
struct TestCertificate {
  std::string dir;  // removed by RemoveCertificate
  std::string cert_pem;
  std::string key_pem;
  std::string cert_path;
};

TestCertificate MakeCertificate() {
  char dir_template[] = "/tmp/yb_tls_XXXXXX";
  const char* dir = mkdtemp(dir_template);
  EXPECT_NE(dir, nullptr);
  if (dir == nullptr) return {};
  const std::string cert = absl::StrCat(dir, "/cert.pem");
  const std::string key = absl::StrCat(dir, "/key.pem");
  const std::string command = absl::StrCat(
      "openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj /CN=localhost "
      "-addext subjectAltName=IP:127.0.0.1,DNS:localhost -keyout ",
      key, " -out ", cert, " >/dev/null 2>&1");
  EXPECT_EQ(std::system(command.c_str()), 0) << command;
  TestCertificate out;
  out.dir = dir;
  auto cert_pem = ReadPemFile(cert, "certificate");
  auto key_pem = ReadPemFile(key, "key");
  EXPECT_TRUE(cert_pem.ok()) << cert_pem.status();
  EXPECT_TRUE(key_pem.ok()) << key_pem.status();
  if (cert_pem.ok()) out.cert_pem = *cert_pem;
  if (key_pem.ok()) out.key_pem = *key_pem;
  out.cert_path = cert;
  return out;
}

void RemoveCertificate(const TestCertificate& cert) {
  if (!cert.dir.empty()) std::filesystem::remove_all(cert.dir);
}

TEST_F(MasterAuthTest, TlsMasterServesTlsClientsAndRefusesPlaintext) {
  TestCertificate cert = MakeCertificate();
  ASSERT_FALSE(cert.cert_pem.empty());
  StartServer(Security(kSecret, cert.cert_pem, cert.key_pem));
  SeedObject();
  auto client = Client(Security(kSecret, "", "", cert.cert_pem));
  ASSERT_NE(client, nullptr);
  auto exist = client->BatchExist({"k"});
  ASSERT_TRUE(exist.ok()) << exist.status();
  EXPECT_TRUE((*exist)[0]);

  // TLS but no secret: still refused.
  auto no_secret = Client(Security("", "", "", cert.cert_pem));
  ASSERT_NE(no_secret, nullptr);
  EXPECT_FALSE(no_secret->Ping(kClient).ok());

  // Plaintext to a TLS master: fails cleanly, within the call's deadline (plus slack).
  auto plaintext = Client(Security(kSecret));
  ASSERT_NE(plaintext, nullptr);
  const auto start = std::chrono::steady_clock::now();
  auto status = plaintext->Ping(kClient).status();
  const auto elapsed = std::chrono::steady_clock::now() - start;
  EXPECT_EQ(ToErrorCode(status), ErrorCode::kRpcFail) << status;
  EXPECT_LT(elapsed, kRpcTimeout + std::chrono::seconds(10));
  EXPECT_TRUE(service_->Exist("k"));
  RemoveCertificate(cert);
}

TEST_F(MasterAuthTest, TlsClientRefusesUntrustedMaster) {
  TestCertificate served = MakeCertificate();
  TestCertificate other = MakeCertificate();
  ASSERT_FALSE(served.cert_pem.empty());
  ASSERT_FALSE(other.cert_pem.empty());
  StartServer(Security("", served.cert_pem, served.key_pem));
  auto client = Client(Security("", "", "", other.cert_pem));
  ASSERT_NE(client, nullptr);
  auto status = client->Ping(kClient).status();
  EXPECT_EQ(ToErrorCode(status), ErrorCode::kRpcFail) << status;
  RemoveCertificate(served);
  RemoveCertificate(other);
}

TEST_F(MasterAuthTest, CertificateWithoutKeyIsRejected) {
  service_ = std::make_unique<MasterService>(MasterOptions{});
  GrpcMasterServer::Options options;
  options.security.tls_cert_pem = "-----BEGIN CERTIFICATE-----";
  auto server = GrpcMasterServer::Start("127.0.0.1:0", service_.get(), options);
  EXPECT_EQ(server.status().code(), absl::StatusCode::kInvalidArgument);
}

// Real processes: yuebing-master with --cluster_secret_file and TLS flags; yuebing-store processes
// with and without the secret (from the environment) and the CA.
TEST(MasterAuthProcessTest, MasterAndStoreProcessesWithSecretAndTls) {
  using test_support::ChildProcess;
  using test_support::TestCluster;
  TestCertificate cert = MakeCertificate();
  ASSERT_FALSE(cert.cert_pem.empty());
  const std::string dir = cert.cert_path.substr(0, cert.cert_path.rfind('/'));
  const std::string secret_file = dir + "/secret";
  ASSERT_EQ(std::system(absl::StrCat("printf '%s\\n' '", kSecret, "' > ", secret_file).c_str()), 0);
  TestCluster cluster({.master_flags = {absl::StrCat("--cluster_secret_file=", secret_file),
                                        absl::StrCat("--tls_cert_file=", cert.cert_path),
                                        absl::StrCat("--tls_key_file=", dir, "/key.pem")},
                       .store_size = "16MB",
                       .store_flags = {"--rpc_timeout_ms=3000"},
                       .start_timeout = std::chrono::seconds(30)});
  ASSERT_EQ(cluster.StartMaster(), 0);
  const std::string address = cluster.master_address();

  auto client =
      MasterClient::Create(address, kRpcTimeout, Security(kSecret, "", "", cert.cert_pem));
  ASSERT_TRUE(client.ok());
  EXPECT_TRUE((*client)->Ping(kClient).ok());
  auto stranger = MasterClient::Create(address, kRpcTimeout, Security("", "", "", cert.cert_pem));
  ASSERT_TRUE(stranger.ok());
  EXPECT_FALSE((*stranger)->Ping(kClient).ok());
  // The unauthenticated admin HTTP port refuses remove_all on a master with a secret.
  {
    httplib::Client http("127.0.0.1", cluster.metrics_port());
    http.set_connection_timeout(std::chrono::seconds(2));
    auto res = http.Post("/api/v1/remove_all?force=true");
    ASSERT_TRUE(res);
    EXPECT_EQ(res->status, 403);
  }

  // Stores get the secret and the CA from the environment, their stderr joined to stdout.
  const TestCluster::StoreSpec joined{.prefix = {"/bin/sh", "-c", "exec \"$0\" \"$@\" 2>&1"}};
  setenv("YUEBING_CLUSTER_SECRET_FILE", secret_file.c_str(), 1);
  setenv("YUEBING_MASTER_TLS_CA_FILE", cert.cert_path.c_str(), 1);
  const int store = cluster.StartStore(joined);
  unsetenv("YUEBING_CLUSTER_SECRET_FILE");
  EXPECT_GE(store, 0);
  auto refused = ChildProcess::Start(cluster.StoreArgv(joined));  // without the secret
  unsetenv("YUEBING_MASTER_TLS_CA_FILE");
  ASSERT_TRUE(refused.ok()) << refused.status();
  std::string output;
  for (;;) {
    auto line = (*refused)->ReadLine(std::chrono::seconds(30));
    if (!line.ok()) break;
    absl::StrAppend(&output, *line, "\n");
  }
  auto exit_status = (*refused)->Wait(std::chrono::seconds(30));
  ASSERT_TRUE(exit_status.ok());
  EXPECT_TRUE(WIFEXITED(*exit_status) && WEXITSTATUS(*exit_status) == 1) << output;
  EXPECT_TRUE(absl::StrContains(output, "requires the cluster secret")) << output;

  // An in-process store client with the secret (no segment of its own): its bytes go to the
  // store process over the authenticated transport and come back.
  store::ClientConfig config;
  config.master_server_address = address;
  config.cluster_secret = kSecret;
  config.master_tls_ca_file = cert.cert_path;
  config.enable_shm = false;
  auto user = store::Client::Create(config);
  ASSERT_TRUE(user.ok()) << user.status();
  const std::string value(256 << 10, 'v');
  ASSERT_TRUE((*user)->Put("secret-object", value).ok());
  auto got = (*user)->Get("secret-object");
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_EQ(*got, value);
  EXPECT_GT((*user)->Engine().Stats().tcp_bytes, 0u);
  user->reset();
  config.cluster_secret = kOtherSecret;
  auto wrong = store::Client::Create(config);
  EXPECT_FALSE(wrong.ok());

  if (store >= 0) {
    cluster.store(store).process->Signal(SIGTERM);
    EXPECT_TRUE(cluster.store(store).process->Wait(std::chrono::seconds(30)).ok());
  }
  cluster.SignalMaster(0, SIGTERM);
  EXPECT_TRUE(cluster.master().process->Wait(std::chrono::seconds(30)).ok());
  RemoveCertificate(cert);
}

TEST(MasterAuthProcessTest, UnusableSecretFileStopsTheMaster) {
  auto master = test_support::ChildProcess::Start({test_support::TestCluster::MasterBinary(),
                                                   "--rpc_port=0", "--metrics_port=0",
                                                   "--cluster_secret_file=/nonexistent/yb-secret"});
  ASSERT_TRUE(master.ok());
  auto status = (*master)->Wait(std::chrono::seconds(20));
  ASSERT_TRUE(status.ok()) << status.status();
  EXPECT_TRUE(WIFEXITED(*status) && WEXITSTATUS(*status) == 2) << *status;
}

}  // namespace
}  // namespace yuebing::master
