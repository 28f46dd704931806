#include "transport/tcp_transport.h"

#include <algorithm>

#include "transport/peer_segment.h"
#include "yuebing/common/check.h"

namespace yuebing::transport {
namespace {

// Appends the slices of `request` (its task already started with their count) to `out`.
void AppendSlices(const TransferRequest& request, TransferTask* task, uint64_t slice_bytes,
                  SteadyTime deadline, std::vector<TcpSlice>& out) {
  const size_t first = out.size();
  for (uint64_t offset = 0; offset < request.length; offset += slice_bytes) {
    TcpSlice slice;
    slice.task = task;
    slice.opcode = request.opcode;
    slice.local = static_cast<char*>(request.source) + offset;
    slice.remote_addr = request.target_offset + offset;
    slice.length = std::min<uint64_t>(slice_bytes, request.length - offset);
    slice.deadline = deadline;
    YB_CHECK(slice.length > 0 && slice.length <= request.length - offset,
             "a TCP slice lies inside its request");
    out.push_back(slice);
  }
  YB_CHECK(out.size() - first == SliceCount(request.length, slice_bytes),
           "a request is cut into exactly the slices its task waits for");
}

}  // namespace

std::shared_ptr<TcpPeer> TcpTransport::MakePeer(const SegmentDescriptor& descriptor) {
  TcpPeerOptions peer;
  peer.segment_name = descriptor.name;
  peer.host = descriptor.tcp_host;
  peer.port = descriptor.tcp_port;
  peer.epoch = descriptor.epoch;
  peer.connections = options_.connections_per_peer;
  peer.max_inflight_bytes = options_.max_inflight_bytes_per_peer;
  peer.connect_timeout = options_.connect_timeout;
  peer.cluster_secret = options_.cluster_secret;
  peer.reply_spin = options_.reply_spin;
  auto made = std::make_shared<TcpPeer>(std::move(peer));
  yuebing::MutexLock lock(&mu_);
  std::erase_if(peers_, [](const std::weak_ptr<TcpPeer>& p) { return p.expired(); });
  peers_.push_back(made);
  return made;
}

void TcpTransport::Submit(PeerSegment* target, TransferBatch* batch, absl::Span<TransportWork> work,
                          SteadyTime deadline) {
  YB_CHECK(target != nullptr, "the tcp transport serves opened peer segments only");
  std::vector<TcpSlice> slices;
  for (TransportWork& item : work) {
    YB_CHECK(!item.accepted, "a request offered to tcp was already taken");
    const TransferRequest& request = *item.request;
    item.task->Start(batch, SliceCount(request.length, options_.slice_bytes));
    item.accepted = true;
    bytes_.fetch_add(request.length, std::memory_order_relaxed);
    AppendSlices(request, item.task, options_.slice_bytes, deadline, slices);
  }
  if (slices.empty()) return;
  std::vector<TcpSlice> copy = slices;
  absl::Status status = target->Tcp()->Submit(std::move(copy));
  if (!status.ok()) {  // nothing was queued: every slice fails now
    for (TcpSlice& slice : slices) slice.task->FinishSlice(0, status);
  }
}

void TcpTransport::ExpireDeadlines(SteadyTime now) {
  std::vector<std::shared_ptr<TcpPeer>> live;
  {
    yuebing::MutexLock lock(&mu_);
    for (const std::weak_ptr<TcpPeer>& peer : peers_) {
      if (std::shared_ptr<TcpPeer> held = peer.lock()) live.push_back(std::move(held));
    }
  }
  for (const auto& peer : live) peer->ExpireDeadlines(now);
}

}  // namespace yuebing::transport
