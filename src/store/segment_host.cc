// The segment host: see segment_host.h.
#include "store/segment_host.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "yuebing/common/error_code.h"
#include "yuebing/common/logging.h"
#include "yuebing/common/status.h"

namespace yuebing::store {

SegmentHost::SegmentHost(const ClientConfig& config, master::ClientId id,
                         transport::TransferEngine* engine, MasterApi* master)
    : config_(config), id_(std::move(id)), engine_(engine), master_(master) {}

absl::StatusOr<std::unique_ptr<SegmentHost>> SegmentHost::Start(const ClientConfig& config,
                                                                master::ClientId id,
                                                                transport::TransferEngine* engine,
                                                                MasterApi* master) {
  std::unique_ptr<SegmentHost> host(new SegmentHost(config, std::move(id), engine, master));
  YB_RETURN_IF_ERROR(host->Init());
  return host;
}

absl::Status SegmentHost::Init() {
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
    if (!config_.ssd_path.empty()) {
      DiskTierOptions disk;
      disk.path = config_.ssd_path;
      disk.capacity = config_.ssd_capacity;
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
  absl::StatusOr<uint64_t> epoch = master_->MountSegment(id_, segment);
  if (epoch.ok()) {
    YB_LOG_INFO("mounted segment {} ({} bytes) at epoch {}", segment.name, segment.size, *epoch);
  }
  return epoch.status();
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
    if (remount && global_segment_ != nullptr) {
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
