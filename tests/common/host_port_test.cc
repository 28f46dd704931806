// ParseHostPort and HostPort::ToString: the one host:port grammar every caller shares.
#include "yuebing/common/host_port.h"

#include <gtest/gtest.h>

#include <string>

#include "absl/strings/escaping.h"

namespace yuebing {
namespace {

HostPort ParseOrDie(absl::string_view text) {
  absl::StatusOr<HostPort> parsed = ParseHostPort(text);
  EXPECT_TRUE(parsed.ok()) << text << ": " << parsed.status();
  return parsed.value_or(HostPort{});
}

HostPort ParseOrDie(absl::string_view text, uint16_t default_port) {
  absl::StatusOr<HostPort> parsed = ParseHostPort(text, default_port);
  EXPECT_TRUE(parsed.ok()) << text << ": " << parsed.status();
  return parsed.value_or(HostPort{});
}

TEST(HostPortTest, ParsesNamesAndIpv4WithAPort) {
  EXPECT_EQ(ParseOrDie("127.0.0.1:50051"), (HostPort{"127.0.0.1", 50051}));
  EXPECT_EQ(ParseOrDie("etcd-b.example_1:2380"), (HostPort{"etcd-b.example_1", 2380}));
  EXPECT_EQ(ParseOrDie("h:65535"), (HostPort{"h", 65535}));
  EXPECT_EQ(ParseOrDie("h:007"), (HostPort{"h", 7}));
  // Port 0 is a listener's "any port" (GrpcMasterServer::Start("127.0.0.1:0")).
  EXPECT_EQ(ParseOrDie("127.0.0.1:0"), (HostPort{"127.0.0.1", 0}));
}

TEST(HostPortTest, ParsesBracketedIpv6) {
  EXPECT_EQ(ParseOrDie("[::1]:7"), (HostPort{"::1", 7}));
  EXPECT_EQ(ParseOrDie("[fe80::1%eth0]:80"), (HostPort{"fe80::1%eth0", 80}));
  EXPECT_EQ(ParseOrDie("[::ffff:10.0.0.1]:1"), (HostPort{"::ffff:10.0.0.1", 1}));
  EXPECT_EQ(ParseOrDie("[::1]", 2379), (HostPort{"::1", 2379}));
}

TEST(HostPortTest, DefaultPortAppliesOnlyWhenNoneIsGiven) {
  EXPECT_EQ(ParseOrDie("etcd-host", 2379), (HostPort{"etcd-host", 2379}));
  EXPECT_EQ(ParseOrDie("etcd-host:2380", 2379), (HostPort{"etcd-host", 2380}));
  EXPECT_EQ(ParseOrDie("127.0.0.1", 0), (HostPort{"127.0.0.1", 0}));
  // A bare IPv6 address cannot carry a port: every ':' belongs to the address.
  EXPECT_EQ(ParseOrDie("::1", 80), (HostPort{"::1", 80}));
  EXPECT_EQ(ParseOrDie("fe80::1:2379", 0), (HostPort{"fe80::1:2379", 0}));
}

TEST(HostPortTest, RefusesMalformedText) {
  for (const char* bad : {"",
                          ":",
                          ":2379",
                          "host:",
                          "host:-1",
                          "host:+80",
                          "host: 80",
                          "host:80x",
                          "host:65536",
                          "host:99999999999999999999",
                          "a b:1",
                          " host:1",
                          "ho/st:1",
                          "[::1",
                          "[::1]:",
                          "[::1]x",
                          "[::1]80",
                          "[]:80",
                          "[localhost]:80",
                          "[1.2.3.4]:80",
                          "[::1%]:80",
                          "[::1%e/0]:80",
                          "a:b:c:zz",
                          "fe80::1:2379:",
                          "host]:80"}) {
    for (bool with_default : {false, true}) {
      absl::StatusOr<HostPort> parsed =
          with_default ? ParseHostPort(bad, 2379) : ParseHostPort(bad);
      EXPECT_EQ(parsed.status().code(), absl::StatusCode::kInvalidArgument)
          << "'" << bad << "' default=" << with_default << ": " << parsed.status();
    }
  }
}

TEST(HostPortTest, RefusesEmbeddedNul) {
  // Found by fuzz_host_port: inet_pton stops at a NUL, which must not hide the rest.
  for (absl::string_view bad : {absl::string_view("0::\0\0001]", 7), absl::string_view("h\0:1", 4),
                                absl::string_view("[::1\0x]:1", 9)}) {
    EXPECT_FALSE(ParseHostPort(bad, 1).ok()) << absl::CEscape(bad);
    EXPECT_FALSE(ParseHostPort(bad).ok()) << absl::CEscape(bad);
  }
}

TEST(HostPortTest, RequiredPortIsRequired) {
  for (const char* no_port : {"host", "127.0.0.1", "[::1]", "::1", "fe80::1:2379"}) {
    EXPECT_EQ(ParseHostPort(no_port).status().code(), absl::StatusCode::kInvalidArgument)
        << no_port;
  }
}

TEST(HostPortTest, HostLengthIsBounded) {
  const std::string longest(HostPort::kMaxHostBytes, 'a');
  EXPECT_TRUE(ParseHostPort(longest + ":1").ok());
  EXPECT_FALSE(ParseHostPort(longest + "a:1").ok());
}

TEST(HostPortTest, ErrorsNameTheText) {
  absl::StatusOr<HostPort> parsed = ParseHostPort("db-1:http");
  ASSERT_FALSE(parsed.ok());
  EXPECT_NE(parsed.status().message().find("db-1:http"), absl::string_view::npos)
      << parsed.status();
}

TEST(HostPortTest, ToStringBracketsIpv6AndReadsBack) {
  EXPECT_EQ((HostPort{"10.0.0.1", 2379}).ToString(), "10.0.0.1:2379");
  EXPECT_EQ((HostPort{"::1", 8080}).ToString(), "[::1]:8080");
  EXPECT_EQ((HostPort{"::1", 8080}).HostToString(), "[::1]");
  EXPECT_EQ((HostPort{"h", 1}).HostToString(), "h");
  for (const HostPort& address : {HostPort{"h", 0}, HostPort{"::1", 65535},
                                  HostPort{"fe80::1%eth0", 9}, HostPort{"a.b-c_d", 80}}) {
    EXPECT_EQ(ParseOrDie(address.ToString()), address);
    EXPECT_EQ(ParseOrDie(address.HostToString(), address.port), address);
  }
}

}  // namespace
}  // namespace yuebing
