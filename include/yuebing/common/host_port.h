// The one host:port type and parser. Every address yuebing reads (segment names, listen
// addresses, metadata and etcd endpoints, disk endpoints, the master's address) goes through
// ParseHostPort, so all of them accept and refuse the same texts.
//
// Grammar:
//   name ":" port            name: letters, digits, '.', '-', '_' (a host name or IPv4 address)
//   "[" ipv6 "]" ":" port    ipv6: an IPv6 address (inet_pton), optionally "%" zone, the zone
//                            made of letters, digits, '.', '-', '_'
//   port                     decimal digits only (no sign, no spaces), value 0..65535
// Without a port, also: name, "[" ipv6 "]", or a bare ipv6 (it has two or more ':', so it cannot
// carry a port; write "[ipv6]:port" for one). Hosts are at most kMaxHostBytes bytes.
// Port 0 is accepted: a listener reads it as "any port". Code that dials refuses it itself.
//
// Thread safety: plain value type and pure functions.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace yuebing {

struct HostPort {
  static constexpr size_t kMaxHostBytes = 255;

  std::string host;  // a name, an IPv4 address or a bare IPv6 address (no brackets)
  uint16_t port = 0;

  // "host:port", or "[ipv6]:port" when host is an IPv6 address. ParseHostPort reads it back.
  std::string ToString() const;
  // The host as written before ":port": bracketed when it is an IPv6 address ("[::1]").
  std::string HostToString() const;

  friend bool operator==(const HostPort&, const HostPort&) = default;
};

// Parses an address whose port is required ("host:port", "[ipv6]:port").
// Errors: kInvalidArgument naming the text and what is wrong.
[[nodiscard]] absl::StatusOr<HostPort> ParseHostPort(absl::string_view text);

// Parses an address whose port is optional; `default_port` when the text has none.
// Errors: kInvalidArgument naming the text and what is wrong.
[[nodiscard]] absl::StatusOr<HostPort> ParseHostPort(absl::string_view text, uint16_t default_port);

}  // namespace yuebing
