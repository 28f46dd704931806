// BufferedSocketReader over a real socket pair: exact reads across the buffer's edges, read-ahead
// that takes what follows and a plain read that takes nothing past its bytes, skips, and the end
// of the stream.
#include "transport/buffered_socket_reader.h"

#include <gtest/gtest.h>
#include <sys/socket.h>
#include <unistd.h>

#include <string>

#include "transport/socket_util.h"

namespace yuebing::transport {
namespace {

class SocketPair {
 public:
  SocketPair() { EXPECT_EQ(socketpair(AF_UNIX, SOCK_STREAM, 0, fds_), 0); }
  ~SocketPair() {
    CloseFd(fds_[0]);
    CloseFd(fds_[1]);
  }
  int reader() const { return fds_[0]; }
  void Send(const std::string& bytes) {
    ASSERT_TRUE(SendAll(fds_[1], bytes.data(), bytes.size()).ok());
  }
  void CloseWriter() {
    CloseFd(fds_[1]);
    fds_[1] = -1;
  }

 private:
  int fds_[2] = {-1, -1};
};

std::string Bytes(size_t n, char first) {
  std::string s(n, '\0');
  for (size_t i = 0; i < n; ++i) s[i] = static_cast<char>(first + i % 26);
  return s;
}

TEST(BufferedSocketReaderTest, ReadAheadServesLaterReadsFromTheBuffer) {
  SocketPair pair;
  BufferedSocketReader reader(pair.reader(), 64);
  pair.Send("0123456789abcdefghij");
  char out[8];
  ASSERT_TRUE(reader.Read(out, 4, /*read_ahead=*/true).ok());
  EXPECT_EQ(std::string(out, 4), "0123");
  EXPECT_EQ(reader.buffered(), 16u) << "read-ahead takes what has arrived";
  ASSERT_TRUE(reader.Read(out, 8, /*read_ahead=*/false).ok());
  EXPECT_EQ(std::string(out, 8), "456789ab");
  ASSERT_TRUE(reader.Skip(3).ok());
  ASSERT_TRUE(reader.Read(out, 5, /*read_ahead=*/true).ok());
  EXPECT_EQ(std::string(out, 5), "fghij");
  EXPECT_EQ(reader.buffered(), 0u);
}

TEST(BufferedSocketReaderTest, PlainReadTakesNothingPastItsBytes) {
  SocketPair pair;
  BufferedSocketReader reader(pair.reader(), 64);
  pair.Send("headerPAYLOAD");
  char out[6];
  ASSERT_TRUE(reader.Read(out, 6, /*read_ahead=*/false).ok());
  EXPECT_EQ(std::string(out, 6), "header");
  EXPECT_EQ(reader.buffered(), 0u);
  char rest[7];
  ASSERT_EQ(recv(pair.reader(), rest, sizeof(rest), MSG_DONTWAIT), 7) << "left in the socket";
  EXPECT_EQ(std::string(rest, 7), "PAYLOAD");
}

TEST(BufferedSocketReaderTest, ReadsLongerThanTheBufferAndAcrossItsEdges) {
  SocketPair pair;
  BufferedSocketReader reader(pair.reader(), 64);
  const std::string stream = Bytes(5000, 'a');
  pair.Send(stream);
  std::string got;
  // Sizes that leave partial reads in the buffer, fill it past its middle, and exceed it.
  for (size_t n : {1, 40, 63, 64, 65, 30, 1000, 7, 50}) {
    std::string piece(n, '\0');
    ASSERT_TRUE(reader.Read(piece.data(), n, /*read_ahead=*/got.size() % 2 == 0).ok());
    got += piece;
  }
  ASSERT_TRUE(reader.Skip(100).ok());
  got += stream.substr(got.size(), 100);
  std::string tail(stream.size() - got.size(), '\0');
  ASSERT_TRUE(reader.Read(tail.data(), tail.size(), /*read_ahead=*/true).ok());
  got += tail;
  EXPECT_EQ(got, stream);
}

TEST(BufferedSocketReaderTest, EndOfStreamFailsAnUnfinishedRead) {
  SocketPair pair;
  BufferedSocketReader reader(pair.reader(), 64);
  pair.Send("abc");
  pair.CloseWriter();
  char out[8];
  EXPECT_TRUE(reader.Read(out, 2, /*read_ahead=*/true).ok());
  EXPECT_EQ(reader.Read(out, 4, /*read_ahead=*/true).code(), absl::StatusCode::kUnavailable);
  EXPECT_EQ(reader.Skip(10).code(), absl::StatusCode::kUnavailable);
}

}  // namespace
}  // namespace yuebing::transport
