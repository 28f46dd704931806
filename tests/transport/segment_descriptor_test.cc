#include "transport/segment_descriptor.h"

#include <gtest/gtest.h>

namespace yuebing::transport {
namespace {

SegmentDescriptor Sample() {
  SegmentDescriptor d;
  d.name = "10.0.0.1:17000";
  d.tcp_host = "10.0.0.1";
  d.tcp_port = 17000;
  d.host_id = "boot/pid:[1]";
  d.pid = 42;
  d.epoch = 0xfedcba9876543210ull;
  d.version = 3;
  d.buffers.push_back({0x7f0000000000ull, 1ull << 30, "cpu:0", 5, 9, {}});
  d.buffers.push_back({0x1000, 4096, "cpu:1", -1, 0, {}});
  return d;
}

TEST(SegmentDescriptorTest, RoundTripsAndSortsBuffers) {
  absl::StatusOr<SegmentDescriptor> d = DecodeSegmentDescriptor(EncodeSegmentDescriptor(Sample()));
  ASSERT_TRUE(d.ok()) << d.status();
  EXPECT_EQ(d->name, "10.0.0.1:17000");
  EXPECT_EQ(d->epoch, 0xfedcba9876543210ull);
  ASSERT_EQ(d->buffers.size(), 2u);
  EXPECT_EQ(d->buffers[0].addr, 0x1000u);
  EXPECT_EQ(d->buffers[1].shm_fd, 5);
  EXPECT_EQ(d->buffers[1].shm_id, 9u);
  EXPECT_NE(d->FindBuffer(0x7f0000000000ull + 10, 100), nullptr);
  EXPECT_EQ(d->FindBuffer(0x1000 + 4000, 100), nullptr);
}

TEST(SegmentDescriptorTest, RejectsMalformedInput) {
  for (
      const char* text :
      {"", "null", "[]", "{", "{\"name\":\"a\"}",
       R"({"name":"a:1","tcp_host":"a","tcp_port":70000,"host_id":"","pid":1,"epoch":1,"version":1,"buffers":[]})",
       R"({"name":"a:1","tcp_host":"a","tcp_port":1,"host_id":"","pid":1,"epoch":0,"version":1,"buffers":[]})",
       R"({"name":"a:1","tcp_host":"a","tcp_port":1,"host_id":"","pid":1,"epoch":1,"version":-1,"buffers":[]})",
       R"({"name":"a:1","tcp_host":"a","tcp_port":1,"host_id":"","pid":1,"epoch":1,"version":1,"buffers":{}})",
       R"({"name":"a:1","tcp_host":"a","tcp_port":1,"host_id":"","pid":1,"epoch":1,"version":1,"buffers":[{"addr":10,"length":10,"location":"x","shm_fd":-1,"shm_id":0},{"addr":15,"length":10,"location":"x","shm_fd":-1,"shm_id":0}]})",
       R"({"name":"a:1","tcp_host":"a","tcp_port":1,"host_id":"","pid":1,"epoch":1,"version":1,"buffers":[{"addr":10,"length":0,"location":"x","shm_fd":-1,"shm_id":0}]})",
       R"({"name":"a:1","tcp_host":"a","tcp_port":1,"host_id":"","pid":1,"epoch":1,"version":1,"buffers":[{"addr":"10","length":1,"location":"x","shm_fd":-1,"shm_id":0}]})"}) {
    EXPECT_EQ(DecodeSegmentDescriptor(text).status().code(), absl::StatusCode::kInvalidArgument)
        << text;
  }
}

}  // namespace
}  // namespace yuebing::transport
