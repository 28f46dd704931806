// The port range a store client's engine picks from when its local_hostname has none, read from
// upstream Mooncake's environment variables (src/store/engine_port.h).
#include "store/engine_port.h"

#include <gtest/gtest.h>

#include <map>
#include <optional>
#include <string>

namespace yuebing::store {
namespace {

PortEnvLookup Env(std::map<std::string, std::string> values) {
  return [values](const char* name) -> std::optional<std::string> {
    auto it = values.find(name);
    return it == values.end() ? std::nullopt : std::optional<std::string>(it->second);
  };
}

TEST(EnginePortRangeTest, DefaultsAreUpstreamsRange) {
  const EnginePortRange range = EnginePortRangeFromEnvironment(Env({}));
  EXPECT_EQ(range.min_port, 12300);
  EXPECT_EQ(range.max_port, 14300);
  EXPECT_EQ(range.attempts, 20);
}

TEST(EnginePortRangeTest, TheEnvironmentSetsTheRangeAndTheTries) {
  const EnginePortRange range =
      EnginePortRangeFromEnvironment(Env({{"MC_STORE_CLIENT_MIN_PORT", "20000"},
                                          {"MC_STORE_CLIENT_MAX_PORT", "20000"},
                                          {"MC_STORE_CLIENT_SETUP_RETRIES", "3"}}));
  EXPECT_EQ(range.min_port, 20000);
  EXPECT_EQ(range.max_port, 20000);
  EXPECT_EQ(range.attempts, 3);
}

TEST(EnginePortRangeTest, ARangeThatIsNotOneGivesTheDefaults) {
  for (const auto& [min, max] :
       std::map<std::string, std::string>{{"0", "100"}, {"30000", "20000"}, {"1000", "70000"}}) {
    const EnginePortRange range = EnginePortRangeFromEnvironment(
        Env({{"MC_STORE_CLIENT_MIN_PORT", min}, {"MC_STORE_CLIENT_MAX_PORT", max}}));
    EXPECT_EQ(range.min_port, 12300) << min << ".." << max;
    EXPECT_EQ(range.max_port, 14300) << min << ".." << max;
  }
  // A bound that is not a number is unset: its default applies.
  const EnginePortRange half = EnginePortRangeFromEnvironment(
      Env({{"MC_STORE_CLIENT_MIN_PORT", "abc"}, {"MC_STORE_CLIENT_MAX_PORT", "20000"}}));
  EXPECT_EQ(half.min_port, 12300);
  EXPECT_EQ(half.max_port, 20000);
  EXPECT_EQ(EnginePortRangeFromEnvironment(Env({{"MC_STORE_CLIENT_SETUP_RETRIES", "0"}})).attempts,
            20);
}

}  // namespace
}  // namespace yuebing::store
