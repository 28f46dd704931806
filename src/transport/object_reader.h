// The initiator side of READ_OBJECT (wire_format.h): reads one whole object by key from another
// engine's object source. A connection is opened per segment (connect, cluster-secret handshake,
// HELLO) and kept for later reads: up to kMaxIdleObjectConnections idle ones per segment are
// pooled, so a read on a warm pool costs one request and its reply. The object's bytes go from
// the socket straight into the caller's pieces.
//
// Thread safety: Read may be called from any number of threads at once; each read uses a
// connection no other read holds.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "yuebing/common/mutex.h"
#include "yuebing/transport/transfer_engine.h"

namespace yuebing::transport {

struct ObjectReadOptions {
  std::string cluster_secret;  // empty: no authentication
  std::chrono::milliseconds connect_timeout{3000};
};

inline constexpr size_t kMaxIdleObjectConnections = 4;  // per segment

class ObjectReader {
 public:
  explicit ObjectReader(ObjectReadOptions options) : options_(std::move(options)) {}
  // Closes the idle connections. No Read may be running.
  ~ObjectReader();
  ObjectReader(const ObjectReader&) = delete;
  ObjectReader& operator=(const ObjectReader&) = delete;

  // See TransferEngine::ReadObject for the contract and the errors; `deadline` is final here.
  // A pooled connection the peer has closed meanwhile is replaced by a fresh one within the same
  // deadline (a read has no side effect, so asking again is safe).
  absl::StatusOr<uint64_t> Read(const std::string& segment_name, absl::string_view key,
                                absl::Span<const ObjectBuffer> dest,
                                std::chrono::steady_clock::time_point deadline);

  // Opens and greets a new connection to `segment_name` by `deadline` and pools it (errors as
  // TransferEngine::Probe).
  absl::Status Probe(const std::string& segment_name,
                     std::chrono::steady_clock::time_point deadline);

  // Idle connections pooled now, over all segments (for tests).
  size_t IdleConnections() const;

 private:
  // An idle connection to `segment`, or -1.
  int TakeIdle(const std::string& segment);
  // Pools `fd` (an idle connection to `segment`), or closes it when the pool is full.
  void ReturnIdle(const std::string& segment, int fd);

  const ObjectReadOptions options_;
  mutable yuebing::Mutex mu_;
  absl::flat_hash_map<std::string, std::vector<int>> idle_ ABSL_GUARDED_BY(mu_);
};

}  // namespace yuebing::transport
