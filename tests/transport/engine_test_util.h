// Helpers for transfer engine tests: engines on 127.0.0.1, patterned buffers.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "yuebing/transport/transfer_engine.h"

namespace yuebing::transport::testing {

inline std::unique_ptr<TransferEngine> MakeEngine(
    const std::string& metadata = "P2PHANDSHAKE", bool enable_shm = true,
    std::chrono::milliseconds timeout = std::chrono::milliseconds(10000)) {
  TransferEngineOptions options;
  options.metadata_conn = metadata;
  options.local_server_name = "127.0.0.1";
  options.enable_shm = enable_shm;
  options.request_timeout = timeout;
  auto engine = TransferEngine::Create(options);
  EXPECT_TRUE(engine.ok()) << engine.status();
  return engine.ok() ? std::move(engine).value() : nullptr;
}

inline TransferRequest Request(OpCode op, void* local, SegmentHandle target, uint64_t addr,
                               size_t length) {
  TransferRequest r;
  r.opcode = op;
  r.source = local;
  r.target_id = target;
  r.target_offset = addr;
  r.length = length;
  return r;
}

// Fills `length` bytes with a pattern that depends on `seed` and the position.
inline void FillPattern(void* data, size_t length, uint64_t seed) {
  auto* out = static_cast<uint8_t*>(data);
  uint64_t x = seed * 0x9E3779B97F4A7C15ull + 1;
  for (size_t i = 0; i < length; ++i) {
    if (i % 8 == 0) x = x * 6364136223846793005ull + 1442695040888963407ull;
    out[i] = static_cast<uint8_t>(x >> (8 * (i % 8)));
  }
}

inline bool MatchesPattern(const void* data, size_t length, uint64_t seed) {
  std::vector<uint8_t> expected(length);
  FillPattern(expected.data(), length, seed);
  return std::memcmp(expected.data(), data, length) == 0;
}

}  // namespace yuebing::transport::testing
