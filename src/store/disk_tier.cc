#include "store/disk_tier.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <fstream>
#include <random>
#include <sstream>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "yuebing/common/checksum.h"
#include "yuebing/common/error_code.h"
#include "yuebing/common/limits.h"
#include "yuebing/common/logging.h"
#include "yuebing/common/status.h"

namespace yuebing::store {
namespace {

constexpr size_t kAnnounceChunk = 1024;
constexpr size_t kMaxPendingReports = 60000;
static_assert(kMaxPendingReports + kAnnounceChunk <= limits::kMaxDiskReportEntries,
              "a report stays under the master's limit");

// The directory's identity: read from "tier.id", created (temp + rename) when missing.
absl::StatusOr<std::string> TierIdOf(const std::string& dir) {
  const std::string path = dir + "/tier.id";
  std::ifstream in(path);
  std::string id;
  if (in && std::getline(in, id) && id.size() == 32) return id;
  std::random_device device;
  id = absl::StrCat(absl::Hex(uint64_t{device()} << 32 | device(), absl::kZeroPad16),
                    absl::Hex(uint64_t{device()} << 32 | device(), absl::kZeroPad16));
  const std::string temp = path + ".new";
  {
    std::ofstream out(temp, std::ios::trunc);
    out << id << "\n";
    if (!out.flush()) {
      return MakeError(ErrorCode::kWriteFail, absl::StrCat("cannot write ", temp));
    }
  }
  if (::rename(temp.c_str(), path.c_str()) != 0) {
    return MakeError(ErrorCode::kWriteFail, absl::StrCat("cannot rename ", temp));
  }
  return id;
}

}  // namespace

DiskTier::DiskTier(const DiskTierOptions& options, MasterApi* master, master::ClientId client_id,
                   uint64_t segment_base, uint64_t segment_size, transport::TransferEngine* engine)
    : options_(options),
      master_(master),
      client_id_(std::move(client_id)),
      segment_base_(segment_base),
      segment_size_(segment_size),
      engine_(engine) {}

absl::StatusOr<std::unique_ptr<DiskTier>> DiskTier::Start(
    const DiskTierOptions& options, MasterApi* master, master::ClientId client_id,
    uint64_t segment_base, uint64_t segment_size, transport::TransferEngine* engine) {
  if (master == nullptr || engine == nullptr || segment_base == 0 || segment_size == 0) {
    return MakeError(ErrorCode::kInvalidParams,
                     "disk tier needs a master, a transfer engine and a global segment");
  }
  std::unique_ptr<DiskTier> tier(
      new DiskTier(options, master, std::move(client_id), segment_base, segment_size, engine));
  YB_ASSIGN_OR_RETURN(tier->files_, FileStore::Open(options.path, options.capacity));
  YB_ASSIGN_OR_RETURN(tier->tier_id_, TierIdOf(options.path));
  tier->endpoint_ = engine->LocalSegmentName();
  DiskTier* self = tier.get();
  engine->SetObjectSource([self](absl::string_view key) { return self->ServeObject(key); });
  tier->serving_ = true;
  tier->sync_thread_ = std::thread([self] { self->SyncLoop(); });
  YB_LOG_INFO("disk tier {} ({} bytes) served by transfer engine {}", options.path,
              options.capacity, tier->endpoint_);
  return tier;
}

DiskTier::~DiskTier() {
  if (serving_) engine_->SetObjectSource(nullptr);  // waits for reads in progress
  {
    yuebing::MutexLock lock(&mu_);
    stop_ = true;
  }
  if (sync_thread_.joinable()) sync_thread_.join();
}

absl::StatusOr<std::string> DiskTier::ServeObject(absl::string_view key) {
  if (key.empty() || key.size() > limits::kMaxScopedKeyBytes) {
    return absl::InvalidArgumentError("bad key");
  }
  // FileStore::Read answers kObjectNotFound both for an absent file and for one that failed its
  // verification (and was deleted); which one it was is told by whether the file was there.
  const bool present = files_->Contains(key);
  absl::StatusOr<FileStore::Value> value = files_->Read(key);
  if (!value.ok()) {
    if (ToErrorCode(value.status()) != ErrorCode::kObjectNotFound) return value.status();
    if (present && !files_->Contains(key)) {
      return absl::DataLossError(std::string(value.status().message()));
    }
    return absl::NotFoundError(std::string(value.status().message()));
  }
  {
    yuebing::MutexLock lock(&mu_);
    ++stats_.served;
  }
  return std::move(value->bytes);
}

DiskTierStats DiskTier::Stats() const {
  yuebing::MutexLock lock(&mu_);
  return stats_;
}

void DiskTier::SyncLoop() {
  yuebing::MutexLock lock(&mu_);
  while (!stop_) {
    mu_.Unlock();
    const bool more = SyncOnce();
    mu_.Lock();
    if (!more)
      mu_.AwaitWithTimeout(yuebing::Condition(&stop_), absl::FromChrono(options_.sync_interval));
  }
}

bool DiskTier::SyncOnce() {
  master::DiskSyncRequest request;
  request.endpoint = endpoint_;
  request.tier_id = tier_id_;
  request.max_tasks = options_.max_tasks;
  if (need_full_) {
    to_announce_.clear();
    for (FileStore::Entry& e : files_->List()) {
      to_announce_.push_back(master::DiskObject{std::move(e.key), e.size, e.object_checksum});
    }
    // Reports of the previous exchange are covered by the listing.
    spilled_.clear();
    removed_.clear();
    (void)files_->TakeRemovedKeys();
    request.full = true;
    need_full_ = false;
  }
  const size_t n = std::min(kAnnounceChunk, to_announce_.size());
  request.announced.assign(std::make_move_iterator(to_announce_.end() - n),
                           std::make_move_iterator(to_announce_.end()));
  to_announce_.resize(to_announce_.size() - n);
  for (std::string& key : files_->TakeRemovedKeys()) removed_.push_back(std::move(key));
  request.spilled = spilled_;
  request.removed = removed_;
  absl::StatusOr<master::DiskSyncReply> reply = master_->SyncDiskTier(client_id_, request);
  if (!reply.ok()) {
    YB_LOG_WARN("disk tier sync with {} failed: {}", master_->address(), reply.status().ToString());
    if (request.full) {
      need_full_ = true;  // start the listing again
    } else {
      to_announce_.insert(to_announce_.end(), std::make_move_iterator(request.announced.begin()),
                          std::make_move_iterator(request.announced.end()));
    }
    if (spilled_.size() + removed_.size() > kMaxPendingReports) need_full_ = true;
    return false;
  }
  spilled_.clear();
  removed_.clear();
  if (reply->need_full_sync) {
    need_full_ = true;
    return true;
  }
  for (const std::string& key : reply->drop) files_->Remove(key);
  for (const master::SpillTask& task : reply->spill) Spill(task);
  std::vector<std::pair<master::DiskObject, int>> retries;
  retries.swap(promotion_retries_);
  for (auto& [object, attempts] : retries) Promote(object, attempts + 1);
  for (const master::DiskObject& object : reply->promote) Promote(object, 1);
  return !to_announce_.empty() || !reply->spill.empty() || !spilled_.empty() ||
         !reply->promote.empty();
}

void DiskTier::Spill(const master::SpillTask& task) {
  auto reject = [&](absl::string_view why) {
    YB_LOG_WARN("spill of a {}-byte object refused: {}", task.size, why);
    yuebing::MutexLock lock(&mu_);
    ++stats_.spill_rejected;
  };
  if (task.size > transport::kMaxReadObjectBytes) {
    // Readers could not fetch it in one ReadObject; the master evicts it after spill_timeout.
    reject("larger than one disk read may move");
    return;
  }
  if (task.size == 0 || task.address < segment_base_ ||
      task.address - segment_base_ > segment_size_ ||
      task.size > segment_size_ - (task.address - segment_base_)) {
    reject("range outside this store's segment");
    return;
  }
  // Copied first: the master keeps the range allocated while the spill is outstanding, but a
  // Remove may free it; the checksum then tells.
  std::string bytes(reinterpret_cast<const char*>(task.address), task.size);
  if (!ChecksumMatches(task.checksum, bytes)) {
    reject("bytes do not match the recorded checksum");
    return;
  }
  absl::Status status = files_->Write(task.key, bytes, task.checksum);
  if (!status.ok()) {
    reject(status.ToString());
    return;
  }
  spilled_.push_back(master::DiskObject{task.key, task.size, task.checksum});
  yuebing::MutexLock lock(&mu_);
  ++stats_.spilled;
}

void DiskTier::Promote(const master::DiskObject& object, int attempt) {
  if (!options_.promote) return;
  absl::Status status;
  absl::StatusOr<FileStore::Value> value = files_->Read(object.key);  // verified
  if (!value.ok()) {
    status = value.status();  // gone or failed verification (then reported as removed)
  } else if (value->bytes.size() != object.size || value->object_checksum != object.checksum) {
    status = absl::FailedPreconditionError("the file is not the object the master recorded");
  } else {
    status = options_.promote(object.key, value->bytes);
  }
  if (status.ok()) files_->Remove(object.key);  // the master replaced the disk copy with memory
  if (ToErrorCode(status) == ErrorCode::kNoAvailableHandle && attempt < kPromotionAttempts) {
    promotion_retries_.emplace_back(object, attempt);  // spills under way free memory
    return;
  }
  if (!status.ok()) {
    YB_LOG_DEBUG("promotion of a {}-byte object not done: {}", object.size, status.ToString());
  }
  yuebing::MutexLock lock(&mu_);
  ++(status.ok() ? stats_.promoted : stats_.promotion_failed);
}

}  // namespace yuebing::store
