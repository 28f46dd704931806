// Mooncake's buffer-major ranged read, get_into_ranges(buffer_ptrs, all_keys, all_dst_offsets,
// all_src_offsets, all_sizes): buffer i takes, for each of its keys j, fragments k of object
// all_keys[i][j] (bytes [src, src+size)) at buffer_ptrs[i] + dst. The result has the shape of
// the request (buffers x keys x fragments): bytes read per fragment, or a negative Mooncake code.
// Failures are confined as upstream confines them: a bad shape fails what it covers, a missing
// key fails its own fragments, a fragment past its object or past its destination's registered
// memory fails alone (-600). Destinations must lie in memory registered with register_buffer:
// that memory's end bounds each fragment, so no offset can write past it.
//
// Also the key-major session transfers batch_get_into_multi_buffer_ranges(keys, all_buffer_ptrs,
// all_sizes, all_src_offsets), which reads keys that have read sessions
// (batch_get_session_start), and batch_put_from_multi_buffer_ranges(keys, all_buffer_ptrs,
// all_sizes, all_dst_offsets), which writes keys that have put sessions
// (batch_put_session_start): per key the sum of its sizes, or one error for the whole key.
//
// Thread safety: RegisteredRegions is thread-safe; the reads hold no lock while they read.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "yuebing/common/mutex.h"
#include "yuebing/store/client.h"

namespace yuebing::python {

// Memory registered through the binding (register_buffer), by start address.
class RegisteredRegions {
 public:
  void Add(uintptr_t start, uint64_t length);
  void Remove(uintptr_t start);
  void Clear();
  // Bytes from `address` to the end of the registered region holding it; 0 when none does.
  uint64_t CapacityFrom(uintptr_t address) const;

 private:
  mutable yuebing::Mutex mu_;
  std::map<uintptr_t, uint64_t> regions_ ABSL_GUARDED_BY(mu_);
};

using RangeResults = std::vector<std::vector<std::vector<int64_t>>>;

// get_into_ranges through `client`; a null client (not set up) fails every fragment with -600.
RangeResults ReadRanges(store::Client* client, const RegisteredRegions& regions,
                        const std::vector<uintptr_t>& buffer_ptrs,
                        const std::vector<std::vector<std::string>>& all_keys,
                        const std::vector<std::vector<std::vector<uint64_t>>>& all_dst_offsets,
                        const std::vector<std::vector<std::vector<uint64_t>>>& all_src_offsets,
                        const std::vector<std::vector<std::vector<uint64_t>>>& all_sizes);

// A session transfer of the client: Client::ReadSessionRanges or Client::WritePutSessionRanges.
using SessionTransfer = std::function<std::vector<absl::StatusOr<uint64_t>>(
    const std::vector<std::string>&, const std::vector<std::vector<store::Client::Range>>&)>;

// The multi-buffer session transfers through `transfer`: sizes[i][j] bytes between object offset
// offsets[i][j] of keys[i] and address ptrs[i][j] (any memory, as the other multi-buffer calls).
// Lists that do not match fail their key (or every key) with -600.
std::vector<int64_t> SessionRanges(const SessionTransfer& transfer,
                                   const std::vector<std::string>& keys,
                                   const std::vector<std::vector<uintptr_t>>& ptrs,
                                   const std::vector<std::vector<uint64_t>>& sizes,
                                   const std::vector<std::vector<uint64_t>>& offsets);

}  // namespace yuebing::python
