#include "transport/wire_format.h"

#include <gtest/gtest.h>

#include <cstring>

namespace yuebing::transport {
namespace {

TEST(WireFormatTest, HeaderRoundTrips) {
  FrameHeader header;
  header.type = FrameType::kReadReply;
  header.flags = 7;
  header.status = WireStatus::kOutOfRange;
  header.request_id = 0x1122334455667788ull;
  header.addr = 0xdeadbeefcafe;
  header.length = 4096;
  uint8_t bytes[kFrameHeaderBytes];
  EncodeFrameHeader(header, bytes);
  absl::StatusOr<FrameHeader> decoded = DecodeFrameHeader(bytes);
  ASSERT_TRUE(decoded.ok()) << decoded.status();
  EXPECT_EQ(decoded->type, header.type);
  EXPECT_EQ(decoded->flags, header.flags);
  EXPECT_EQ(decoded->status, header.status);
  EXPECT_EQ(decoded->request_id, header.request_id);
  EXPECT_EQ(decoded->addr, header.addr);
  EXPECT_EQ(decoded->length, header.length);
}

TEST(WireFormatTest, RejectsBadMagicVersionTypeStatus) {
  FrameHeader header;
  header.type = FrameType::kWrite;
  header.length = 10;
  uint8_t good[kFrameHeaderBytes];
  EncodeFrameHeader(header, good);
  struct Corruption {
    size_t offset;
    uint8_t value;
  };
  for (Corruption c : {Corruption{0, 0x00}, Corruption{4, 9}, Corruption{5, 0}, Corruption{5, 99},
                       Corruption{8, 77}, Corruption{11, 0x80}}) {
    uint8_t bytes[kFrameHeaderBytes];
    std::memcpy(bytes, good, sizeof(bytes));
    bytes[c.offset] = c.value;
    EXPECT_FALSE(DecodeFrameHeader(bytes).ok()) << "offset " << c.offset;
  }
}

TEST(WireFormatTest, RejectsOversizeLengths) {
  FrameHeader header;
  header.type = FrameType::kWrite;
  header.length = kMaxDataFrameBytes + 1;
  uint8_t bytes[kFrameHeaderBytes];
  EncodeFrameHeader(header, bytes);
  EXPECT_EQ(DecodeFrameHeader(bytes).status().code(), absl::StatusCode::kInvalidArgument);
  header.type = FrameType::kHello;
  header.length = kMaxNameBytes + 1;
  EncodeFrameHeader(header, bytes);
  EXPECT_FALSE(DecodeFrameHeader(bytes).ok());
  header.type = FrameType::kWriteReply;  // replies without payload must say length 0
  header.length = 1;
  EncodeFrameHeader(header, bytes);
  EXPECT_FALSE(DecodeFrameHeader(bytes).ok());
}

TEST(WireFormatTest, RdmaConnectFramesCarryBoundedPayloads) {
  uint8_t bytes[kFrameHeaderBytes];
  FrameHeader header;
  for (FrameType type : {FrameType::kRdmaConnect, FrameType::kRdmaConnectReply}) {
    header.type = type;
    header.length = kMaxRdmaConnectBytes;
    EncodeFrameHeader(header, bytes);
    absl::StatusOr<FrameHeader> decoded = DecodeFrameHeader(bytes);
    ASSERT_TRUE(decoded.ok()) << decoded.status();
    EXPECT_EQ(decoded->type, type);
    header.length = kMaxRdmaConnectBytes + 1;
    EncodeFrameHeader(header, bytes);
    EXPECT_FALSE(DecodeFrameHeader(bytes).ok());
  }
  bytes[5] = static_cast<uint8_t>(FrameType::kReadObjectReply) + 1;  // first unknown type
  EXPECT_FALSE(DecodeFrameHeader(bytes).ok());
}

TEST(WireFormatTest, ReadObjectFramesCarryBoundedPayloads) {
  uint8_t bytes[kFrameHeaderBytes];
  FrameHeader header;
  header.type = FrameType::kReadObject;
  header.addr = 1ull << 40;  // the capacity is not bounded by the frame format
  header.length = kMaxObjectKeyBytes;
  EncodeFrameHeader(header, bytes);
  absl::StatusOr<FrameHeader> decoded = DecodeFrameHeader(bytes);
  ASSERT_TRUE(decoded.ok()) << decoded.status();
  EXPECT_EQ(decoded->addr, 1ull << 40);
  header.length = kMaxObjectKeyBytes + 1;
  EncodeFrameHeader(header, bytes);
  EXPECT_FALSE(DecodeFrameHeader(bytes).ok());
  header.type = FrameType::kReadObjectReply;
  header.length = kMaxDataFrameBytes;
  EncodeFrameHeader(header, bytes);
  EXPECT_TRUE(DecodeFrameHeader(bytes).ok());
  header.length = kMaxDataFrameBytes + 1;
  EncodeFrameHeader(header, bytes);
  EXPECT_FALSE(DecodeFrameHeader(bytes).ok());
  for (WireStatus status : {WireStatus::kNotFound, WireStatus::kTooSmall,
                            WireStatus::kNoObjectSource, WireStatus::kCorrupt}) {
    header.status = status;
    header.length = 0;
    EncodeFrameHeader(header, bytes);
    decoded = DecodeFrameHeader(bytes);
    ASSERT_TRUE(decoded.ok()) << decoded.status();
    EXPECT_EQ(decoded->status, status);
    EXPECT_STRNE(WireStatusText(status), "unknown");
  }
  bytes[8] = static_cast<uint8_t>(WireStatus::kCorrupt) + 1;  // first unknown status
  EXPECT_FALSE(DecodeFrameHeader(bytes).ok());
}

}  // namespace
}  // namespace yuebing::transport
