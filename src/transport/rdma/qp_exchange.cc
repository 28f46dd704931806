#include "transport/rdma/qp_exchange.h"

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "nlohmann/json.hpp"

namespace yuebing::transport::rdma {
namespace {

using nlohmann::json;

constexpr uint32_t k24Bits = (1u << 24) - 1;

json ToJson(const QpSetInfo& info) {
  return {{"nic", info.nic}, {"lid", info.lid}, {"gid", GidToHex(info.gid)},
          {"psn", info.psn}, {"mtu", info.mtu}, {"qpns", info.qpns}};
}

uint64_t Unsigned(const json& object, const char* key, uint64_t max) {
  const json& value = object.at(key);
  if (!value.is_number_unsigned() || value.get<uint64_t>() > max) {
    throw json::type_error::create(
        302, absl::StrCat("'", key, "' is not an unsigned integer <= ", max), &value);
  }
  return value.get<uint64_t>();
}

std::string String(const json& object, const char* key) {
  const json& value = object.at(key);
  if (!value.is_string() || value.get<std::string>().empty()) {
    throw json::type_error::create(302, absl::StrCat("'", key, "' is not a non-empty string"),
                                   &value);
  }
  return value.get<std::string>();
}

absl::StatusOr<QpSetInfo> FromJson(const json& in) {
  if (!in.is_object()) return absl::InvalidArgumentError("QP info is not a JSON object");
  QpSetInfo info;
  try {
    info.nic = String(in, "nic");
    info.lid = static_cast<uint16_t>(Unsigned(in, "lid", 0xffff));
    absl::StatusOr<Gid> gid = GidFromHex(String(in, "gid"));
    if (!gid.ok()) return gid.status();
    info.gid = *gid;
    info.psn = static_cast<uint32_t>(Unsigned(in, "psn", k24Bits));
    info.mtu = static_cast<uint32_t>(Unsigned(in, "mtu", 4096));
    const json& qpns = in.at("qpns");
    if (!qpns.is_array() || qpns.empty() || qpns.size() > 255) {
      return absl::InvalidArgumentError("'qpns' is not an array of 1..255 QP numbers");
    }
    for (const json& qpn : qpns) {
      if (!qpn.is_number_unsigned() || qpn.get<uint64_t>() > k24Bits || qpn.get<uint64_t>() == 0) {
        return absl::InvalidArgumentError("a QP number is not in 1..2^24-1");
      }
      info.qpns.push_back(qpn.get<uint32_t>());
    }
  } catch (const json::exception& e) {
    return absl::InvalidArgumentError(absl::StrCat("bad QP info: ", e.what()));
  }
  if (info.mtu != 256 && info.mtu != 512 && info.mtu != 1024 && info.mtu != 2048 &&
      info.mtu != 4096) {
    return absl::InvalidArgumentError(absl::StrCat("bad QP info: MTU ", info.mtu));
  }
  return info;
}

json Parse(absl::string_view text) {
  return json::parse(text.begin(), text.end(), nullptr, /*allow_exceptions=*/false);
}

}  // namespace

std::string GidToHex(const Gid& gid) {
  return absl::BytesToHexString(
      absl::string_view(reinterpret_cast<const char*>(gid.data()), gid.size()));
}

absl::StatusOr<Gid> GidFromHex(absl::string_view hex) {
  if (hex.size() != 32) return absl::InvalidArgumentError("a GID is 32 hex digits");
  for (char c : hex) {
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F'))) {
      return absl::InvalidArgumentError(absl::StrCat("GID '", hex, "' is not hex"));
    }
  }
  std::string bytes = absl::HexStringToBytes(hex);
  Gid gid{};
  for (size_t i = 0; i < gid.size(); ++i) gid[i] = static_cast<uint8_t>(bytes[i]);
  return gid;
}

std::string EncodeQpSetInfo(const QpSetInfo& info) { return ToJson(info).dump(); }

std::string EncodeRdmaConnectRequest(const RdmaConnectRequest& request) {
  json out = {{"initiator", request.initiator},
              {"target_nic", request.target_nic},
              {"qps", ToJson(request.qps)}};
  return out.dump();
}

absl::StatusOr<QpSetInfo> DecodeQpSetInfo(absl::string_view text) { return FromJson(Parse(text)); }

absl::StatusOr<RdmaConnectRequest> DecodeRdmaConnectRequest(absl::string_view text) {
  json in = Parse(text);
  if (!in.is_object() || !in.contains("qps")) {
    return absl::InvalidArgumentError("RDMA connect request is not a JSON object with 'qps'");
  }
  RdmaConnectRequest request;
  try {
    request.initiator = String(in, "initiator");
    request.target_nic = String(in, "target_nic");
  } catch (const json::exception& e) {
    return absl::InvalidArgumentError(absl::StrCat("bad RDMA connect request: ", e.what()));
  }
  absl::StatusOr<QpSetInfo> qps = FromJson(in.at("qps"));
  if (!qps.ok()) return qps.status();
  request.qps = *std::move(qps);
  return request;
}

}  // namespace yuebing::transport::rdma
