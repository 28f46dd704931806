// The TCP path: one TcpPeer (a pool of connections with a bounded queue and bounded bytes in
// flight, tcp_peer.h) per opened peer segment; every request is cut into slices of at most
// `slice_bytes` that the pool's connections send in parallel. Deadlines of queued and in-flight
// slices are enforced by ExpireDeadlines, which the engine's watchdog calls.
//
// Always accepts what it is offered (it is the last transport of every chain): a peer that
// refuses the slices (queue full, shutting down) fails them at once through their tasks.
//
// Thread safety: thread-safe.
#pragma once

#include <atomic>
#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "transport/segment_descriptor.h"
#include "transport/tcp_peer.h"
#include "transport/transport.h"
#include "yuebing/common/mutex.h"

namespace yuebing::transport {

struct TcpTransportOptions {
  uint64_t slice_bytes = 1ull << 20;  // > 0
  uint32_t connections_per_peer = 2;
  uint64_t max_inflight_bytes_per_peer = 64ull << 20;
  std::chrono::milliseconds connect_timeout{3000};
  std::string cluster_secret;
  // TcpPeerOptions::reply_spin of every peer.
  std::chrono::microseconds reply_spin = kDefaultTcpReplySpin;
};

class TcpTransport final : public Transport {
 public:
  explicit TcpTransport(TcpTransportOptions options) : options_(std::move(options)) {}

  // The connection pool toward the segment `descriptor` describes (stored in its PeerSegment).
  // The transport keeps a weak reference to enforce deadlines; the pool ends with its last owner.
  std::shared_ptr<TcpPeer> MakePeer(const SegmentDescriptor& descriptor);

  const char* name() const override { return "tcp"; }
  // `target` must be an opened peer segment.
  void Submit(PeerSegment* target, TransferBatch* batch, absl::Span<TransportWork> work,
              SteadyTime deadline) override;
  void ExpireDeadlines(SteadyTime now) override;
  uint64_t bytes() const override { return bytes_.load(std::memory_order_relaxed); }

 private:
  const TcpTransportOptions options_;
  std::atomic<uint64_t> bytes_{0};
  yuebing::Mutex mu_;
  std::vector<std::weak_ptr<TcpPeer>> peers_ ABSL_GUARDED_BY(mu_);
};

}  // namespace yuebing::transport
