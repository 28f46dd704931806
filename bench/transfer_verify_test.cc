#include "transfer_verify.h"

#include <algorithm>
#include <vector>

#include "gtest/gtest.h"

namespace yuebing::bench {
namespace {

using transport::OpCode;

TEST(PatternTest, FillThenCheckMatchesAndSeedMatters) {
  std::vector<char> buf(1003);
  FillPattern(buf.data(), buf.size(), 7);
  EXPECT_EQ(FirstPatternMismatch(buf.data(), buf.size(), 7), buf.size());
  EXPECT_LT(FirstPatternMismatch(buf.data(), buf.size(), 8), 8u);
  buf[1001] ^= 1;
  EXPECT_EQ(FirstPatternMismatch(buf.data(), buf.size(), 7), 1001u);
}

// A fake remote: WRITE copies local slots into `remote`, READ copies them back.
struct FakeRemote {
  std::vector<char> local;
  std::vector<char> remote;
  uint64_t block;
  bool corrupt = false;
  absl::Status Run(OpCode op, uint64_t first, uint32_t count) {
    for (uint64_t i = first; i < first + count; ++i) {
      char* l = local.data() + i * block;
      char* r = remote.data() + i * block;
      if (op == OpCode::kWrite) std::copy(l, l + block, r);
      if (op == OpCode::kRead) std::copy(r, r + block, l);
    }
    if (corrupt && op == OpCode::kWrite) remote[block * 3 + 5] ^= 0x40;
    return absl::OkStatus();
  }
};

TEST(VerifyRoundTripTest, PassesOnFaithfulCopyAndCatchesCorruption) {
  for (bool corrupt : {false, true}) {
    FakeRemote fake{std::vector<char>(10 * 100), std::vector<char>(10 * 100), 100, corrupt};
    VerifyTarget target{fake.local.data(), 10, 100, 4, 99};
    auto verdict = VerifyRoundTrip(
        target, [&](OpCode op, uint64_t first, uint32_t n) { return fake.Run(op, first, n); });
    ASSERT_TRUE(verdict.ok());
    EXPECT_EQ(verdict->empty(), !corrupt);
    if (corrupt) {
      EXPECT_NE(verdict->find("byte 305"), std::string::npos) << *verdict;
    }
  }
}

TEST(VerifyRoundTripTest, TransferErrorIsReturned) {
  std::vector<char> local(400);
  VerifyTarget target{local.data(), 4, 100, 2, 1};
  auto verdict = VerifyRoundTrip(
      target, [](OpCode, uint64_t, uint32_t) { return absl::UnavailableError("peer gone"); });
  EXPECT_EQ(verdict.status().code(), absl::StatusCode::kUnavailable);
}

}  // namespace
}  // namespace yuebing::bench
