// Page-aligned anonymous memory for benchmarks, filled on creation so every page is backed by
// its own frame (never the shared zero page) before anything is timed.
// Thread safety: the object is not synchronised; distinct threads may use disjoint ranges.
#pragma once

#include <cstddef>
#include <cstdint>

#include "absl/status/statusor.h"

namespace yuebing::bench {

class MappedBuffer {
 public:
  // Maps `bytes` (> 0) of private anonymous memory and writes `fill` to every byte.
  // Errors: kInvalidArgument for 0, kResourceExhausted when the mapping fails.
  static absl::StatusOr<MappedBuffer> Create(size_t bytes, uint8_t fill);

  MappedBuffer(MappedBuffer&& other) noexcept;
  MappedBuffer& operator=(MappedBuffer&& other) noexcept;
  MappedBuffer(const MappedBuffer&) = delete;
  MappedBuffer& operator=(const MappedBuffer&) = delete;
  ~MappedBuffer();

  char* data() const { return data_; }
  size_t size() const { return size_; }
  // Keeps the mapping alive past this object (for memory an engine may still touch after a
  // failed run); the process exit reclaims it.
  void Leak() { data_ = nullptr; }

 private:
  MappedBuffer(char* data, size_t size) : data_(data), size_(size) {}
  char* data_ = nullptr;
  size_t size_ = 0;
};

// Monotonic time in nanoseconds.
uint64_t NowNanos();

}  // namespace yuebing::bench
