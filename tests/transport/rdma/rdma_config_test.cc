#include "transport/rdma/rdma_config.h"

#include <gtest/gtest.h>

#include <map>

namespace yuebing::transport::rdma {
namespace {

EnvLookup Env(std::map<std::string, std::string> vars) {
  return [vars](const char* name) -> std::optional<std::string> {
    auto it = vars.find(name);
    if (it == vars.end()) return std::nullopt;
    return it->second;
  };
}

TEST(RdmaConfigTest, DefaultsWhenNothingIsSet) {
  auto c = LoadRdmaConfig(Env({}));
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c->qps_per_endpoint, 2u);
  EXPECT_EQ(c->max_endpoints, 256u);
  EXPECT_EQ(c->slice_bytes, 64u << 10);
  EXPECT_EQ(c->mtu, 4096u);
  EXPECT_TRUE(c->device_filter.empty());
}

TEST(RdmaConfigTest, ReadsMooncakeNames) {
  auto c = LoadRdmaConfig(Env({{"MC_NUM_QP_PER_EP", "4"},
                               {"MC_MAX_EP_PER_CTX", "32"},
                               {"MC_SLICE_SIZE", "262144"},
                               {"MC_RETRY_CNT", "3"},
                               {"MC_GID_INDEX", "1"},
                               {"MC_MTU", "1024"},
                               {"MC_RDMA_DEVICES", "mlx5_0, mlx5_3"}}));
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->qps_per_endpoint, 4u);
  EXPECT_EQ(c->max_endpoints, 32u);
  EXPECT_EQ(c->slice_bytes, 262144u);
  EXPECT_EQ(c->retry_count, 3u);
  EXPECT_EQ(c->gid_index, 1);
  EXPECT_EQ(c->mtu, 1024u);
  EXPECT_EQ(c->device_filter, (std::vector<std::string>{"mlx5_0", "mlx5_3"}));
}

TEST(RdmaConfigTest, RejectsBadValuesNamingTheVariable) {
  for (auto [name, value] :
       std::vector<std::pair<std::string, std::string>>{{"MC_NUM_QP_PER_EP", "0"},
                                                        {"MC_NUM_QP_PER_EP", "256"},
                                                        {"MC_SLICE_SIZE", "12abc"},
                                                        {"MC_SLICE_SIZE", "-1"},
                                                        {"MC_MTU", "3000"},
                                                        {"MC_RETRY_CNT", ""}}) {
    auto c = LoadRdmaConfig(Env({{name, value}}));
    ASSERT_FALSE(c.ok()) << name << "=" << value;
    EXPECT_EQ(c.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_NE(c.status().message().find(name), std::string::npos) << c.status();
  }
}

}  // namespace
}  // namespace yuebing::transport::rdma
