#include "yuebing/common/host_port.h"

#include <arpa/inet.h>
#include <netinet/in.h>

#include <algorithm>
#include <cstring>
#include <optional>

#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "yuebing/common/status.h"

namespace yuebing {
namespace {

bool IsNameChar(char c) {
  return absl::ascii_isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '-' || c == '_';
}

absl::Status Bad(absl::string_view text, absl::string_view why) {
  return absl::InvalidArgumentError(absl::StrCat("bad address '", absl::CEscape(text), "': ", why));
}

// An IPv6 address (as inet_pton reads it), optionally followed by "%zone".
bool IsIpv6(absl::string_view text) {
  const size_t percent = text.find('%');
  if (percent != absl::string_view::npos) {
    const absl::string_view zone = text.substr(percent + 1);
    if (zone.empty() || !std::all_of(zone.begin(), zone.end(), IsNameChar)) return false;
    text = text.substr(0, percent);
  }
  char address[INET6_ADDRSTRLEN];
  if (text.empty() || text.size() >= sizeof(address)) return false;
  // inet_pton stops at a NUL; only the address's own characters may reach it.
  if (!std::all_of(text.begin(), text.end(), [](char c) {
        return absl::ascii_isxdigit(static_cast<unsigned char>(c)) || c == ':' || c == '.';
      })) {
    return false;
  }
  std::memcpy(address, text.data(), text.size());
  address[text.size()] = '\0';
  in6_addr parsed;
  return inet_pton(AF_INET6, address, &parsed) == 1;
}

absl::StatusOr<uint16_t> ParsePort(absl::string_view text, absl::string_view port) {
  if (port.empty()) return Bad(text, "empty port");
  uint32_t value = 0;
  for (char c : port) {
    if (!absl::ascii_isdigit(static_cast<unsigned char>(c))) {
      return Bad(text, "the port must be decimal digits");
    }
    value = value * 10 + static_cast<uint32_t>(c - '0');
    if (value > 65535) return Bad(text, "the port must be 0..65535");
  }
  return static_cast<uint16_t>(value);
}

absl::StatusOr<HostPort> Parse(absl::string_view text, std::optional<uint16_t> default_port) {
  absl::string_view host = text;
  std::optional<absl::string_view> port;
  bool ipv6 = false;
  if (absl::ConsumePrefix(&host, "[")) {
    const size_t close = host.find(']');
    if (close == absl::string_view::npos) return Bad(text, "missing ']'");
    absl::string_view rest = host.substr(close + 1);
    host = host.substr(0, close);
    if (!rest.empty()) {
      if (!absl::ConsumePrefix(&rest, ":")) return Bad(text, "expected ':' after ']'");
      port = rest;
    }
    if (!IsIpv6(host)) return Bad(text, "not an IPv6 address in brackets");
    ipv6 = true;
  } else if (const size_t colon = host.find(':'); colon != absl::string_view::npos) {
    if (host.find(':', colon + 1) == absl::string_view::npos) {
      port = host.substr(colon + 1);
      host = host.substr(0, colon);
    } else {
      if (!IsIpv6(host)) return Bad(text, "a name takes one ':' (IPv6 addresses: [ipv6]:port)");
      ipv6 = true;
    }
  }
  if (host.empty()) return Bad(text, "empty host");
  if (host.size() > HostPort::kMaxHostBytes) {
    return Bad(text, absl::StrCat("host longer than ", HostPort::kMaxHostBytes, " bytes"));
  }
  if (!ipv6 && !std::all_of(host.begin(), host.end(), IsNameChar)) {
    return Bad(text, "a host name may hold only letters, digits, '.', '-' and '_'");
  }
  HostPort out;
  out.host = std::string(host);
  if (port.has_value()) {
    YB_ASSIGN_OR_RETURN(out.port, ParsePort(text, *port));
  } else if (default_port.has_value()) {
    out.port = *default_port;
  } else {
    return Bad(text, ipv6 ? "missing port (an IPv6 address with a port is written [ipv6]:port)"
                          : "missing port (host:port)");
  }
  return out;
}

}  // namespace

std::string HostPort::ToString() const { return absl::StrCat(HostToString(), ":", port); }

std::string HostPort::HostToString() const {
  if (host.find(':') != std::string::npos) return absl::StrCat("[", host, "]");
  return host;
}

absl::StatusOr<HostPort> ParseHostPort(absl::string_view text) { return Parse(text, std::nullopt); }

absl::StatusOr<HostPort> ParseHostPort(absl::string_view text, uint16_t default_port) {
  return Parse(text, default_port);
}

}  // namespace yuebing
