#include "transfer_verify.h"

#include <algorithm>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "yuebing/common/status.h"

namespace yuebing::bench {
namespace {

constexpr uint64_t kMaxVerifyBytes = 256ull << 20;

uint64_t Mix(uint64_t x) {  // splitmix64 finaliser
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

absl::Status RunAll(const VerifyTarget& t, uint64_t slots, transport::OpCode opcode,
                    BatchRunner run) {
  for (uint64_t first = 0; first < slots; first += t.batch) {
    const uint32_t count = static_cast<uint32_t>(std::min<uint64_t>(t.batch, slots - first));
    YB_RETURN_IF_ERROR(run(opcode, first, count));
  }
  return absl::OkStatus();
}

}  // namespace

void FillPattern(char* data, uint64_t length, uint64_t seed) {
  for (uint64_t i = 0; i < length; i += 8) {
    const uint64_t word = Mix(seed + i);
    std::memcpy(data + i, &word, std::min<uint64_t>(8, length - i));
  }
}

uint64_t FirstPatternMismatch(const char* data, uint64_t length, uint64_t seed) {
  for (uint64_t i = 0; i < length; i += 8) {
    const uint64_t word = Mix(seed + i);
    const uint64_t n = std::min<uint64_t>(8, length - i);
    if (std::memcmp(data + i, &word, n) != 0) {
      const char* expected = reinterpret_cast<const char*>(&word);
      for (uint64_t j = 0; j < n; ++j) {
        if (data[i + j] != expected[j]) return i + j;
      }
    }
  }
  return length;
}

absl::StatusOr<std::string> VerifyRoundTrip(const VerifyTarget& t, BatchRunner run) {
  const uint64_t slots = std::max<uint64_t>(1, std::min(t.slots, kMaxVerifyBytes / t.block));
  const uint64_t length = slots * t.block;
  FillPattern(t.local, length, t.seed);
  YB_RETURN_IF_ERROR(RunAll(t, slots, transport::OpCode::kWrite, run));
  std::memset(t.local, 0, length);
  YB_RETURN_IF_ERROR(RunAll(t, slots, transport::OpCode::kRead, run));
  const uint64_t bad = FirstPatternMismatch(t.local, length, t.seed);
  if (bad == length) return std::string();
  return absl::StrCat("mismatch at byte ", bad, " of ", length, " (slot ", bad / t.block, ")");
}

}  // namespace yuebing::bench
