// The cluster secret primitives: HMAC-SHA256 against RFC 4231, loading from files and the
// environment (with clear errors), and the master call token (valid, wrong secret, stale, forged).
#include "yuebing/common/cluster_auth.h"

#include <gtest/gtest.h>
#include <stdlib.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <string>

#include "absl/strings/escaping.h"
#include "absl/strings/match.h"

namespace yuebing {
namespace {

const std::string kSecret = "correct horse battery staple 42";

std::string WriteTempFile(const std::string& contents) {
  char path[] = "/tmp/yb_secret_XXXXXX";
  int fd = mkstemp(path);
  EXPECT_GE(fd, 0);
  close(fd);
  std::ofstream(path, std::ios::binary) << contents;
  return path;
}

TEST(ClusterAuthTest, HmacMatchesRfc4231) {
  EXPECT_EQ(absl::BytesToHexString(HmacSha256("Jefe", "what do ya want for nothing?")),
            "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843");
}

TEST(ClusterAuthTest, ConstantTimeEquals) {
  EXPECT_TRUE(ConstantTimeEquals("abc", "abc"));
  EXPECT_FALSE(ConstantTimeEquals("abc", "abd"));
  EXPECT_FALSE(ConstantTimeEquals("abc", "abcd"));
}

TEST(ClusterAuthTest, RandomBytesDiffer) {
  auto a = RandomBytes(kNonceBytes);
  auto b = RandomBytes(kNonceBytes);
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_EQ(a->size(), kNonceBytes);
  EXPECT_NE(*a, *b);
}

TEST(ClusterAuthTest, LoadsFromFlagFileEnvFileAndEnvValue) {
  unsetenv(kClusterSecretEnv);
  unsetenv(kClusterSecretFileEnv);
  auto none = LoadClusterSecret();
  ASSERT_TRUE(none.ok());
  EXPECT_EQ(*none, "");

  const std::string file = WriteTempFile(kSecret + "\n");
  auto from_flag = LoadClusterSecret(file);
  ASSERT_TRUE(from_flag.ok()) << from_flag.status();
  EXPECT_EQ(*from_flag, kSecret) << "the trailing newline is dropped";

  ASSERT_EQ(setenv(kClusterSecretEnv, "value from the environment!", 1), 0);
  auto from_env = LoadClusterSecret();
  ASSERT_TRUE(from_env.ok());
  EXPECT_EQ(*from_env, "value from the environment!");

  ASSERT_EQ(setenv(kClusterSecretFileEnv, file.c_str(), 1), 0);
  auto from_env_file = LoadClusterSecret();
  ASSERT_TRUE(from_env_file.ok());
  EXPECT_EQ(*from_env_file, kSecret) << "the file variable wins over the value";

  ASSERT_EQ(setenv(kClusterSecretEnv, "short", 1), 0);
  unsetenv(kClusterSecretFileEnv);
  auto short_env = LoadClusterSecret();
  EXPECT_EQ(short_env.status().code(), absl::StatusCode::kInvalidArgument);
  unsetenv(kClusterSecretEnv);
  unlink(file.c_str());
}

TEST(ClusterAuthTest, BadFilesAreClearErrors) {
  auto missing = LoadClusterSecret("/nonexistent/yb/secret");
  ASSERT_FALSE(missing.ok());
  EXPECT_TRUE(absl::StrContains(missing.status().message(), "/nonexistent/yb/secret"));
  const std::string empty = WriteTempFile("\n\n");
  auto empty_secret = LoadClusterSecret(empty);
  EXPECT_EQ(empty_secret.status().code(), absl::StatusCode::kInvalidArgument);
  unlink(empty.c_str());
}

TEST(ClusterAuthTest, MasterCallToken) {
  const auto now = std::chrono::system_clock::now();
  const auto skew = std::chrono::milliseconds(300000);
  auto token = MakeMasterCallToken(kSecret, now);
  ASSERT_TRUE(token.ok());
  EXPECT_FALSE(absl::StrContains(*token, kSecret));
  EXPECT_TRUE(VerifyMasterCallToken(kSecret, *token, now, skew).ok());
  EXPECT_TRUE(VerifyMasterCallToken(kSecret, *token, now + std::chrono::seconds(60), skew).ok());

  auto wrong = VerifyMasterCallToken("another cluster's secret value", *token, now, skew);
  EXPECT_EQ(wrong.code(), absl::StatusCode::kUnauthenticated);
  auto stale = VerifyMasterCallToken(kSecret, *token, now + std::chrono::minutes(10), skew);
  EXPECT_EQ(stale.code(), absl::StatusCode::kUnauthenticated);
  EXPECT_TRUE(absl::StrContains(stale.message(), "clock"));

  // Moving the timestamp forward breaks the HMAC.
  std::string forged = *token;
  size_t dot = forged.find('.', 3);
  forged[dot - 1] = forged[dot - 1] == '9' ? '8' : '9';
  EXPECT_EQ(VerifyMasterCallToken(kSecret, forged, now, skew).code(),
            absl::StatusCode::kUnauthenticated);
  for (const char* junk : {"", "v1", "v1...", "v2.1.2.3", "v1.x.00.00"}) {
    EXPECT_EQ(VerifyMasterCallToken(kSecret, junk, now, skew).code(),
              absl::StatusCode::kUnauthenticated)
        << junk;
  }
}

}  // namespace
}  // namespace yuebing
