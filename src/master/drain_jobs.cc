// Drain jobs (Mooncake's /api/v1/drain_jobs): every object is moved off a set of segments before
// they go. The master marks the segments draining (placement skips them), hands the moves to the
// segments' owners (FetchDrainWork), who make them with ReplicaCopyStart/End and report them
// (ReportDrainWork), and ends the job when the segments hold nothing (SUCCEEDED; they are then
// DRAINED), a move failed kMaxDrainAttempts times or a segment went (FAILED), or on a cancel.
#include <algorithm>
#include <chrono>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "master/master_impl.h"
#include "yuebing/common/error_code.h"
#include "yuebing/common/logging.h"
#include "yuebing/common/status.h"
#include "yuebing/master/master_service.h"

namespace yuebing::master {
namespace {

// Entries looked at per shard and source in one FetchDrainWork beyond the moves it may hand out
// (skips the ones already handed out or busy at the head of the segment's list).
constexpr size_t kDrainScanSlack = 256;
constexpr int64_t kUnitTimeoutNs =
    std::chrono::duration_cast<std::chrono::nanoseconds>(kDrainUnitTimeout).count();

int64_t WallMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

std::string NewJobId() {
  static thread_local std::mt19937_64 random{std::random_device{}()};
  const uint64_t hi = random();
  const uint64_t lo = random();
  // A version-4 UUID, as upstream's generate_uuid.
  return absl::StrFormat("%08x-%04x-4%03x-%04x-%012x", hi >> 32, (hi >> 16) & 0xffff, hi & 0xfff,
                         ((lo >> 48) & 0x3fff) | 0x8000, lo & 0xffffffffffffull);
}

bool Running(const DrainJob& job) { return job.info.status == DrainJobStatus::kRunning; }

}  // namespace

const char* DrainJobStatusName(DrainJobStatus status) {
  switch (status) {
    case DrainJobStatus::kCreated:
      return "CREATED";
    case DrainJobStatus::kPlanning:
      return "PLANNING";
    case DrainJobStatus::kRunning:
      return "RUNNING";
    case DrainJobStatus::kSucceeded:
      return "SUCCEEDED";
    case DrainJobStatus::kFailed:
      return "FAILED";
    case DrainJobStatus::kCanceled:
      return "CANCELED";
  }
  return "UNKNOWN_JOB_STATUS";
}

const char* SegmentStatusName(SegmentStatus status) {
  switch (status) {
    case SegmentStatus::kUndefined:
      return "UNDEFINED";
    case SegmentStatus::kOk:
      return "OK";
    case SegmentStatus::kDraining:
      return "DRAINING";
    case SegmentStatus::kDrained:
      return "DRAINED";
    case SegmentStatus::kGracefullyUnmounting:
      return "GRACEFULLY_UNMOUNTING";
    case SegmentStatus::kUnmounting:
      return "UNMOUNTING";
  }
  return "UNKNOWN";
}

absl::StatusOr<std::string> MasterService::Impl::CreateDrainJob(const DrainJobRequest& request) {
  if (request.segments.empty()) return MakeError(ErrorCode::kInvalidParams, "no segments");
  if (request.max_concurrency == 0) {
    return MakeError(ErrorCode::kInvalidParams, "max_concurrency must be at least 1");
  }
  const absl::flat_hash_set<std::string> sources(request.segments.begin(), request.segments.end());
  if (sources.size() != request.segments.size()) {
    return MakeError(ErrorCode::kInvalidParams, "a segment is named twice");
  }
  yuebing::ReaderMutexLock topo(&topo_mu_);
  yuebing::MutexLock lock(&drain_mu_);
  const int64_t now = NowNs();
  DrainJob job;
  for (const std::string& name : request.segments) {
    auto it = segment_by_name_.find(name);
    if (it == segment_by_name_.end()) {
      return MakeError(ErrorCode::kSegmentNotFound, absl::StrCat("no segment '", name, "'"));
    }
    const SegmentState& seg = *segments_[it->second];
    if (!OpenForNewObjects(seg, now)) {
      return MakeError(ErrorCode::kUnavailableInCurrentStatus,
                       absl::StrCat("segment '", name,
                                    "' is not open (draining, drained, restoring, unmounting, "
                                    "or its owner is gone)"));
    }
    job.sources.emplace_back(it->second, seg.epoch);
  }
  for (const std::string& name : request.target_segments) {
    if (sources.contains(name)) {
      return MakeError(ErrorCode::kInvalidParams,
                       absl::StrCat("segment '", name, "' is both drained and a target"));
    }
    auto it = segment_by_name_.find(name);
    if (it == segment_by_name_.end()) {
      return MakeError(ErrorCode::kSegmentNotFound, absl::StrCat("no segment '", name, "'"));
    }
    if (!OpenForNewObjects(*segments_[it->second], now)) {
      return MakeError(ErrorCode::kUnavailableInCurrentStatus,
                       absl::StrCat("target segment '", name, "' takes no new objects"));
    }
  }
  for (const auto& [slot, epoch] : job.sources) segments_[slot]->draining.store(true);
  job.request = request;
  job.info.id = NewJobId();
  job.info.status = DrainJobStatus::kRunning;
  job.info.created_at_ms = job.info.last_updated_at_ms = WallMs();
  job.info.segments = request.segments;
  job.info.message = "Drain job running";
  std::string id = job.info.id;
  YB_LOG_INFO("drain job {}: draining {} segment(s), {} target(s), max_concurrency {}", id,
              request.segments.size(), request.target_segments.size(), request.max_concurrency);
  drain_jobs_.emplace(id, std::move(job));
  ++running_drain_jobs_;
  return id;
}

absl::StatusOr<DrainJob*> MasterService::Impl::CurrentDrainJob(const std::string& job_id) {
  auto it = drain_jobs_.find(job_id);
  if (it == drain_jobs_.end()) {
    return MakeError(ErrorCode::kJobNotFound, absl::StrCat("no drain job '", job_id, "'"));
  }
  DrainJob& job = it->second;
  if (Running(job)) AdvanceDrainJob(job, NowNs());
  return &job;
}

absl::StatusOr<DrainJobInfo> MasterService::Impl::QueryDrainJob(const std::string& job_id) {
  yuebing::ReaderMutexLock topo(&topo_mu_);
  yuebing::MutexLock lock(&drain_mu_);
  YB_ASSIGN_OR_RETURN(DrainJob * found, CurrentDrainJob(job_id));
  DrainJob& job = *found;
  DrainJobInfo info = job.info;
  info.active_units = job.active.size();
  return info;
}

absl::Status MasterService::Impl::CancelDrainJob(const std::string& job_id) {
  yuebing::ReaderMutexLock topo(&topo_mu_);
  yuebing::MutexLock lock(&drain_mu_);
  YB_ASSIGN_OR_RETURN(DrainJob * found, CurrentDrainJob(job_id));
  DrainJob& job = *found;
  if (!Running(job)) {
    return MakeError(
        ErrorCode::kUnavailableInCurrentStatus,
        absl::StrCat("the drain job has ended (", DrainJobStatusName(job.info.status), ")"));
  }
  if (!job.active.empty()) {
    return MakeError(ErrorCode::kUnavailableInCurrentStatus,
                     absl::StrCat(job.active.size(), " move(s) of the job are under way"));
  }
  EndDrainJob(job, DrainJobStatus::kCanceled, "Drain job canceled");
  return absl::OkStatus();
}

absl::StatusOr<SegmentStatus> MasterService::Impl::QuerySegmentStatus(
    const std::string& segment_name) {
  yuebing::ReaderMutexLock topo(&topo_mu_);
  auto it = segment_by_name_.find(segment_name);
  if (it == segment_by_name_.end()) {
    return MakeError(ErrorCode::kSegmentNotFound, absl::StrCat("no segment '", segment_name, "'"));
  }
  const SegmentState& seg = *segments_[it->second];
  if (seg.dying) return SegmentStatus::kUnmounting;
  if (seg.drained.load()) return SegmentStatus::kDrained;
  if (seg.draining.load()) return SegmentStatus::kDraining;
  return SegmentStatus::kOk;
}

absl::StatusOr<std::vector<DrainUnit>> MasterService::Impl::FetchDrainWork(const ClientId& client,
                                                                           uint32_t max_units) {
  YB_RETURN_IF_ERROR(TouchClient(client).status());
  std::vector<DrainUnit> units;
  yuebing::ReaderMutexLock topo(&topo_mu_);
  yuebing::MutexLock lock(&drain_mu_);
  if (running_drain_jobs_ == 0) return units;
  const int64_t now = NowNs();
  for (auto& [id, job] : drain_jobs_) {
    if (!Running(job)) continue;
    AdvanceDrainJob(job, now);
    if (!Running(job)) continue;
    uint64_t blocked = 0;
    bool owner = false;  // of one of the job's segments: then `blocked` is this look's count
    for (const auto& [slot, epoch] : job.sources) {
      const SegmentState& seg = *segments_[slot];
      if (seg.client_id != client) continue;
      owner = true;
      for (const std::unique_ptr<Shard>& shard : shards_) {
        const size_t budget =
            std::min<size_t>(max_units - std::min<size_t>(max_units, units.size()),
                             job.request.max_concurrency -
                                 std::min<size_t>(job.request.max_concurrency, job.active.size()));
        if (budget == 0) break;
        Shard& s = *shard;
        yuebing::MutexLock shard_lock(&s.mu);
        for (uint32_t index :
             s.members.Some(s.table, slot, budget + job.active.size() + kDrainScanSlack)) {
          if (units.size() >= max_units || job.active.size() >= job.request.max_concurrency) {
            break;
          }
          std::string key(s.table.key(index));
          if (job.active.contains(key)) continue;
          auto attempts = job.attempts.find(key);
          if (attempts != job.attempts.end() && attempts->second >= kMaxDrainAttempts) continue;
          const ObjectEntry& entry = s.table.at(index);
          if (!(entry.flags & kEntryComplete) ||
              (entry.flags & (kEntryPendingUpsert | kEntrySpilling))) {
            ++blocked;  // being written, replaced, copied or spilled: looked at again later
            continue;
          }
          const std::optional<uint32_t> target =
              DrainTarget(job, ReplicasOf(s, index), slot, AlignedSize(entry.size), now);
          if (!target.has_value()) {
            ++blocked;
            continue;
          }
          job.active[key] = now + kUnitTimeoutNs;
          units.push_back(DrainUnit{id, std::move(key), seg.segment.name,
                                    segments_[*target]->segment.name, entry.size});
        }
      }
    }
    if (owner) job.info.blocked_units = blocked;
    if (!units.empty()) job.info.last_updated_at_ms = WallMs();
  }
  return units;
}

void MasterService::Impl::ReportDrainWork(const std::string& job_id, const std::string& key,
                                          bool moved) {
  yuebing::ReaderMutexLock topo(&topo_mu_);
  yuebing::MutexLock lock(&drain_mu_);
  auto it = drain_jobs_.find(job_id);
  if (it == drain_jobs_.end()) return;
  DrainJob& job = it->second;
  auto unit = job.active.find(key);
  if (unit == job.active.end()) return;  // re-offered after a timeout, or the job ended
  job.active.erase(unit);
  job.info.last_updated_at_ms = WallMs();
  if (moved) {
    ++job.info.succeeded_units;
    // The size as the master knows it now (the object may have been replaced since).
    Shard& s = ShardFor(key);
    yuebing::MutexLock shard_lock(&s.mu);
    const uint32_t index = s.table.Find(key);
    if (index != ObjectTable::kNone) job.info.migrated_bytes += s.table.at(index).size;
  } else {
    ++job.info.failed_units;
    ++job.attempts[key];
  }
  if (Running(job)) AdvanceDrainJob(job, NowNs());
}

void MasterService::Impl::AdvanceDrainJobs(int64_t now) {
  yuebing::MutexLock lock(&drain_mu_);
  if (running_drain_jobs_ == 0) return;
  for (auto& [id, job] : drain_jobs_) {
    if (Running(job)) AdvanceDrainJob(job, now);
  }
}

void MasterService::Impl::AdvanceDrainJob(DrainJob& job, int64_t now) {
  for (size_t i = 0; i < job.sources.size(); ++i) {
    const auto [slot, epoch] = job.sources[i];
    const SegmentState* seg = slot < segments_.size() ? segments_[slot].get() : nullptr;
    if (seg == nullptr || seg->epoch != epoch || seg->dying) {
      EndDrainJob(
          job, DrainJobStatus::kFailed,
          absl::StrCat("Drain job failed: segment ", job.request.segments[i], " was unmounted"));
      return;
    }
  }
  for (auto it = job.active.begin(); it != job.active.end();) {
    if (it->second > now) {
      ++it;
      continue;
    }
    ++job.info.failed_units;  // not reported in time: its owner may have died mid-move
    ++job.attempts[it->first];
    job.active.erase(it++);
  }
  if (!job.active.empty()) return;
  bool empty = true;
  for (const auto& [slot, epoch] : job.sources) empty = empty && !SegmentHoldsObjects(slot);
  if (empty) {
    EndDrainJob(job, DrainJobStatus::kSucceeded, "Drain job finished successfully");
    return;
  }
  for (const auto& [key, attempts] : job.attempts) {
    if (attempts < kMaxDrainAttempts) continue;
    // Still on a source? (It may have been removed or evicted since.)
    Shard& s = ShardFor(key);
    yuebing::MutexLock shard_lock(&s.mu);
    const uint32_t index = s.table.Find(key);
    if (index == ObjectTable::kNone) continue;
    for (const ReplicaRef& ref : ReplicasOf(s, index)) {
      for (const auto& [slot, epoch] : job.sources) {
        if (ref.segment != slot) continue;
        EndDrainJob(job, DrainJobStatus::kFailed,
                    absl::StrCat("Drain job failed: '", key, "' could not be moved in ",
                                 kMaxDrainAttempts, " attempts"));
        return;
      }
    }
  }
}

void MasterService::Impl::EndDrainJob(DrainJob& job, DrainJobStatus status, std::string message) {
  const bool drained = status == DrainJobStatus::kSucceeded;
  for (const auto& [slot, epoch] : job.sources) {
    SegmentState* seg = slot < segments_.size() ? segments_[slot].get() : nullptr;
    if (seg == nullptr || seg->epoch != epoch) continue;
    seg->drained.store(drained);
    seg->draining.store(drained);  // a drained segment stays closed to new objects
  }
  YB_LOG_INFO("drain job {}: {} ({} moved, {} failed)", job.info.id, message,
              job.info.succeeded_units, job.info.failed_units);
  job.info.status = status;
  job.info.message = std::move(message);
  job.info.last_updated_at_ms = WallMs();
  job.active.clear();
  --running_drain_jobs_;
  ended_drain_jobs_.push_back(job.info.id);
  while (ended_drain_jobs_.size() > kMaxEndedDrainJobs) {
    drain_jobs_.erase(ended_drain_jobs_.front());
    ended_drain_jobs_.pop_front();
  }
}

bool MasterService::Impl::SegmentHoldsObjects(uint32_t slot) const {
  for (const std::unique_ptr<Shard>& shard : shards_) {
    yuebing::MutexLock lock(&shard->mu);
    if (!shard->members.Some(shard->table, slot, 1).empty()) return true;
  }
  return false;
}

std::optional<uint32_t> MasterService::Impl::DrainTarget(const DrainJob& job,
                                                         const std::vector<ReplicaRef>& replicas,
                                                         uint32_t source, uint64_t length,
                                                         int64_t now) const {
  auto allowed = [&](uint32_t slot) {
    const SegmentState* seg = segments_[slot].get();
    if (slot == source || seg == nullptr || !OpenForNewObjects(*seg, now)) return false;
    return job.request.target_segments.empty() ||
           std::find(job.request.target_segments.begin(), job.request.target_segments.end(),
                     seg->segment.name) != job.request.target_segments.end();
  };
  for (const ReplicaRef& ref : replicas) {
    if (allowed(ref.segment)) return ref.segment;  // nothing to copy: the source is just dropped
  }
  std::optional<uint32_t> best;
  uint64_t best_free = 0;
  for (uint32_t slot = 0; slot < segments_.size(); ++slot) {
    if (!allowed(slot)) continue;
    const uint64_t free = segments_[slot]->free_bytes.load();
    if (free >= length && (!best.has_value() || free > best_free)) {
      best = slot;
      best_free = free;
    }
  }
  return best;
}

// --- public API ---

absl::StatusOr<std::string> MasterService::CreateDrainJob(const DrainJobRequest& request) {
  return impl_->CreateDrainJob(request);
}

absl::StatusOr<DrainJobInfo> MasterService::QueryDrainJob(const std::string& job_id) {
  return impl_->QueryDrainJob(job_id);
}

absl::Status MasterService::CancelDrainJob(const std::string& job_id) {
  return impl_->CancelDrainJob(job_id);
}

absl::StatusOr<SegmentStatus> MasterService::QuerySegmentStatus(const std::string& segment_name) {
  return impl_->QuerySegmentStatus(segment_name);
}

absl::StatusOr<std::vector<DrainUnit>> MasterService::FetchDrainWork(const ClientId& client,
                                                                     uint32_t max_units) {
  return impl_->FetchDrainWork(client, max_units);
}

void MasterService::ReportDrainWork(const ClientId& client, const std::string& job_id,
                                    const std::string& key, const absl::Status& status) {
  (void)client;  // any client may report; the unit is matched by job and key
  impl_->ReportDrainWork(job_id, key, status.ok());
}

}  // namespace yuebing::master
