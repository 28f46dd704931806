#include "yuebing/common/config.h"

#include <cstdlib>
#include <iterator>
#include <limits>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace yuebing {
namespace {

__extension__ using Uint128 = unsigned __int128;

// Digits beyond this many after the decimal point are ignored (they cannot change the result
// by a whole byte or nanosecond for any supported unit).
constexpr size_t kMaxFractionDigits = 18;
constexpr size_t kMaxInputBytes = 64;

// A non-negative decimal number split at its decimal point, e.g. "12.05" -> {12, 5, 100}.
struct Decimal {
  uint64_t whole = 0;
  uint64_t fraction = 0;       // the digits after the point, as an integer
  uint64_t fraction_base = 1;  // 10^(number of fraction digits kept)
  bool has_point = false;
};

// Consumes a decimal number at the front of `text`. Fails on no digits, a sign, or a whole part
// that overflows uint64.
absl::StatusOr<Decimal> ConsumeDecimal(absl::string_view& text) {
  Decimal out;
  size_t i = 0;
  size_t whole_digits = 0;
  while (i < text.size() && absl::ascii_isdigit(text[i])) {
    const uint64_t digit = static_cast<uint64_t>(text[i] - '0');
    if (out.whole > (std::numeric_limits<uint64_t>::max() - digit) / 10) {
      return absl::InvalidArgumentError("number too large");
    }
    out.whole = out.whole * 10 + digit;
    ++i;
    ++whole_digits;
  }
  size_t fraction_digits = 0;
  if (i < text.size() && text[i] == '.') {
    out.has_point = true;
    ++i;
    while (i < text.size() && absl::ascii_isdigit(text[i])) {
      if (fraction_digits < kMaxFractionDigits) {
        out.fraction = out.fraction * 10 + static_cast<uint64_t>(text[i] - '0');
        out.fraction_base *= 10;
      }
      ++i;
      ++fraction_digits;
    }
  }
  if (whole_digits == 0 && fraction_digits == 0) {
    return absl::InvalidArgumentError("expected a non-negative number");
  }
  text.remove_prefix(i);
  return out;
}

// Returns floor(number * multiplier), or an error when it does not fit `limit`.
absl::StatusOr<uint64_t> Scale(const Decimal& number, uint64_t multiplier, uint64_t limit) {
  const Uint128 whole = static_cast<Uint128>(number.whole) * multiplier;
  const Uint128 fraction =
      static_cast<Uint128>(number.fraction) * multiplier / number.fraction_base;
  const Uint128 total = whole + fraction;
  if (total > limit) return absl::InvalidArgumentError("value out of range");
  return static_cast<uint64_t>(total);
}

absl::string_view StripSpaces(absl::string_view text) { return absl::StripAsciiWhitespace(text); }

// Byte multiplier of a size unit (already lower-cased); 0 when unknown.
uint64_t SizeUnit(absl::string_view unit) {
  if (unit.empty() || unit == "b") return 1;
  if (unit.size() > 3) return 0;
  if (unit.size() == 2 && unit[1] != 'b') return 0;
  if (unit.size() == 3 && unit.substr(1) != "ib") return 0;
  switch (unit[0]) {
    case 'k':
      return uint64_t{1} << 10;
    case 'm':
      return uint64_t{1} << 20;
    case 'g':
      return uint64_t{1} << 30;
    case 't':
      return uint64_t{1} << 40;
    case 'p':
      return uint64_t{1} << 50;
    case 'e':
      return uint64_t{1} << 60;
    default:
      return 0;
  }
}

// Nanoseconds per duration unit (already lower-cased); 0 when unknown. Empty means ms.
uint64_t DurationUnit(absl::string_view unit) {
  if (unit == "ns") return 1;
  if (unit == "us") return 1'000;
  if (unit.empty() || unit == "ms") return 1'000'000;
  if (unit == "s") return 1'000'000'000;
  if (unit == "m") return 60'000'000'000;
  if (unit == "h") return 3'600'000'000'000;
  return 0;
}

absl::Status Invalid(absl::string_view kind, absl::string_view text, absl::string_view why) {
  return absl::InvalidArgumentError(absl::StrCat("invalid ", kind, " \"", text, "\": ", why));
}

}  // namespace

absl::StatusOr<uint64_t> ParseSize(absl::string_view text) {
  if (text.size() > kMaxInputBytes) return Invalid("size", text.substr(0, 16), "too long");
  absl::string_view rest = StripSpaces(text);
  if (rest.empty()) return Invalid("size", text, "empty");
  absl::StatusOr<Decimal> number = ConsumeDecimal(rest);
  if (!number.ok()) return Invalid("size", text, number.status().message());
  const std::string unit = absl::AsciiStrToLower(absl::StripAsciiWhitespace(rest));
  const uint64_t multiplier = SizeUnit(unit);
  if (multiplier == 0) {
    return Invalid("size", text, "unknown unit (use B, KB, MB, GB, TB, PB, EB or KiB .. EiB)");
  }
  if (number->has_point && unit.empty()) {
    return Invalid("size", text, "a fraction needs a unit, e.g. \"1.5GB\"");
  }
  absl::StatusOr<uint64_t> bytes = Scale(*number, multiplier, std::numeric_limits<uint64_t>::max());
  if (!bytes.ok()) return Invalid("size", text, bytes.status().message());
  return *bytes;
}

std::string FormatSize(uint64_t bytes) {
  static constexpr const char* kUnits[] = {"KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
  if (bytes < 1024) return absl::StrCat(bytes, " B");
  double value = static_cast<double>(bytes) / 1024.0;
  size_t unit = 0;
  while (value >= 1024.0 && unit + 1 < std::size(kUnits)) {
    value /= 1024.0;
    ++unit;
  }
  return absl::StrFormat("%.2f %s", value, kUnits[unit]);
}

absl::StatusOr<std::chrono::nanoseconds> ParseDuration(absl::string_view text) {
  if (text.size() > kMaxInputBytes) return Invalid("duration", text.substr(0, 16), "too long");
  absl::string_view rest = StripSpaces(text);
  if (rest.empty()) return Invalid("duration", text, "empty");
  absl::StatusOr<Decimal> number = ConsumeDecimal(rest);
  if (!number.ok()) return Invalid("duration", text, number.status().message());
  const std::string unit = absl::AsciiStrToLower(absl::StripAsciiWhitespace(rest));
  const uint64_t multiplier = DurationUnit(unit);
  if (multiplier == 0) return Invalid("duration", text, "unknown unit (use ns, us, ms, s, m or h)");
  constexpr auto kLimit = static_cast<uint64_t>(std::numeric_limits<int64_t>::max());
  absl::StatusOr<uint64_t> nanos = Scale(*number, multiplier, kLimit);
  if (!nanos.ok()) return Invalid("duration", text, nanos.status().message());
  return std::chrono::nanoseconds(static_cast<int64_t>(*nanos));
}

absl::StatusOr<bool> ParseBool(absl::string_view text) {
  const std::string t = absl::AsciiStrToLower(absl::StripAsciiWhitespace(text));
  if (t == "1" || t == "true" || t == "yes" || t == "on" || t == "enable") return true;
  if (t.empty() || t == "0" || t == "false" || t == "no" || t == "off" || t == "disable") {
    return false;
  }
  return absl::InvalidArgumentError(absl::StrCat("not a boolean: '", text, "'"));
}

absl::StatusOr<uint64_t> SizeFromEnv(const char* name, uint64_t fallback) {
  if (name == nullptr) return absl::InvalidArgumentError("SizeFromEnv: null variable name");
  const char* value = std::getenv(name);
  if (value == nullptr) return fallback;
  absl::StatusOr<uint64_t> size = ParseSize(value);
  if (!size.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("environment variable ", name, ": ", size.status().message()));
  }
  return *size;
}

}  // namespace yuebing
