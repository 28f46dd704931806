#include "yuebing/common/config.h"

#include <gtest/gtest.h>
#include <stdlib.h>

#include <chrono>
#include <cstdint>
#include <string>

namespace yuebing {
namespace {

using std::chrono::hours;
using std::chrono::microseconds;
using std::chrono::milliseconds;
using std::chrono::minutes;
using std::chrono::nanoseconds;
using std::chrono::seconds;

constexpr uint64_t kKiB = uint64_t{1} << 10;
constexpr uint64_t kMiB = uint64_t{1} << 20;
constexpr uint64_t kGiB = uint64_t{1} << 30;
constexpr uint64_t kTiB = uint64_t{1} << 40;

uint64_t SizeOrDie(absl::string_view text) {
  absl::StatusOr<uint64_t> size = ParseSize(text);
  EXPECT_TRUE(size.ok()) << text << ": " << size.status();
  return size.value_or(0);
}

TEST(ParseSizeTest, BareNumberIsBytes) {
  EXPECT_EQ(SizeOrDie("0"), 0u);
  EXPECT_EQ(SizeOrDie("1048576"), kMiB);
  EXPECT_EQ(SizeOrDie("18446744073709551615"), UINT64_MAX);
}

TEST(ParseSizeTest, UnitsArePowersOf1024AndCaseInsensitive) {
  EXPECT_EQ(SizeOrDie("7B"), 7u);
  EXPECT_EQ(SizeOrDie("4K"), 4 * kKiB);
  EXPECT_EQ(SizeOrDie("4KB"), 4 * kKiB);
  EXPECT_EQ(SizeOrDie("4KiB"), 4 * kKiB);
  EXPECT_EQ(SizeOrDie("4kib"), 4 * kKiB);
  EXPECT_EQ(SizeOrDie("16MB"), 16 * kMiB);
  EXPECT_EQ(SizeOrDie("16mb"), 16 * kMiB);
  EXPECT_EQ(SizeOrDie("16M"), 16 * kMiB);
  EXPECT_EQ(SizeOrDie("16MiB"), 16 * kMiB);
  EXPECT_EQ(SizeOrDie("2GB"), 2 * kGiB);
  EXPECT_EQ(SizeOrDie("2g"), 2 * kGiB);
  EXPECT_EQ(SizeOrDie("3TiB"), 3 * kTiB);
  EXPECT_EQ(SizeOrDie("3tb"), 3 * kTiB);
  EXPECT_EQ(SizeOrDie("2PiB"), 2048 * kTiB);
  EXPECT_EQ(SizeOrDie("1 EB"), uint64_t{1} << 60);
}

TEST(ParseSizeTest, SpacesAroundAndBetween) {
  EXPECT_EQ(SizeOrDie("1 GB"), kGiB);
  EXPECT_EQ(SizeOrDie("  1   GB  "), kGiB);
  EXPECT_EQ(SizeOrDie("\t512\n"), 512u);
}

TEST(ParseSizeTest, FractionsWithUnit) {
  EXPECT_EQ(SizeOrDie("1.5GB"), kGiB + kGiB / 2);
  EXPECT_EQ(SizeOrDie("0.5 KiB"), 512u);
  EXPECT_EQ(SizeOrDie(".25M"), kMiB / 4);
  // A fraction of a byte is dropped.
  EXPECT_EQ(SizeOrDie("1.1KB"), 1126u);
}

TEST(ParseSizeTest, RejectsBadInput) {
  for (const char* text : {"", "   ", "-1", "-1MB", "+5", "MB", "1.5", "1..5GB", "1e9", "12 34",
                           "1ZB", "1KBB", "1 G B", "abc", "0x10", "1,000", "1iB", "1Bi"}) {
    absl::StatusOr<uint64_t> size = ParseSize(text);
    EXPECT_EQ(size.status().code(), absl::StatusCode::kInvalidArgument) << "\"" << text << "\"";
  }
}

TEST(ParseSizeTest, RejectsOverflow) {
  EXPECT_EQ(ParseSize("18446744073709551616").status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(ParseSize("16777216TB").status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(SizeOrDie("16777215TB"), 16777215 * kTiB);
  EXPECT_EQ(ParseSize(std::string(100, '1')).status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(ParseSizeTest, ErrorNamesTheInput) {
  absl::StatusOr<uint64_t> size = ParseSize("12 parsecs");
  ASSERT_FALSE(size.ok());
  EXPECT_NE(size.status().message().find("12 parsecs"), absl::string_view::npos) << size.status();
}

TEST(FormatSizeTest, LargeSizesParseBack) {
  // FormatSize writes PiB/EiB above a TiB; those units must parse.
  for (uint64_t bytes : {uint64_t{3} << 50, uint64_t{1} << 60, UINT64_MAX / 2}) {
    absl::StatusOr<uint64_t> parsed = ParseSize(FormatSize(bytes));
    ASSERT_TRUE(parsed.ok()) << FormatSize(bytes) << ": " << parsed.status();
    EXPECT_NEAR(static_cast<double>(*parsed), static_cast<double>(bytes), bytes * 0.005);
  }
}

TEST(FormatSizeTest, HumanReadable) {
  EXPECT_EQ(FormatSize(0), "0 B");
  EXPECT_EQ(FormatSize(1023), "1023 B");
  EXPECT_EQ(FormatSize(1024), "1.00 KiB");
  EXPECT_EQ(FormatSize(1536), "1.50 KiB");
  EXPECT_EQ(FormatSize(16 * kMiB), "16.00 MiB");
  EXPECT_EQ(FormatSize(kGiB + kGiB / 4), "1.25 GiB");
  EXPECT_EQ(FormatSize(3 * kTiB), "3.00 TiB");
  EXPECT_EQ(FormatSize(UINT64_MAX), "16.00 EiB");
}

TEST(FormatSizeTest, RoundTripsThroughParse) {
  for (uint64_t bytes : {kKiB, 3 * kMiB / 2, 16 * kGiB, 2 * kTiB}) {
    EXPECT_EQ(SizeOrDie(FormatSize(bytes)), bytes) << FormatSize(bytes);
  }
}

nanoseconds DurationOrDie(absl::string_view text) {
  absl::StatusOr<nanoseconds> duration = ParseDuration(text);
  EXPECT_TRUE(duration.ok()) << text << ": " << duration.status();
  return duration.value_or(nanoseconds(-1));
}

TEST(ParseDurationTest, Units) {
  EXPECT_EQ(DurationOrDie("250ns"), nanoseconds(250));
  EXPECT_EQ(DurationOrDie("250us"), microseconds(250));
  EXPECT_EQ(DurationOrDie("500ms"), milliseconds(500));
  EXPECT_EQ(DurationOrDie("10s"), seconds(10));
  EXPECT_EQ(DurationOrDie("2m"), minutes(2));
  EXPECT_EQ(DurationOrDie("3h"), hours(3));
  EXPECT_EQ(DurationOrDie("10 S"), seconds(10));
  EXPECT_EQ(DurationOrDie(" 7 ms "), milliseconds(7));
}

TEST(ParseDurationTest, BareNumberIsMilliseconds) {
  EXPECT_EQ(DurationOrDie("0"), nanoseconds(0));
  EXPECT_EQ(DurationOrDie("10000"), seconds(10));
  EXPECT_EQ(DurationOrDie("1.5"), microseconds(1500));
}

TEST(ParseDurationTest, Fractions) {
  EXPECT_EQ(DurationOrDie("1.5s"), milliseconds(1500));
  EXPECT_EQ(DurationOrDie("0.25h"), minutes(15));
  EXPECT_EQ(DurationOrDie("1.5ns"), nanoseconds(1));
}

TEST(ParseDurationTest, RejectsBadInput) {
  for (const char* text :
       {"", " ", "-1s", "s", "10 seconds", "1d", "1.2.3s", "1e3ms", "10sec", "5 m s", "+1s"}) {
    EXPECT_EQ(ParseDuration(text).status().code(), absl::StatusCode::kInvalidArgument)
        << "\"" << text << "\"";
  }
}

TEST(ParseDurationTest, RejectsOverflow) {
  EXPECT_EQ(ParseDuration("9223372036854775808ns").status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(DurationOrDie("9223372036854775807ns"), nanoseconds(INT64_MAX));
  EXPECT_EQ(ParseDuration("3000000h").status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(ParseBoolTest, MooncakeWords) {
  for (const char* yes : {"1", "true", "TRUE", " yes ", "On", "enable"}) {
    EXPECT_TRUE(ParseBool(yes).value_or(false)) << yes;
  }
  for (const char* no : {"0", "false", "No", " off", "", "  ", "Disable"}) {
    EXPECT_FALSE(ParseBool(no).value_or(true)) << no;
  }
  for (const char* bad : {"2", "maybe", "truee", "y"}) {
    EXPECT_EQ(ParseBool(bad).status().code(), absl::StatusCode::kInvalidArgument) << bad;
  }
}

TEST(SizeFromEnvTest, UnsetSetAndMalformed) {
  constexpr const char* kVar = "YUEBING_CONFIG_TEST_SIZE";
  ::unsetenv(kVar);
  EXPECT_EQ(SizeFromEnv(kVar, 42).value_or(0), 42u);

  ::setenv(kVar, "3.5 MB", 1);
  EXPECT_EQ(SizeFromEnv(kVar, 42).value_or(0), 3 * kMiB + kMiB / 2);

  ::setenv(kVar, "lots", 1);
  absl::StatusOr<uint64_t> bad = SizeFromEnv(kVar, 42);
  ASSERT_EQ(bad.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(bad.status().message().find(kVar), absl::string_view::npos) << bad.status();

  ::setenv(kVar, "", 1);
  EXPECT_EQ(SizeFromEnv(kVar, 42).status().code(), absl::StatusCode::kInvalidArgument);
  ::unsetenv(kVar);
}

}  // namespace
}  // namespace yuebing
