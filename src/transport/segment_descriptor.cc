#include "transport/segment_descriptor.h"

#include <algorithm>
#include <cstdint>

#include "absl/strings/str_cat.h"
#include "nlohmann/json.hpp"

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
  }
  json out = {{"name", d.name},       {"tcp_host", d.tcp_host}, {"tcp_port", d.tcp_port},
              {"host_id", d.host_id}, {"pid", d.pid},           {"epoch", d.epoch},
              {"version", d.version}, {"buffers", buffers}};
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
      d.buffers.push_back(std::move(buffer));
    }
  } catch (const json::exception& e) {
    return absl::InvalidArgumentError(absl::StrCat("bad segment descriptor: ", e.what()));
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
