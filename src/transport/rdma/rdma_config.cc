#include "transport/rdma/rdma_config.h"

#include <cstdlib>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "yuebing/common/status.h"

namespace yuebing::transport::rdma {
namespace {

// Parses `name` into [min, max] if set; leaves `out` alone if unset.
absl::Status ReadUnsigned(const EnvLookup& getenv, const char* name, uint64_t min, uint64_t max,
                          uint64_t& out) {
  std::optional<std::string> text = getenv(name);
  if (!text) return absl::OkStatus();
  uint64_t value = 0;
  if (!absl::SimpleAtoi(*text, &value) || value < min || value > max) {
    return absl::InvalidArgumentError(
        absl::StrCat(name, "='", *text, "' is not an integer in [", min, ", ", max, "]"));
  }
  out = value;
  return absl::OkStatus();
}

template <typename T>
absl::Status ReadInto(const EnvLookup& getenv, const char* name, uint64_t min, uint64_t max,
                      T& field) {
  uint64_t value = static_cast<uint64_t>(field);
  YB_RETURN_IF_ERROR(ReadUnsigned(getenv, name, min, max, value));
  field = static_cast<T>(value);
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<RdmaConfig> LoadRdmaConfig(const EnvLookup& getenv) {
  RdmaConfig c;
  YB_RETURN_IF_ERROR(ReadInto(getenv, "MC_NUM_QP_PER_EP", 1, 255, c.qps_per_endpoint));
  YB_RETURN_IF_ERROR(ReadInto(getenv, "MC_MAX_EP_PER_CTX", 1, 65535, c.max_endpoints));
  YB_RETURN_IF_ERROR(ReadInto(getenv, "MC_SLICE_SIZE", 4096, 1ull << 30, c.slice_bytes));
  YB_RETURN_IF_ERROR(ReadInto(getenv, "MC_RETRY_CNT", 1, 64, c.retry_count));
  YB_RETURN_IF_ERROR(ReadInto(getenv, "MC_IB_PORT", 1, 255, c.ib_port));
  YB_RETURN_IF_ERROR(ReadInto(getenv, "MC_GID_INDEX", 0, 255, c.gid_index));
  YB_RETURN_IF_ERROR(ReadInto(getenv, "MC_MAX_CQE_PER_CTX", 16, 1 << 22, c.max_cqe));
  YB_RETURN_IF_ERROR(ReadInto(getenv, "MC_MAX_WR", 1, 1 << 15, c.max_wr));
  YB_RETURN_IF_ERROR(ReadInto(getenv, "MC_MTU", 512, 4096, c.mtu));
  if (c.mtu != 512 && c.mtu != 1024 && c.mtu != 2048 && c.mtu != 4096) {
    return absl::InvalidArgumentError(
        absl::StrCat("MC_MTU=", c.mtu, " is not one of 512, 1024, 2048, 4096"));
  }
  if (std::optional<std::string> devices = getenv("MC_RDMA_DEVICES")) {
    for (absl::string_view name : absl::StrSplit(*devices, ',', absl::SkipWhitespace())) {
      name = absl::StripAsciiWhitespace(name);
      if (!name.empty()) c.device_filter.emplace_back(name);
    }
  }
  return c;
}

absl::StatusOr<RdmaConfig> LoadRdmaConfigFromEnvironment() {
  return LoadRdmaConfig([](const char* name) -> std::optional<std::string> {
    const char* value = std::getenv(name);
    if (value == nullptr) return std::nullopt;
    return std::string(value);
  });
}

}  // namespace yuebing::transport::rdma
