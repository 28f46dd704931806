// Helpers for transfer engine tests: engines on 127.0.0.1, patterned buffers.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <cstdlib>
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

enum class Path { kTcp, kShm };

// A target engine with one registered buffer of `buffer_bytes` at `remote` (shm-backed for
// Path::kShm) and an initiator that has opened the target's segment as `handle`.
class EnginePair {
 public:
  EnginePair(Path path, size_t buffer_bytes, const std::string& metadata = "P2PHANDSHAKE")
      : target(MakeEngine(metadata)), initiator(MakeEngine(metadata, path == Path::kShm)) {
    if (path == Path::kShm) {
      remote = static_cast<char*>(*target->AllocateSharedMemory(buffer_bytes));
    } else {
      owned.reset(static_cast<char*>(std::aligned_alloc(4096, buffer_bytes)));
      remote = owned.get();
      EXPECT_TRUE(target->RegisterLocalMemory(remote, buffer_bytes).ok());
    }
    auto h = initiator->OpenSegment(target->LocalSegmentName());
    EXPECT_TRUE(h.ok()) << h.status();
    handle = h.value_or(-1);
  }
  uint64_t RemoteAddr(size_t offset = 0) const {
    return reinterpret_cast<uint64_t>(remote) + offset;
  }

  // Declared first so that it is freed last: registered memory must outlive the engine serving
  // it (a target's server thread may still be inside sendmsg() of a READ reply from it when the
  // initiator already has every byte; ASan saw the buffer freed under it).
  std::unique_ptr<char, decltype(&std::free)> owned{nullptr, &std::free};
  std::unique_ptr<TransferEngine> target;
  std::unique_ptr<TransferEngine> initiator;
  char* remote = nullptr;
  SegmentHandle handle = -1;
};

}  // namespace yuebing::transport::testing
