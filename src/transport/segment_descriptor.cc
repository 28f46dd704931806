#include "transport/segment_descriptor.h"

#include <algorithm>
#include <cstdint>

#include "absl/strings/str_cat.h"
#include "nlohmann/json.hpp"
#include "yuebing/common/status.h"

namespace yuebing::transport {

using nlohmann::json;

namespace {

// Reads an unsigned integer field no larger than `max`; throws json::exception otherwise.
uint64_t Unsigned(const json& object, const char* key, uint64_t max) {
  const json& value = object.at(key);
  if (!value.is_number_unsigned() || value.get<uint64_t>() > max) {
    throw json::type_error::create(
        302, absl::StrCat("'", key, "' is not an unsigned integer <= ", max), &value);
  }
  return value.get<uint64_t>();
}

int32_t Signed32(const json& object, const char* key) {
  const json& value = object.at(key);
  if (!value.is_number_integer() || value.get<int64_t>() < INT32_MIN ||
      value.get<int64_t>() > INT32_MAX) {
    throw json::type_error::create(302, absl::StrCat("'", key, "' is not a 32-bit integer"),
                                   &value);
  }
  return value.get<int32_t>();
}

bool IsHexGid(const std::string& gid) {
  return gid.size() == 32 && std::all_of(gid.begin(), gid.end(), [](char c) {
           return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f');
         });
}

// Reads "rdma_nics" into `d` and checks that every buffer has one rkey per NIC.
absl::Status DecodeRdmaNics(const json& nics, SegmentDescriptor& d) {
  if (!nics.is_array() || nics.size() > kMaxRdmaNics) {
    return absl::InvalidArgumentError(
        absl::StrCat("'rdma_nics' is not an array of at most ", kMaxRdmaNics, " NICs"));
  }
  for (const json& n : nics) {
    RdmaNicDescriptor nic;
    nic.name = n.at("name").get<std::string>();
    nic.lid = static_cast<uint16_t>(Unsigned(n, "lid", 0xffff));
    nic.gid = n.at("gid").get<std::string>();
    if (nic.name.empty() || !IsHexGid(nic.gid)) {
      return absl::InvalidArgumentError("an RDMA NIC lacks a name or a 32-hex-digit GID");
    }
    for (const RdmaNicDescriptor& other : d.rdma_nics) {
      if (other.name == nic.name) {
        return absl::InvalidArgumentError(absl::StrCat("RDMA NIC '", nic.name, "' listed twice"));
      }
    }
    d.rdma_nics.push_back(std::move(nic));
  }
  return absl::OkStatus();
}

}  // namespace

const BufferDescriptor* SegmentDescriptor::FindBuffer(uint64_t addr, uint64_t length) const {
  for (const BufferDescriptor& buffer : buffers) {
    if (addr >= buffer.addr && addr - buffer.addr < buffer.length &&
        length <= buffer.length - (addr - buffer.addr)) {
      return &buffer;
    }
  }
  return nullptr;
}

std::string EncodeSegmentDescriptor(const SegmentDescriptor& d) {
  json buffers = json::array();
  for (const BufferDescriptor& b : d.buffers) {
    buffers.push_back({{"addr", b.addr},
                       {"length", b.length},
                       {"location", b.location},
                       {"shm_fd", b.shm_fd},
                       {"shm_id", b.shm_id}});
    if (!b.rkeys.empty()) buffers.back()["rkeys"] = b.rkeys;
  }
  json out = {{"name", d.name},       {"tcp_host", d.tcp_host}, {"tcp_port", d.tcp_port},
              {"host_id", d.host_id}, {"pid", d.pid},           {"epoch", d.epoch},
              {"version", d.version}, {"buffers", buffers}};
  if (!d.rdma_nics.empty()) {
    json nics = json::array();
    for (const RdmaNicDescriptor& nic : d.rdma_nics) {
      nics.push_back({{"name", nic.name}, {"lid", nic.lid}, {"gid", nic.gid}});
    }
    out["rdma_nics"] = std::move(nics);
  }
  return out.dump();
}

absl::StatusOr<SegmentDescriptor> DecodeSegmentDescriptor(absl::string_view text) {
  json in = json::parse(text.begin(), text.end(), nullptr, /*allow_exceptions=*/false);
  if (in.is_discarded() || !in.is_object()) {
    return absl::InvalidArgumentError("segment descriptor is not a JSON object");
  }
  SegmentDescriptor d;
  try {
    d.name = in.at("name").get<std::string>();
    d.tcp_host = in.at("tcp_host").get<std::string>();
    d.tcp_port = static_cast<uint16_t>(Unsigned(in, "tcp_port", 65535));
    d.host_id = in.at("host_id").get<std::string>();
    d.pid = Signed32(in, "pid");
    d.epoch = Unsigned(in, "epoch", UINT64_MAX);
    d.version = Unsigned(in, "version", UINT64_MAX);
    const json& buffers = in.at("buffers");
    if (!buffers.is_array()) return absl::InvalidArgumentError("'buffers' is not an array");
    for (const json& b : buffers) {
      BufferDescriptor buffer;
      buffer.addr = Unsigned(b, "addr", UINT64_MAX);
      buffer.length = Unsigned(b, "length", UINT64_MAX);
      buffer.location = b.at("location").get<std::string>();
      buffer.shm_fd = Signed32(b, "shm_fd");
      buffer.shm_id = Unsigned(b, "shm_id", UINT64_MAX);
      if (b.contains("rkeys")) {
        const json& rkeys = b.at("rkeys");
        if (!rkeys.is_array()) return absl::InvalidArgumentError("'rkeys' is not an array");
        for (const json& rkey : rkeys) {
          if (!rkey.is_number_unsigned() || rkey.get<uint64_t>() > UINT32_MAX) {
            return absl::InvalidArgumentError("an rkey is not a 32-bit unsigned integer");
          }
          buffer.rkeys.push_back(rkey.get<uint32_t>());
        }
      }
      d.buffers.push_back(std::move(buffer));
    }
    if (in.contains("rdma_nics")) YB_RETURN_IF_ERROR(DecodeRdmaNics(in.at("rdma_nics"), d));
  } catch (const json::exception& e) {
    return absl::InvalidArgumentError(absl::StrCat("bad segment descriptor: ", e.what()));
  }
  for (const BufferDescriptor& b : d.buffers) {
    if (b.rkeys.size() != d.rdma_nics.size()) {
      return absl::InvalidArgumentError(absl::StrCat("buffer at ", b.addr, " has ", b.rkeys.size(),
                                                     " rkeys for ", d.rdma_nics.size(),
                                                     " RDMA NICs"));
    }
  }
  if (d.name.empty() || d.tcp_port == 0 || d.epoch == 0) {
    return absl::InvalidArgumentError("segment descriptor lacks name, port or epoch");
  }
  std::sort(d.buffers.begin(), d.buffers.end(),
            [](const auto& a, const auto& b) { return a.addr < b.addr; });
  uint64_t previous_end = 0;
  for (const BufferDescriptor& b : d.buffers) {
    if (b.length == 0 || b.addr + b.length < b.addr || b.addr < previous_end) {
      return absl::InvalidArgumentError("segment descriptor has empty or overlapping buffers");
    }
    previous_end = b.addr + b.length;
  }
  return d;
}

std::string SegmentMetadataKey(absl::string_view segment_name) {
  return absl::StrCat("yuebing/segment/", segment_name);
}

}  // namespace yuebing::transport
