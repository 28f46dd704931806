#include "fault/checker.h"

#include <xxhash.h>

#include <cstdio>
#include <cstring>
#include <utility>

#include "absl/strings/str_cat.h"
#include "yuebing/common/error_code.h"

namespace yuebing::fault {
namespace {

constexpr uint32_t kMagic = 0x56464259;  // "YBFV"
constexpr size_t kHeaderBytes = 16;

uint64_t SplitMix(uint64_t& state) {
  uint64_t z = (state += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

// Fills out[0..n) with the body stream of (key, version): a keyed hash of both seeds the stream.
void FillBody(uint64_t seed, const std::string& key, uint64_t version, char* out, size_t n) {
  std::string material = key;
  material.push_back('\0');
  material.append(reinterpret_cast<const char*>(&version), sizeof(version));
  uint64_t state = XXH3_64bits_withSeed(material.data(), material.size(), seed);
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    uint64_t word = SplitMix(state);
    std::memcpy(out + i, &word, 8);
  }
  if (i < n) {
    uint64_t word = SplitMix(state);
    std::memcpy(out + i, &word, n - i);
  }
}

std::chrono::milliseconds Since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() -
                                                               start);
}

}  // namespace

std::string MakeValue(uint64_t seed, const std::string& key, uint64_t version, size_t size) {
  if (size < kHeaderBytes) size = kHeaderBytes;
  std::string value(size, '\0');
  const uint32_t size32 = static_cast<uint32_t>(size);
  std::memcpy(value.data(), &version, 8);
  std::memcpy(value.data() + 8, &size32, 4);
  std::memcpy(value.data() + 12, &kMagic, 4);
  FillBody(seed, key, version, value.data() + kHeaderBytes, size - kHeaderBytes);
  return value;
}

bool VerifyValue(uint64_t seed, const std::string& key, absl::string_view value,
                 uint64_t* version) {
  if (value.size() < kHeaderBytes) return false;
  uint64_t v = 0;
  uint32_t size32 = 0, magic = 0;
  std::memcpy(&v, value.data(), 8);
  std::memcpy(&size32, value.data() + 8, 4);
  std::memcpy(&magic, value.data() + 12, 4);
  if (magic != kMagic || size32 != value.size()) return false;
  std::string expected(value.size() - kHeaderBytes, '\0');
  FillBody(seed, key, v, expected.data(), expected.size());
  if (std::memcmp(expected.data(), value.data() + kHeaderBytes, expected.size()) != 0) {
    return false;
  }
  if (version != nullptr) *version = v;
  return true;
}

Checker::Checker(std::string scenario, uint64_t seed, Budget budget)
    : scenario_(std::move(scenario)), seed_(seed), budget_(budget) {}

absl::Status Checker::Put(store::Client& client, const std::string& key, uint64_t version,
                          size_t size, const master::ReplicateConfig& config) {
  const std::string value = MakeValue(seed_, key, version, size);
  const auto start = std::chrono::steady_clock::now();
  absl::Status status = client.Put(key, value, config);
  const std::chrono::milliseconds took = Since(start);
  yuebing::MutexLock lock(&mu_);
  if (took > budget_.Put()) ++tally_.late;
  tally_.max_put = std::max(tally_.max_put, took);
  if (status.ok()) {
    ++tally_.puts_ok;
  } else {
    RecordError(status);
  }
  return status;
}

absl::StatusOr<std::string> Checker::Get(store::Client& client, const std::string& key) {
  const auto start = std::chrono::steady_clock::now();
  absl::StatusOr<std::string> result = client.Get(key);
  const std::chrono::milliseconds took = Since(start);
  bool wrong = false;
  RecordGet(key, result, took, &wrong);
  if (wrong) return absl::InternalError(absl::StrCat("wrong bytes for '", key, "'"));
  return result;
}

std::vector<absl::StatusOr<std::string>> Checker::BatchGet(store::Client& client,
                                                           const std::vector<std::string>& keys) {
  const auto start = std::chrono::steady_clock::now();
  std::vector<absl::StatusOr<std::string>> results = client.BatchGet(keys);
  const std::chrono::milliseconds took = Since(start);
  for (size_t i = 0; i < keys.size(); ++i) {
    bool wrong = false;
    // Only the first key carries the call's time, so one slow batch counts once.
    RecordGet(keys[i], results[i], i == 0 ? took : std::chrono::milliseconds(0), &wrong);
    if (wrong) results[i] = absl::InternalError(absl::StrCat("wrong bytes for '", keys[i], "'"));
  }
  return results;
}

void Checker::RecordGet(const std::string& key, const absl::StatusOr<std::string>& result,
                        std::chrono::milliseconds took, bool* wrong) {
  *wrong = result.ok() && !VerifyValue(seed_, key, *result);
  yuebing::MutexLock lock(&mu_);
  if (took > budget_.Get()) ++tally_.late;
  tally_.max_get = std::max(tally_.max_get, took);
  if (*wrong) {
    ++tally_.wrong;
  } else if (result.ok()) {
    ++tally_.gets_ok;
  } else if (ToErrorCode(result.status()) == ErrorCode::kObjectNotFound) {
    ++tally_.misses;
  } else {
    RecordError(result.status());
  }
}

void Checker::RecordError(const absl::Status& status) {
  ++tally_.errors[static_cast<int>(ToErrorCode(status))];
}

Tally Checker::Snapshot() const {
  yuebing::MutexLock lock(&mu_);
  return tally_;
}

std::string Checker::Summary(absl::string_view extra) const {
  Tally t = Snapshot();
  std::string errors;
  for (const auto& [code, count] : t.errors) {
    absl::StrAppend(&errors, errors.empty() ? "" : ",", code, ":", count);
  }
  return absl::StrCat("fault ", scenario_, ": puts_ok=", t.puts_ok, " gets_ok=", t.gets_ok,
                      " wrong=", t.wrong, " misses=", t.misses, " errors={", errors,
                      "} late=", t.late, " max_put_ms=", t.max_put.count(), "/",
                      budget_.Put().count(), " max_get_ms=", t.max_get.count(), "/",
                      budget_.Get().count(), extra.empty() ? "" : " ", extra);
}

void Checker::Print(absl::string_view extra) const {
  std::printf("%s\n", Summary(extra).c_str());
  std::fflush(stdout);
}

}  // namespace yuebing::fault
