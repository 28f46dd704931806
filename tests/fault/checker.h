// Fault-suite checker: makes self-describing values, runs store calls through a wall clock and
// tallies what came back.
//
// A value for (key, version) is a 16-byte header (magic, version, size) followed by bytes drawn
// from a stream seeded by a keyed hash (xxh3 with the run's secret seed) of key and version. Any
// reader can recompute it from the key and the header, so a wrong byte is caught independently of
// the store's own checksum.
//
// Every call is timed and compared with its budget: the deadlines the client promises (rpc_timeout
// per master call, transfer_timeout per data movement round) plus a margin for a loaded machine.
//
// Thread safety: all methods are thread-safe.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "yuebing/common/mutex.h"
#include "yuebing/master/types.h"
#include "yuebing/store/client.h"

namespace yuebing::fault {

// The deadlines a call may take: a Put is PutStart + one transfer round + PutEnd/PutRevoke; a Get
// is one lookup plus one transfer round per replica tried.
struct Budget {
  std::chrono::milliseconds rpc_timeout{1000};
  std::chrono::milliseconds transfer_timeout{1000};
  std::chrono::milliseconds margin{1500};
  int max_replicas = 2;

  std::chrono::milliseconds Put() const { return 2 * rpc_timeout + transfer_timeout + margin; }
  std::chrono::milliseconds Get() const {
    return rpc_timeout + max_replicas * transfer_timeout + margin;
  }
};

// Builds the value for (key, version) of `size` bytes (size >= 16). Deterministic for a seed.
std::string MakeValue(uint64_t seed, const std::string& key, uint64_t version, size_t size);
// True when `value` is exactly MakeValue(seed, key, v, value.size()) for the v in its header;
// `version` (optional) receives v.
bool VerifyValue(uint64_t seed, const std::string& key, absl::string_view value,
                 uint64_t* version = nullptr);

struct Tally {
  uint64_t puts_ok = 0;
  uint64_t gets_ok = 0;
  uint64_t wrong = 0;              // a Get returned bytes that are not a value of that key
  uint64_t misses = 0;             // kObjectNotFound
  std::map<int, uint64_t> errors;  // other failures, by Mooncake error code
  uint64_t late = 0;               // calls that took longer than their budget
  std::chrono::milliseconds max_put{0}, max_get{0};
};

class Checker {
 public:
  Checker(std::string scenario, uint64_t seed, Budget budget);

  uint64_t seed() const { return seed_; }
  const Budget& budget() const { return budget_; }

  // Puts MakeValue(key, version, size) and records the outcome and time.
  absl::Status Put(store::Client& client, const std::string& key, uint64_t version, size_t size,
                   const master::ReplicateConfig& config = {});
  // Gets `key`, verifies the bytes and records the outcome and time. A value that fails
  // verification is counted as wrong and returned as kInternal.
  absl::StatusOr<std::string> Get(store::Client& client, const std::string& key);
  // Gets a batch (one call: its budget is that of one Get) and records each key.
  std::vector<absl::StatusOr<std::string>> BatchGet(store::Client& client,
                                                    const std::vector<std::string>& keys);

  Tally Snapshot() const;
  // One line: "fault <scenario>: puts_ok=.. gets_ok=.. wrong=.. misses=.. errors={..} late=..
  // max_put_ms=../<budget> max_get_ms=../<budget>" plus `extra`.
  std::string Summary(absl::string_view extra = "") const;
  // Prints Summary to stdout.
  void Print(absl::string_view extra = "") const;

 private:
  void RecordGet(const std::string& key, const absl::StatusOr<std::string>& result,
                 std::chrono::milliseconds took, bool* wrong);
  void RecordError(const absl::Status& status) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const std::string scenario_;
  const uint64_t seed_;
  const Budget budget_;
  mutable yuebing::Mutex mu_;
  Tally tally_ ABSL_GUARDED_BY(mu_);
};

}  // namespace yuebing::fault
