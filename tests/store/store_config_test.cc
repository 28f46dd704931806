// StoreConfig: Mooncake's configuration sources (constructor fields, JSON, environment, setup
// dict), their defaults and validation, and the translation into a ClientConfig.
#include "yuebing/store/store_config.h"

#include <gtest/gtest.h>
#include <stdlib.h>

#include <cstdio>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "yuebing/common/error_code.h"

namespace yuebing::store {
namespace {

using nlohmann::json;

bool Invalid(const absl::Status& status) {
  return ToErrorCode(status) == ErrorCode::kInvalidParams;
}

json CoreFields() {
  return json{{"local_hostname", "127.0.0.1"},
              {"metadata_server", "P2PHANDSHAKE"},
              {"global_segment_size", "1GB"},
              {"local_buffer_size", 1 << 20},
              {"protocol", " RDMA "},
              {"device_name", nullptr},
              {"master_server_address", "127.0.0.1:50051"}};
}

// An environment of exactly these variables.
StoreConfig::EnvLookup EnvOf(std::map<std::string, std::string> vars) {
  return [vars](const char* name) -> std::optional<std::string> {
    auto it = vars.find(name);
    if (it == vars.end()) return std::nullopt;
    return it->second;
  };
}

TEST(SizeFromValueTest, TypesAndUnits) {
  EXPECT_EQ(SizeFromValue(4096).value_or(0), 4096u);
  EXPECT_EQ(SizeFromValue("4096").value_or(0), 4096u);
  EXPECT_EQ(SizeFromValue(" 16mb ").value_or(0), 16u << 20);
  EXPECT_EQ(SizeFromValue("1.5 GiB").value_or(0), 3u << 29);
  EXPECT_EQ(SizeFromValue(2.9).value_or(0), 2u);  // truncated, as Python's int()
  // A number without a unit as upstream's int(float(text)).
  EXPECT_EQ(SizeFromValue("1.5").value_or(0), 1u);
  EXPECT_EQ(SizeFromValue("1e9").value_or(0), 1000000000u);
  EXPECT_EQ(SizeFromValue("+5").value_or(0), 5u);
  for (const json& bad : {json(""), json("  "), json("lots"), json("-5"), json("12XB"), json(-1),
                          json("1..5"), json("1e99"), json("inf"), json("0x10"), json(-0.5),
                          json(nullptr), json(true), json::array()}) {
    EXPECT_TRUE(Invalid(SizeFromValue(bad).status())) << bad.dump();
  }
}

TEST(BoolFromValueTest, TypesAndWords) {
  EXPECT_TRUE(*BoolFromValue(true));
  EXPECT_TRUE(*BoolFromValue(2));
  EXPECT_FALSE(*BoolFromValue(0.0));
  EXPECT_FALSE(*BoolFromValue(nullptr));
  EXPECT_TRUE(*BoolFromValue(" Yes"));
  EXPECT_FALSE(*BoolFromValue("off"));
  EXPECT_FALSE(*BoolFromValue(""));
  EXPECT_TRUE(Invalid(BoolFromValue("maybe").status()));
}

TEST(StoreConfigTest, FromFieldsNormalizes) {
  absl::StatusOr<StoreConfig> c = StoreConfig::FromFields(CoreFields());
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->protocol, "rdma");
  EXPECT_EQ(c->global_segment_size, int64_t{1} << 30);
  EXPECT_EQ(c->local_buffer_size, 1 << 20);
  EXPECT_EQ(c->device_name, "");
  EXPECT_EQ(c->local_hostname, "127.0.0.1");
  EXPECT_EQ(c->tenant_id, "default");
  EXPECT_EQ(c->client_http_port, kDefaultClientHttpPort);
}

TEST(StoreConfigTest, FromFieldsRefusesBadValues) {
  for (const char* field : {"local_hostname", "metadata_server", "master_server_address"}) {
    for (const json& bad : {json(""), json("  "), json(nullptr), json(5)}) {
      json fields = CoreFields();
      fields[field] = bad;
      EXPECT_TRUE(Invalid(StoreConfig::FromFields(fields).status())) << field << bad.dump();
    }
  }
  for (const json& bad : {json(""), json(nullptr), json(7)}) {
    json fields = CoreFields();
    fields["protocol"] = bad;
    EXPECT_TRUE(Invalid(StoreConfig::FromFields(fields).status())) << bad.dump();
  }
  json huge = CoreFields();
  huge["global_segment_size"] = "8EB";  // does not fit setup()'s int64
  EXPECT_TRUE(Invalid(StoreConfig::FromFields(huge).status()));
  json unknown = CoreFields();
  unknown["protocol"] = "ib";  // kept (setup refuses it)
  ASSERT_TRUE(StoreConfig::FromFields(unknown).ok());
  EXPECT_TRUE(Invalid(StoreConfig::FromFields(unknown)->Validate()));
}

TEST(StoreConfigTest, FromJsonDefaultsAndRequiredFields) {
  json object = {{"local_hostname", "h"},
                 {"metadata_server", "P2PHANDSHAKE"},
                 {"master_server_address", "m:1"}};
  absl::StatusOr<StoreConfig> c = StoreConfig::FromJson(object);
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->global_segment_size, kDefaultGlobalSegmentSize);
  EXPECT_EQ(c->local_buffer_size, kDefaultLocalBufferSize);
  EXPECT_EQ(c->protocol, "tcp");
  EXPECT_EQ(c->device_name, "");
  EXPECT_FALSE(c->enable_ssd_offload);
  EXPECT_EQ(c->tenant_id, "default");
  EXPECT_EQ(c->client_http_port, 9300);

  object["enable_ssd_offload"] = "yes";
  object["ssd_offload_path"] = nullptr;
  object["tenant_id"] = "";
  object["client_http_port"] = "9400";
  c = StoreConfig::FromJson(object);
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_TRUE(c->enable_ssd_offload);
  EXPECT_EQ(c->ssd_offload_path, "");
  EXPECT_EQ(c->tenant_id, "default");
  EXPECT_EQ(c->client_http_port, 9400);

  for (const char* field : {"local_hostname", "metadata_server", "master_server_address"}) {
    json missing = object;
    missing.erase(field);
    EXPECT_TRUE(Invalid(StoreConfig::FromJson(missing).status())) << field;
  }
  object["client_http_port"] = "port";
  EXPECT_TRUE(Invalid(StoreConfig::FromJson(object).status()));
  EXPECT_TRUE(Invalid(StoreConfig::FromJson(json::array()).status()));
  EXPECT_TRUE(Invalid(StoreConfig::FromJsonText("{not json").status()));
}

TEST(StoreConfigTest, FromJsonFile) {
  const std::string path = ::testing::TempDir() + "/store_config_test.json";
  {
    std::ofstream out(path);
    out << CoreFields().dump();
  }
  absl::StatusOr<StoreConfig> c = StoreConfig::FromJsonFile(path);
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->protocol, "rdma");
  std::remove(path.c_str());
  EXPECT_TRUE(absl::IsNotFound(StoreConfig::FromJsonFile(path).status()));
}

TEST(StoreConfigTest, FromEnvironmentVariablesAndDefaults) {
  EXPECT_TRUE(Invalid(StoreConfig::FromEnvironment(EnvOf({})).status()));
  EXPECT_TRUE(Invalid(StoreConfig::FromEnvironment(EnvOf({{"MOONCAKE_MASTER", ""}})).status()));

  absl::StatusOr<StoreConfig> c = StoreConfig::FromEnvironment(EnvOf({{"MOONCAKE_MASTER", "m:1"}}));
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->master_server_address, "m:1");
  EXPECT_EQ(c->local_hostname, "localhost");
  EXPECT_EQ(c->metadata_server, "P2PHANDSHAKE");
  EXPECT_EQ(c->global_segment_size, kDefaultGlobalSegmentSize);
  EXPECT_EQ(c->local_buffer_size, kDefaultLocalBufferSize);
  EXPECT_EQ(c->protocol, "tcp");
  EXPECT_EQ(c->device_name, "");

  c = StoreConfig::FromEnvironment(EnvOf({{"MOONCAKE_MASTER", "10.0.0.1:50051"},
                                          {"MOONCAKE_PROTOCOL", "TCP"},
                                          {"MOONCAKE_GLOBAL_SEGMENT_SIZE", "4GB"},
                                          {"MOONCAKE_LOCAL_BUFFER_SIZE", "512MB"},
                                          {"MOONCAKE_DEVICE", "mlx5_0"},
                                          {"MOONCAKE_OFFLOAD_ENABLED", "true"},
                                          {"MOONCAKE_TENANT_ID", ""},
                                          {"MOONCAKE_CLIENT_HTTP_PORT", "9500"}}));
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->protocol, "tcp");
  EXPECT_EQ(c->global_segment_size, int64_t{4} << 30);
  EXPECT_EQ(c->local_buffer_size, 512 << 20);
  EXPECT_EQ(c->device_name, "mlx5_0");
  EXPECT_TRUE(c->enable_ssd_offload);
  EXPECT_EQ(c->tenant_id, "");  // set but empty: taken as given
  EXPECT_EQ(c->client_http_port, 9500);

  EXPECT_TRUE(
      Invalid(StoreConfig::FromEnvironment(
                  EnvOf({{"MOONCAKE_MASTER", "m:1"}, {"MOONCAKE_GLOBAL_SEGMENT_SIZE", "huge"}}))
                  .status()));
  EXPECT_TRUE(Invalid(StoreConfig::FromEnvironment(
                          EnvOf({{"MOONCAKE_MASTER", "m:1"}, {"MOONCAKE_LOCAL_BUFFER_SIZE", ""}}))
                          .status()));
}

TEST(StoreConfigTest, ConfigPathWinsOverVariables) {
  const std::string path = ::testing::TempDir() + "/store_config_env.json";
  {
    std::ofstream out(path);
    out << CoreFields().dump();
  }
  absl::StatusOr<StoreConfig> c = StoreConfig::FromEnvironment(
      EnvOf({{"MOONCAKE_CONFIG_PATH", path}, {"MOONCAKE_MASTER", "ignored:1"}}));
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->master_server_address, "127.0.0.1:50051");
  std::remove(path.c_str());
  EXPECT_TRUE(absl::IsNotFound(
      StoreConfig::FromEnvironment(EnvOf({{"MOONCAKE_CONFIG_PATH", path}})).status()));
}

TEST(StoreConfigTest, FromSetupDictDefaultsAndAliases) {
  absl::StatusOr<StoreConfig> c =
      StoreConfig::FromSetupDict({{"local_hostname", "h"}, {"metadata_server", "P2PHANDSHAKE"}});
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->global_segment_size, kDefaultSetupDictSegmentSize);
  EXPECT_EQ(c->local_buffer_size, kDefaultSetupDictSegmentSize);
  EXPECT_EQ(c->master_server_address, kDefaultMasterServerAddress);
  EXPECT_EQ(c->protocol, "tcp");
  EXPECT_FALSE(c->enable_shm.has_value());

  c = StoreConfig::FromSetupDict({{"local_hostname", "h"},
                                  {"metadata_server", "m:2379"},
                                  {"global_segment_size", "32MB"},
                                  {"device_name", "mlx5_1"},
                                  {"master_server_address", "m:1"},
                                  {"enable_shm", "False"}});
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->global_segment_size, 32 << 20);
  EXPECT_EQ(c->device_name, "mlx5_1");
  EXPECT_EQ(c->master_server_address, "m:1");
  EXPECT_EQ(c->enable_shm, std::optional<bool>(false));
  c = StoreConfig::FromSetupDict({{"rdma_devices", "a"},
                                  {"device_name", "b"},
                                  {"master_server_addr", "x:1"},
                                  {"master_server_address", "y:1"}});
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c->device_name, "a");
  EXPECT_EQ(c->master_server_address, "x:1");

  EXPECT_TRUE(Invalid(StoreConfig::FromSetupDict({{"local_buffer_size", "lots"}}).status()));
  EXPECT_TRUE(Invalid(StoreConfig::FromSetupDict({{"enable_ssd_offload", "maybe"}}).status()));
}

TEST(StoreConfigTest, ValidateAndTranslate) {
  StoreConfig c;
  c.local_hostname = "127.0.0.1";
  c.metadata_server = "10.0.0.1:2379";
  c.master_server_address = "10.0.0.1:50051";
  c.global_segment_size = 1 << 20;
  c.protocol = " TCP ";
  c.device_name = "mlx5_0";
  c.enable_shm = false;
  absl::StatusOr<ClientConfig> client = c.ToClientConfig();
  ASSERT_TRUE(client.ok()) << client.status();
  EXPECT_EQ(client->metadata_server, "etcd://10.0.0.1:2379");
  EXPECT_EQ(client->protocol, "tcp");
  EXPECT_EQ(client->global_segment_size, 1u << 20);
  EXPECT_EQ(client->device_name, "mlx5_0");
  EXPECT_FALSE(client->enable_shm);

  for (const char* metadata : {"P2PHANDSHAKE", "http://m:8080/metadata", "etcd://m:2379"}) {
    c.metadata_server = metadata;
    EXPECT_EQ(c.ToClientConfig()->metadata_server, metadata);
  }
  c.protocol = "";
  EXPECT_EQ(c.ToClientConfig()->protocol, "tcp");

  auto refused = [&](auto change) {
    StoreConfig bad = c;
    change(bad);
    return Invalid(bad.Validate()) && Invalid(bad.ToClientConfig().status());
  };
  EXPECT_TRUE(refused([](StoreConfig& b) { b.local_hostname = ""; }));
  EXPECT_TRUE(refused([](StoreConfig& b) { b.metadata_server = ""; }));
  EXPECT_TRUE(refused([](StoreConfig& b) { b.master_server_address = ""; }));
  EXPECT_TRUE(refused([](StoreConfig& b) { b.global_segment_size = -1; }));
  EXPECT_TRUE(refused([](StoreConfig& b) { b.local_buffer_size = -1; }));
  EXPECT_TRUE(refused([](StoreConfig& b) { b.protocol = "ib"; }));
  // Tenant ids follow upstream's rule (yuebing/common/tenant_key.h); empty means "default".
  StoreConfig tenant = c;
  tenant.tenant_id = "tenant-a";
  ASSERT_TRUE(tenant.ToClientConfig().ok());
  EXPECT_EQ(tenant.ToClientConfig()->tenant_id, "tenant-a");
  tenant.tenant_id = "";
  EXPECT_EQ(tenant.ToClientConfig()->tenant_id, "default");
  EXPECT_TRUE(refused([](StoreConfig& b) { b.tenant_id = "_system"; }));
  EXPECT_TRUE(refused([](StoreConfig& b) { b.tenant_id = "bad\nname"; }));
  // The disk tier of a client lending memory needs a directory.
  ::unsetenv("MOONCAKE_OFFLOAD_FILE_STORAGE_PATH");
  StoreConfig offload = c;
  offload.enable_ssd_offload = true;
  EXPECT_TRUE(Invalid(offload.ToClientConfig().status()));
  offload.ssd_offload_path = "/tmp";
  ::setenv("MOONCAKE_OFFLOAD_TOTAL_SIZE_LIMIT_BYTES", "64MB", 1);
  absl::StatusOr<ClientConfig> with_tier = offload.ToClientConfig();
  ASSERT_TRUE(with_tier.ok()) << with_tier.status();
  EXPECT_EQ(with_tier->ssd_path, "/tmp");
  EXPECT_EQ(with_tier->ssd_capacity, 64u << 20);
  ::setenv("MOONCAKE_OFFLOAD_TOTAL_SIZE_LIMIT_BYTES", "lots", 1);
  EXPECT_TRUE(Invalid(offload.ToClientConfig().status()));
  ::unsetenv("MOONCAKE_OFFLOAD_TOTAL_SIZE_LIMIT_BYTES");
  with_tier = offload.ToClientConfig();
  ASSERT_TRUE(with_tier.ok());
  EXPECT_GT(with_tier->ssd_capacity, 0u);
  EXPECT_LE(with_tier->ssd_capacity, kDefaultOffloadCapacity);
  offload.global_segment_size = 0;  // lends no memory: nothing to spill, the option is ignored
  EXPECT_EQ(offload.ToClientConfig()->ssd_path, "");
}

TEST(StoreConfigTest, ShmSwitchFromEnvironment) {
  ::unsetenv("YUEBING_ENABLE_SHM");
  EXPECT_TRUE(ShmEnabledByEnvironment());
  for (const char* off : {"0", "false", "NO", "off"}) {
    ::setenv("YUEBING_ENABLE_SHM", off, 1);
    EXPECT_FALSE(ShmEnabledByEnvironment()) << off;
  }
  ::setenv("YUEBING_ENABLE_SHM", "1", 1);
  EXPECT_TRUE(ShmEnabledByEnvironment());
  ::unsetenv("YUEBING_ENABLE_SHM");
  StoreConfig c;
  c.local_hostname = "h";
  c.metadata_server = "P2PHANDSHAKE";
  c.master_server_address = "m:1";
  EXPECT_TRUE(c.ToClientConfig()->enable_shm);
}

}  // namespace
}  // namespace yuebing::store
