#include "bench_buffer.h"

#include <sys/mman.h>

#include <chrono>
#include <cstring>
#include <utility>

#include "yuebing/common/status.h"

namespace yuebing::bench {

absl::StatusOr<MappedBuffer> MappedBuffer::Create(size_t bytes, uint8_t fill) {
  if (bytes == 0) return absl::InvalidArgumentError("buffer size must be > 0");
  void* addr = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (addr == MAP_FAILED) {
    return absl::ResourceExhaustedError(ErrnoToStatus("mmap benchmark buffer").message());
  }
  std::memset(addr, fill, bytes);
  return MappedBuffer(static_cast<char*>(addr), bytes);
}

MappedBuffer::MappedBuffer(MappedBuffer&& other) noexcept
    : data_(std::exchange(other.data_, nullptr)), size_(std::exchange(other.size_, 0)) {}

MappedBuffer& MappedBuffer::operator=(MappedBuffer&& other) noexcept {
  if (this != &other) {
    if (data_ != nullptr) munmap(data_, size_);
    data_ = std::exchange(other.data_, nullptr);
    size_ = std::exchange(other.size_, 0);
  }
  return *this;
}

MappedBuffer::~MappedBuffer() {
  if (data_ != nullptr) munmap(data_, size_);
}

uint64_t NowNanos() {
  return static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                   std::chrono::steady_clock::now().time_since_epoch())
                                   .count());
}

}  // namespace yuebing::bench
