// The segment host: see segment_host.h.
#include "store/segment_host.h"

#include <algorithm>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "yuebing/common/error_code.h"
#include "yuebing/common/limits.h"
#include "yuebing/common/logging.h"
#include "yuebing/common/status.h"

namespace yuebing::store {

SegmentHost::SegmentHost(const ClientConfig& config, master::ClientId id,
                         transport::TransferEngine* engine, MasterApi* master)
    : config_(config), id_(std::move(id)), engine_(engine), master_(master) {}

absl::StatusOr<std::unique_ptr<SegmentHost>> SegmentHost::Start(
    const ClientConfig& config, master::ClientId id, transport::TransferEngine* engine,
    MasterApi* master, std::function<absl::Status(const std::string&, absl::string_view)> promote) {
  std::unique_ptr<SegmentHost> host(new SegmentHost(config, std::move(id), engine, master));
  YB_RETURN_IF_ERROR(host->Init(std::move(promote)));
  return host;
}

absl::Status SegmentHost::Init(
    std::function<absl::Status(const std::string&, absl::string_view)> promote) {
  master_->SetNewTermCallback([this](uint64_t term) {
    YB_LOG_INFO("master term {} is new; re-mounting", term);
    yuebing::MutexLock lock(&ping_mu_);
    remount_pending_ = true;
  });
  if (config_.global_segment_size > 0) {
    auto memory = engine_->AllocateSharedMemory(config_.global_segment_size);
    if (!memory.ok()) {
      return MakeError(
          ErrorCode::kInvalidParams,
          absl::StrCat("cannot allocate the global segment of ", config_.global_segment_size,
                       " bytes: ", memory.status().message()));
    }
    global_segment_ = *memory;
    YB_RETURN_IF_ERROR(MountGlobalSegment());
    journal_thread_ = std::thread(&SegmentHost::JournalLoop, this);
    if (!config_.ssd_path.empty()) {
      DiskTierOptions disk;
      disk.path = config_.ssd_path;
      disk.capacity = config_.ssd_capacity;
      disk.promote = std::move(promote);
      YB_ASSIGN_OR_RETURN(disk_tier_, DiskTier::Start(disk, master_, id_,
                                                      reinterpret_cast<uint64_t>(global_segment_),
                                                      config_.global_segment_size, engine_));
    }
  } else if (!config_.ssd_path.empty()) {
    return MakeError(ErrorCode::kInvalidParams, "ssd_path needs global_segment_size > 0");
  } else {
    YB_RETURN_IF_ERROR(master_->Ping(id_).status());
  }
  ping_thread_ = std::thread(&SegmentHost::PingLoop, this);
  return absl::OkStatus();
}

SegmentHost::~SegmentHost() {
  disk_tier_.reset();  // its sync loop uses master_
  {
    yuebing::MutexLock lock(&ping_mu_);
    stopping_ = true;
  }
  if (ping_thread_.joinable()) ping_thread_.join();
  if (journal_thread_.joinable()) journal_thread_.join();
  master_->SetNewTermCallback(nullptr);  // no thread calls the master now; it may outlive us
  if (global_segment_ != nullptr) {
    absl::Status status = master_->UnmountSegment(id_, engine_->LocalSegmentName());
    if (!status.ok()) {
      YB_LOG_WARN("unmounting {} failed: {}", engine_->LocalSegmentName(), status.ToString());
    }
  }
}

absl::Status SegmentHost::MountGlobalSegment() {
  master::Segment segment{engine_->LocalSegmentName(), reinterpret_cast<uint64_t>(global_segment_),
                          config_.global_segment_size};
  absl::StatusOr<master::MountResult> mount =
      master_->MountSegmentForRestore(id_, segment, !config_.ssd_path.empty());
  if (!mount.ok()) return mount.status();
  YB_LOG_INFO("mounted segment {} ({} bytes) at epoch {}", segment.name, segment.size,
              mount->epoch);
  restore_incomplete_ = false;
  if (!mount->fresh) return absl::OkStatus();
  absl::Status restored = RestoreManifest(segment.name);
  if (!restored.ok()) {
    restore_incomplete_ = true;
    return MakeError(ErrorCode::kRpcFail,
                     absl::StrCat("restoring the segment's objects: ", restored.message()));
  }
  return absl::OkStatus();
}

absl::Status SegmentHost::RestoreManifest(const std::string& segment_name) {
  const std::vector<master::RestoredObject> objects =
      manifest_.Verified(reinterpret_cast<uint64_t>(global_segment_), config_.global_segment_size);
  size_t restored = 0;
  size_t done = 0;
  do {
    const size_t count = std::min(objects.size() - done, limits::kMaxBatchKeys);
    const std::vector<master::RestoredObject> chunk(objects.begin() + done,
                                                    objects.begin() + done + count);
    const bool last = done + count == objects.size();
    YB_ASSIGN_OR_RETURN(std::vector<absl::Status> results,
                        master_->RestoreObjects(id_, segment_name, chunk, last));
    for (size_t i = 0; i < chunk.size(); ++i) {
      if (results[i].ok()) {
        ++restored;
      } else {
        manifest_.Erase(chunk[i].address);  // the master keeps another object there
      }
    }
    done += count;
  } while (done < objects.size());
  if (!objects.empty()) {
    YB_LOG_INFO("restored {} of {} objects of segment {} to the master", restored, objects.size(),
                segment_name);
  }
  return absl::OkStatus();
}

void SegmentHost::JournalLoop() {
  uint64_t journal_id = 0;
  uint64_t ack = 0;
  while (true) {
    {
      yuebing::MutexLock lock(&ping_mu_);
      if (stopping_) return;
    }
    absl::StatusOr<master::JournalBatch> batch =
        master_->PullJournal(id_, journal_id, ack, kJournalWait);
    if (!batch.ok()) {
      YB_LOG_DEBUG("journal pull from {} failed: {}", master_->address(),
                   batch.status().ToString());
      yuebing::MutexLock lock(&ping_mu_);
      ping_mu_.AwaitWithTimeout(yuebing::Condition(&stopping_), absl::Milliseconds(100));
      continue;
    }
    if (batch->journal_id != journal_id) {  // another master: its sequence numbers start anew
      if (journal_id != 0) {
        // A restarted or new master that may not have asked for a re-mount (a disk tier's sync
        // registers the client, so its pings are answered as known): mount and restore now.
        YB_LOG_INFO("master {} has a new journal; re-mounting", master_->address());
        yuebing::MutexLock lock(&ping_mu_);
        remount_pending_ = true;
      }
      journal_id = batch->journal_id;
      ack = 0;
    }
    manifest_.Apply(*batch);
    ack = batch->last_seq;
  }
}

void SegmentHost::PingLoop() {
  yuebing::MutexLock lock(&ping_mu_);
  while (!stopping_) {
    ping_mu_.AwaitWithTimeout(yuebing::Condition(
                                  +[](SegmentHost* self) ABSL_NO_THREAD_SAFETY_ANALYSIS {
                                    return self->PingLoopShouldWake();
                                  },
                                  this),
                              absl::FromChrono(config_.ping_interval));
    if (stopping_) break;
    const bool remount = remount_pending_;
    remount_pending_ = false;
    ping_mu_.Unlock();
    if ((remount || restore_incomplete_) && global_segment_ != nullptr) {
      // A new leader knows nothing of this client: mount before it is asked to (Ping below).
      absl::Status status = MountGlobalSegment();
      if (!status.ok())
        YB_LOG_WARN("re-mount after a new master term failed: {}", status.ToString());
    }
    absl::StatusOr<master::ClientState> state = master_->Ping(id_);
    if (!state.ok()) {
      YB_LOG_WARN("ping to master {} failed: {}", master_->address(), state.status().ToString());
    } else if (*state == master::ClientState::kNeedRemount && global_segment_ != nullptr) {
      absl::Status status = MountGlobalSegment();
      if (!status.ok()) YB_LOG_WARN("re-mount failed: {}", status.ToString());
    }
    ping_mu_.Lock();
  }
}

}  // namespace yuebing::store
