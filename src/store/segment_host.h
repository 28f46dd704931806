// The segment host: what a client contributes to the cluster and its liveness. With
// global_segment_size > 0 it allocates that much shared memory through the engine, mounts it at
// the master, and (with ssd_path) runs the disk tier over it. It pings the master every
// ping_interval and re-mounts when told the master does not know it (restart, TTL expiry) or at
// once when a reply comes from a new master term. Without a segment it only pings.
//
// With a segment it also keeps the segment's manifest (SegmentManifest), fed by a journal thread
// that long-polls the master (PullJournal); when a mount is fresh (a restarted or new master) it
// reports the manifest's intact objects back (RestoreObjects), so the cache survives the master.
// A restore that fails is retried with the next ping.
//
// It owns neither the engine nor the master connection (Client composes it with an
// ObjectClient). Thread safety: Start and the destructor from one thread; the ping loop is its
// own thread. `engine` and `master` must outlive the object.
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <thread>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "store/disk_tier.h"
#include "store/master_api.h"
#include "store/segment_manifest.h"
#include "yuebing/common/mutex.h"
#include "yuebing/master/types.h"
#include "yuebing/store/client.h"
#include "yuebing/transport/transfer_engine.h"

namespace yuebing::store {

// How long one journal long poll may be held by the master (also how long stopping may wait
// for the journal thread).
inline constexpr std::chrono::milliseconds kJournalWait{200};

class SegmentHost {
 public:
  // Allocates and mounts the segment (if any), starts the disk tier (if configured) and the
  // ping loop. Sets `master`'s new-term callback. Errors: kInvalidParams (segment cannot be
  // allocated, ssd_path without a segment), the master's errors for the first mount or ping
  // (kRpcFail when unreachable), disk tier errors.
  // `promote`: the disk tier's promotion put (DiskTierOptions::promote); must stay callable
  // until the host is destroyed.
  static absl::StatusOr<std::unique_ptr<SegmentHost>> Start(
      const ClientConfig& config, master::ClientId id, transport::TransferEngine* engine,
      MasterApi* master,
      std::function<absl::Status(const std::string&, absl::string_view)> promote);
  // Stops the disk tier and the ping loop, then unmounts the segment (errors are logged).
  ~SegmentHost();
  SegmentHost(const SegmentHost&) = delete;
  SegmentHost& operator=(const SegmentHost&) = delete;

 private:
  SegmentHost(const ClientConfig& config, master::ClientId id, transport::TransferEngine* engine,
              MasterApi* master);
  absl::Status Init(std::function<absl::Status(const std::string&, absl::string_view)> promote);
  // Mounts the segment and, when the mount is fresh, restores the manifest to the master.
  absl::Status MountGlobalSegment();
  absl::Status RestoreManifest(const std::string& segment_name);
  void PingLoop();
  void JournalLoop();
  bool PingLoopShouldWake() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(ping_mu_) {
    return stopping_ || remount_pending_;
  }

  const ClientConfig config_;
  const master::ClientId id_;
  transport::TransferEngine* const engine_;
  MasterApi* const master_;
  void* global_segment_ = nullptr;

  yuebing::Mutex ping_mu_;
  bool stopping_ ABSL_GUARDED_BY(ping_mu_) = false;
  // Set when a reply came from a new master term (a new HA leader): re-mount at once.
  bool remount_pending_ ABSL_GUARDED_BY(ping_mu_) = false;
  std::thread ping_thread_;
  // Set when a restore failed part way: the next ping-loop round mounts and restores again.
  bool restore_incomplete_ = false;  // ping thread (and Init before it starts) only

  SegmentManifest manifest_;
  std::thread journal_thread_;

  std::unique_ptr<DiskTier> disk_tier_;
};

}  // namespace yuebing::store
