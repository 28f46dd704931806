// Reads a blocking socket through a small buffer, so that frames sent back to back (headers and
// small payloads) cost one recv for many instead of one or two each. A long remainder is received
// straight into its destination, so large payloads are not copied twice.
//
// Ownership: does not own the descriptor. Thread safety: one thread at a time (the connection's
// reading thread). Errors are those of RecvAll (socket_util.h): kUnavailable on EOF or reset, the
// socket's receive timeout (SO_RCVTIMEO) fails a read that waits longer.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>

#include "absl/status/status.h"

namespace yuebing::transport {

// The TCP transport reads payloads up to this size through the buffer, with whatever follows
// them (both sides); larger ones go straight into their destination.
inline constexpr uint64_t kReadAheadPayloadBytes = 16 << 10;

class BufferedSocketReader {
 public:
  static constexpr size_t kDefaultCapacity = 64 << 10;

  explicit BufferedSocketReader(int fd, size_t capacity = kDefaultCapacity);
  BufferedSocketReader(const BufferedSocketReader&) = delete;
  BufferedSocketReader& operator=(const BufferedSocketReader&) = delete;

  // Bytes received from the socket and not yet consumed.
  size_t buffered() const { return end_ - begin_; }

  // Reads exactly `length` bytes: the buffered ones first, then from the socket. With
  // `read_ahead`, a missing remainder shorter than the buffer is received through it, together
  // with whatever else has arrived (the next frames); otherwise the remainder is received straight
  // into `data`, and nothing past it is read.
  absl::Status Read(void* data, size_t length, bool read_ahead);

  // Consumes and discards exactly `length` bytes.
  absl::Status Skip(uint64_t length);

 private:
  // Receives until at least `length` (<= capacity) bytes are buffered.
  absl::Status Fill(size_t length);
  // Drops the first `length` (<= buffered()) buffered bytes; an empty buffer starts over at 0.
  void Consume(size_t length);
  // Copies the first `length` (<= buffered()) buffered bytes to `out` and drops them.
  void Take(char* out, size_t length);

  const int fd_;
  const size_t capacity_;
  std::unique_ptr<char[]> buffer_;
  size_t begin_ = 0;  // first unconsumed byte
  size_t end_ = 0;    // one past the last received byte
};

}  // namespace yuebing::transport
