#include "master/upstream_master_flags.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace yuebing::master {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;

TranslatedFlags Translate(const std::vector<std::string>& argv) {
  absl::StatusOr<TranslatedFlags> out = TranslateUpstreamMasterFlags(argv);
  EXPECT_TRUE(out.ok()) << out.status();
  return out.ok() ? *out : TranslatedFlags{};
}

TEST(UpstreamMasterFlagsTest, OwnFlagsAndUnknownFlagsPassThroughUnchanged) {
  const std::vector<std::string> argv = {"m",   "--rpc_port=1",     "--eviction_ratio",
                                         "0.1", "--no_such_flag=2", "positional"};
  TranslatedFlags out = Translate(argv);
  EXPECT_EQ(out.argv, argv);
  EXPECT_THAT(out.warnings, IsEmpty());
}

TEST(UpstreamMasterFlagsTest, PortBecomesRpcPortInEverySpelling) {
  EXPECT_THAT(Translate({"m", "--port=7001"}).argv, ElementsAre("m", "--rpc_port=7001"));
  EXPECT_THAT(Translate({"m", "-port=7002"}).argv, ElementsAre("m", "--rpc_port=7002"));
  EXPECT_THAT(Translate({"m", "--port", "7003", "--metrics_port=9"}).argv,
              ElementsAre("m", "--rpc_port=7003", "--metrics_port=9"));
  TranslatedFlags out = Translate({"m", "--port=7004"});
  ASSERT_EQ(out.warnings.size(), 1u);
  EXPECT_THAT(out.warnings[0], HasSubstr("read as --rpc_port=7004"));
}

TEST(UpstreamMasterFlagsTest, PortIsIgnoredWhenRpcPortIsGiven) {
  TranslatedFlags out = Translate({"m", "--port=7001", "--rpc_port=7002"});
  EXPECT_THAT(out.argv, ElementsAre("m", "--rpc_port=7002"));
  ASSERT_EQ(out.warnings.size(), 1u);
  EXPECT_THAT(out.warnings[0], HasSubstr("--rpc_port is given"));
}

TEST(UpstreamMasterFlagsTest, MeaninglessFlagsAreDroppedWithAWarningEach) {
  TranslatedFlags out =
      Translate({"m", "--max_threads=4", "-v=1", "--logtostderr", "--noenable_metric_reporting",
                 "--enable_gc", "false", "--root_fs_dir", "/mnt/3fs", "--metrics_port=9"});
  // "--enable_gc false": a boolean flag takes no separate value, so "false" stays positional
  // (gflags reads it the same way).
  EXPECT_THAT(out.argv, ElementsAre("m", "false", "--metrics_port=9"));
  ASSERT_EQ(out.warnings.size(), 6u);
  EXPECT_THAT(out.warnings[0], HasSubstr("--max_threads=4"));
  EXPECT_THAT(out.warnings[1], HasSubstr("YUEBING_LOG_LEVEL"));
  EXPECT_THAT(out.warnings[3], HasSubstr("--enable_metric_reporting=false"));
  EXPECT_THAT(out.warnings[5], HasSubstr("--root_fs_dir=/mnt/3fs"));
  // Flags of upstream's store library, which its master links.
  TranslatedFlags arena =
      Translate({"m", "--use_mmap_arena_allocator", "--mmap_arena_pool_size=1073741824"});
  EXPECT_THAT(arena.argv, ElementsAre("m"));
  EXPECT_EQ(arena.warnings.size(), 2u);
}

TEST(UpstreamMasterFlagsTest, EtcdConnstringBecomesEtcdEndpoints) {
  EXPECT_THAT(
      Translate({"m", "--ha_backend_type=etcd", "--ha_backend_connstring=h1:2379;h2:2379"}).argv,
      ElementsAre("m", "--etcd_endpoints=h1:2379;h2:2379"));
}

TEST(UpstreamMasterFlagsTest, UnsafeFlagsAreRefusedByName) {
  absl::StatusOr<TranslatedFlags> config = TranslateUpstreamMasterFlags({"m", "--config_path=x"});
  ASSERT_EQ(config.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(config.status().message(), HasSubstr("--config_path=x"));
  absl::StatusOr<TranslatedFlags> redis =
      TranslateUpstreamMasterFlags({"m", "--ha_backend_type=redis"});
  ASSERT_EQ(redis.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(redis.status().message(), HasSubstr("etcd"));
  absl::StatusOr<TranslatedFlags> missing = TranslateUpstreamMasterFlags({"m", "--port"});
  ASSERT_EQ(missing.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(missing.status().message(), HasSubstr("needs a value"));
}

TEST(UpstreamMasterFlagsTest, MultiTenancyFlagsAreYuebingMasterFlags) {
  // yuebing-master defines them itself: they pass through untouched.
  for (const char* flag :
       {"--enable_multi_tenants", "--enable_multi_tenants=true", "--noenable_multi_tenants",
        "--tenant_quota_connector_type=file", "--tenant_quota_connector_uri=/etc/q.yaml"}) {
    EXPECT_THAT(Translate({"m", flag}).argv, ElementsAre("m", flag)) << flag;
  }
}

TEST(UpstreamMasterFlagsTest, EverythingAfterDoubleDashIsPositional) {
  EXPECT_THAT(Translate({"m", "--", "--port=1"}).argv, ElementsAre("m", "--", "--port=1"));
}

}  // namespace
}  // namespace yuebing::master
