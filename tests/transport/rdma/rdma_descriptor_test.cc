// RDMA fields of the segment descriptor (NICs, rkeys) and the QP exchange messages.
#include <gtest/gtest.h>

#include "transport/rdma/qp_exchange.h"
#include "transport/segment_descriptor.h"

namespace yuebing::transport {
namespace {

constexpr char kGid0[] = "fe800000000000000202c9fffe000001";
constexpr char kGid1[] = "00000000000000000000ffff0a000002";

SegmentDescriptor WithRdma() {
  SegmentDescriptor d;
  d.name = "10.0.0.1:17000";
  d.tcp_host = "10.0.0.1";
  d.tcp_port = 17000;
  d.host_id = "h";
  d.pid = 1;
  d.epoch = 7;
  d.version = 1;
  d.rdma_nics = {{"mlx5_0", 3, kGid0}, {"mlx5_1", 0, kGid1}};
  BufferDescriptor a;
  a.addr = 0x10000;
  a.length = 4096;
  a.location = "cpu:0";
  a.rkeys = {0xdeadbeef, 17};
  BufferDescriptor b = a;
  b.addr = 0x20000;
  b.rkeys = {1, 0xffffffff};
  d.buffers = {b, a};
  return d;
}

TEST(RdmaDescriptorTest, RoundTripsNicsAndRkeys) {
  auto d = DecodeSegmentDescriptor(EncodeSegmentDescriptor(WithRdma()));
  ASSERT_TRUE(d.ok()) << d.status();
  ASSERT_EQ(d->rdma_nics.size(), 2u);
  EXPECT_EQ(d->rdma_nics[0].name, "mlx5_0");
  EXPECT_EQ(d->rdma_nics[0].lid, 3);
  EXPECT_EQ(d->rdma_nics[1].gid, kGid1);
  ASSERT_EQ(d->buffers.size(), 2u);
  EXPECT_EQ(d->buffers[0].rkeys, (std::vector<uint32_t>{0xdeadbeef, 17}));
  EXPECT_EQ(d->buffers[1].rkeys, (std::vector<uint32_t>{1, 0xffffffff}));
}

TEST(RdmaDescriptorTest, DescriptorWithoutRdmaHasNoRdmaFields) {
  SegmentDescriptor d = WithRdma();
  d.rdma_nics.clear();
  for (auto& b : d.buffers) b.rkeys.clear();
  std::string text = EncodeSegmentDescriptor(d);
  EXPECT_EQ(text.find("rdma"), std::string::npos);
  EXPECT_EQ(text.find("rkeys"), std::string::npos);
  auto back = DecodeSegmentDescriptor(text);
  ASSERT_TRUE(back.ok());
  EXPECT_TRUE(back->rdma_nics.empty());
}

TEST(RdmaDescriptorTest, RejectsMalformedRdmaFields) {
  std::vector<SegmentDescriptor> bad;
  auto add = [&](auto mutate) {
    SegmentDescriptor d = WithRdma();
    mutate(d);
    bad.push_back(d);
  };
  add([](SegmentDescriptor& d) { d.buffers[0].rkeys.pop_back(); });              // too few rkeys
  add([](SegmentDescriptor& d) { d.buffers[1].rkeys.push_back(5); });            // too many
  add([](SegmentDescriptor& d) { d.rdma_nics.clear(); });                        // rkeys, no NICs
  add([](SegmentDescriptor& d) { d.rdma_nics[1].name = "mlx5_0"; });             // duplicate name
  add([](SegmentDescriptor& d) { d.rdma_nics[0].name = ""; });                   // no name
  add([](SegmentDescriptor& d) { d.rdma_nics[0].gid = "fe80"; });                // short GID
  add([](SegmentDescriptor& d) { d.rdma_nics[0].gid = std::string(32, 'g'); });  // not hex
  add([](SegmentDescriptor& d) {
    d.rdma_nics.resize(kMaxRdmaNics + 1, {"x", 0, kGid0});
    for (size_t i = 0; i < d.rdma_nics.size(); ++i) d.rdma_nics[i].name = std::to_string(i);
    for (auto& b : d.buffers) b.rkeys.assign(d.rdma_nics.size(), 1);
  });
  for (size_t i = 0; i < bad.size(); ++i) {
    auto d = DecodeSegmentDescriptor(EncodeSegmentDescriptor(bad[i]));
    ASSERT_FALSE(d.ok()) << "case " << i;
    EXPECT_EQ(d.status().code(), absl::StatusCode::kInvalidArgument);
  }
  // Wrong JSON types.
  std::string good = EncodeSegmentDescriptor(WithRdma());
  for (auto [from, to] :
       std::vector<std::pair<std::string, std::string>>{{"[3735928559,17]", "[-1,17]"},
                                                        {"[3735928559,17]", "[4294967296,17]"},
                                                        {"[3735928559,17]", "\"x\""},
                                                        {"\"lid\":3", "\"lid\":70000"},
                                                        {"\"rdma_nics\":[", "\"rdma_nics\":[7,"}}) {
    std::string text = good;
    size_t at = text.find(from);
    ASSERT_NE(at, std::string::npos) << from;
    text.replace(at, from.size(), to);
    EXPECT_FALSE(DecodeSegmentDescriptor(text).ok()) << text;
  }
}

namespace rdma = ::yuebing::transport::rdma;

rdma::RdmaConnectRequest SampleRequest() {
  rdma::RdmaConnectRequest r;
  r.initiator = "10.0.0.2:17001";
  r.target_nic = "mlx5_1";
  r.qps.nic = "mlx5_0";
  r.qps.lid = 9;
  r.qps.gid = *rdma::GidFromHex(kGid0);
  r.qps.psn = 0xabcdef;
  r.qps.mtu = 2048;
  r.qps.qpns = {0x11, 0xffffff};
  return r;
}

TEST(QpExchangeTest, RoundTrips) {
  auto r = rdma::DecodeRdmaConnectRequest(rdma::EncodeRdmaConnectRequest(SampleRequest()));
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->initiator, "10.0.0.2:17001");
  EXPECT_EQ(r->target_nic, "mlx5_1");
  EXPECT_EQ(r->qps.lid, 9);
  EXPECT_EQ(rdma::GidToHex(r->qps.gid), kGid0);
  EXPECT_EQ(r->qps.psn, 0xabcdefu);
  EXPECT_EQ(r->qps.mtu, 2048u);
  EXPECT_EQ(r->qps.qpns, (std::vector<uint32_t>{0x11, 0xffffff}));
  auto info = rdma::DecodeQpSetInfo(rdma::EncodeQpSetInfo(SampleRequest().qps));
  ASSERT_TRUE(info.ok());
  EXPECT_EQ(info->qpns.size(), 2u);
}

TEST(QpExchangeTest, RejectsMalformedMessages) {
  std::vector<rdma::QpSetInfo> bad;
  auto add = [&](auto mutate) {
    rdma::QpSetInfo q = SampleRequest().qps;
    mutate(q);
    bad.push_back(q);
  };
  add([](rdma::QpSetInfo& q) { q.qpns.clear(); });
  add([](rdma::QpSetInfo& q) { q.qpns.assign(256, 5); });
  add([](rdma::QpSetInfo& q) { q.qpns = {1u << 24}; });
  add([](rdma::QpSetInfo& q) { q.qpns = {0}; });
  add([](rdma::QpSetInfo& q) { q.psn = 1u << 24; });
  add([](rdma::QpSetInfo& q) { q.mtu = 1500; });
  add([](rdma::QpSetInfo& q) { q.nic = ""; });
  for (size_t i = 0; i < bad.size(); ++i) {
    EXPECT_FALSE(rdma::DecodeQpSetInfo(rdma::EncodeQpSetInfo(bad[i])).ok()) << "case " << i;
  }
  for (const char* text : {"", "[]", "{}", "{\"qps\":{}}", "{\"initiator\":\"a\",\"qps\":[]}",
                           "{\"initiator\":\"a\",\"target_nic\":7,\"qps\":{}}"}) {
    EXPECT_FALSE(rdma::DecodeRdmaConnectRequest(text).ok()) << text;
  }
  EXPECT_FALSE(rdma::GidFromHex("xyz").ok());
  EXPECT_FALSE(rdma::GidFromHex(std::string(32, 'z')).ok());
  EXPECT_TRUE(rdma::GidFromHex(std::string(32, 'F')).ok());
}

}  // namespace
}  // namespace yuebing::transport
