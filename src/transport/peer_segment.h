// An opened peer segment, as the engine and its transports share it: the peer's descriptor (as
// last fetched), the TCP peer (connection pool) toward it and the shm mappings of its buffers.
//
// Thread safety: the fields under `mu` are read and replaced under it; `shm` and the TcpPeer are
// thread-safe themselves; `handle` and `name` are fixed once the segment is published.
#pragma once

#include <memory>
#include <string>

#include "absl/base/thread_annotations.h"
#include "transport/segment_descriptor.h"
#include "transport/shared_memory.h"
#include "transport/tcp_peer.h"
#include "yuebing/common/clock.h"
#include "yuebing/common/mutex.h"
#include "yuebing/transport/transfer_engine.h"

namespace yuebing::transport {

struct PeerSegment {
  SegmentHandle handle = -1;
  std::string name;
  yuebing::Mutex mu;
  std::shared_ptr<const SegmentDescriptor> descriptor ABSL_GUARDED_BY(mu);
  std::shared_ptr<TcpPeer> tcp ABSL_GUARDED_BY(mu);
  SteadyTime last_refresh ABSL_GUARDED_BY(mu);
  bool restarted ABSL_GUARDED_BY(mu) = false;  // the peer's epoch changed; handle is dead
  ShmPeerMappings shm;

  std::shared_ptr<const SegmentDescriptor> Descriptor() {
    yuebing::MutexLock lock(&mu);
    return descriptor;
  }
  std::shared_ptr<TcpPeer> Tcp() {
    yuebing::MutexLock lock(&mu);
    return tcp;
  }
};

}  // namespace yuebing::transport
