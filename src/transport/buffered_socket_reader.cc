#include "transport/buffered_socket_reader.h"

#include <algorithm>
#include <cstring>

#include "absl/status/statusor.h"
#include "transport/socket_util.h"
#include "yuebing/common/status.h"

namespace yuebing::transport {

BufferedSocketReader::BufferedSocketReader(int fd, size_t capacity)
    : fd_(fd), capacity_(capacity), buffer_(new char[capacity]) {}

void BufferedSocketReader::Consume(size_t length) {
  begin_ += length;
  if (begin_ == end_) begin_ = end_ = 0;
}

void BufferedSocketReader::Take(char* out, size_t length) {
  std::memcpy(out, buffer_.get() + begin_, length);
  Consume(length);
}

absl::Status BufferedSocketReader::Fill(size_t length) {
  if (capacity_ - begin_ < length) {  // move what is left to the front to make room
    std::memmove(buffer_.get(), buffer_.get() + begin_, end_ - begin_);
    end_ -= begin_;
    begin_ = 0;
  }
  while (end_ - begin_ < length) {
    YB_ASSIGN_OR_RETURN(size_t got, RecvSome(fd_, buffer_.get() + end_, capacity_ - end_));
    end_ += got;
  }
  return absl::OkStatus();
}

absl::Status BufferedSocketReader::Read(void* data, size_t length, bool read_ahead) {
  if (length == 0) return absl::OkStatus();
  char* out = static_cast<char*>(data);
  const size_t from_buffer = std::min(length, buffered());
  Take(out, from_buffer);
  const size_t rest = length - from_buffer;
  if (rest == 0) return absl::OkStatus();
  if (!read_ahead || rest >= capacity_) return RecvAll(fd_, out + from_buffer, rest);
  YB_RETURN_IF_ERROR(Fill(rest));
  Take(out + from_buffer, rest);
  return absl::OkStatus();
}

absl::Status BufferedSocketReader::Skip(uint64_t length) {
  while (length > 0) {
    if (buffered() == 0) YB_RETURN_IF_ERROR(Fill(1));
    const size_t used = static_cast<size_t>(std::min<uint64_t>(length, buffered()));
    Consume(used);
    length -= used;
  }
  return absl::OkStatus();
}

}  // namespace yuebing::transport
