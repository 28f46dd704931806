// DiskTier: the disk tier of a store server (a Client with a global segment and ssd_path).
//
// It owns a FileStore and two activities:
//   - a sync loop (one thread) calling MasterApi::SyncDiskTier every sync_interval (at once
//     again while there is work): it first announces every recovered file (full sync), then
//     reports spills, lost files and takes spill tasks and drops. A spill task is done by
//     copying [address, address+size) of this client's own segment (checked to lie inside it)
//     into the file store; when the master recorded a checksum, the copy must match it or it is
//     not written (the range may have been freed and reused meanwhile).
//   - the object source of the store's transfer engine (TransferEngine::SetObjectSource): peers'
//     ReadObject(segment, key) get the verified value of the key's file over the engine's
//     authenticated TCP server; an absent key is kNotFound, a file that fails verification is
//     deleted (and reported) and answered kDataLoss. The endpoint reported to the master is the
//     engine's segment name.
//   - promotions (promotion on hit): the master hands out disk-only objects read often; the
//     sync loop reads each file (verified, and it must be the object the master recorded) and
//     gives the value to DiskTierOptions::promote, which puts it back to memory as a promotion
//     (ReplicateConfig::promotion); when that put ends, the file is deleted (the master already
//     forgot the disk copy). A failed promotion leaves the file and the disk copy as they were;
//     one that found no memory (the eviction it started frees space as its spills end) is tried
//     again at the next syncs, kPromotionAttempts times in all.
// The tier id (identity of the directory, file "tier.id" in it) lets a restarted store take
// back the objects its previous incarnation held.
//
// Thread safety: Start/destructor from one thread; the rest runs on its own threads.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "store/file_store.h"
#include "store/master_api.h"
#include "yuebing/common/mutex.h"
#include "yuebing/transport/transfer_engine.h"

namespace yuebing::store {

inline constexpr int kPromotionAttempts = 5;

struct DiskTierOptions {
  std::string path;
  uint64_t capacity = 0;
  std::chrono::milliseconds sync_interval{100};
  uint32_t max_tasks = 16;  // spill tasks taken per sync (all due within spill_timeout)
  // Puts `value` of disk-only object `key` back to memory as a promotion; called on the sync
  // thread. Empty: promotions handed out are ignored (the master queues them again).
  std::function<absl::Status(const std::string& key, absl::string_view value)> promote;
};

struct DiskTierStats {
  uint64_t spilled = 0;           // spill tasks written to files
  uint64_t spill_rejected = 0;    // tasks refused (range outside the segment, checksum mismatch)
  uint64_t served = 0;            // reads served
  uint64_t promoted = 0;          // files put back to memory (and then deleted)
  uint64_t promotion_failed = 0;  // promotions refused by the master or not written
};

class DiskTier {
 public:
  // Opens (recovering) the file store, registers it as `engine`'s object source and starts the
  // sync loop. `segment_base`/`segment_size` delimit this client's own segment; `master` and
  // `engine` must outlive the tier. Errors: kInvalidParams (bad options), kWriteFail (directory).
  static absl::StatusOr<std::unique_ptr<DiskTier>> Start(
      const DiskTierOptions& options, MasterApi* master, master::ClientId client_id,
      uint64_t segment_base, uint64_t segment_size, transport::TransferEngine* engine);
  ~DiskTier();  // unregisters the object source (waiting for reads in progress), stops the loop
  DiskTier(const DiskTier&) = delete;
  DiskTier& operator=(const DiskTier&) = delete;

  const std::string& endpoint() const { return endpoint_; }
  DiskTierStats Stats() const;

 private:
  DiskTier(const DiskTierOptions& options, MasterApi* master, master::ClientId client_id,
           uint64_t segment_base, uint64_t segment_size, transport::TransferEngine* engine);
  // The object source: the verified value of `key` (see the file comment).
  absl::StatusOr<std::string> ServeObject(absl::string_view key);
  void SyncLoop();
  // One exchange with the master; returns whether there may be more work right away.
  bool SyncOnce();
  void Spill(const master::SpillTask& task);
  // One attempt at a promotion (`attempt` from 1); retried later when memory was full.
  void Promote(const master::DiskObject& object, int attempt);

  const DiskTierOptions options_;
  MasterApi* const master_;
  const master::ClientId client_id_;
  const uint64_t segment_base_;
  const uint64_t segment_size_;
  transport::TransferEngine* const engine_;
  std::unique_ptr<FileStore> files_;
  std::string tier_id_;
  std::string endpoint_;
  bool serving_ = false;  // registered as the engine's object source
  std::thread sync_thread_;

  // Sync loop state (only its thread touches these, except stop_).
  bool need_full_ = true;
  std::vector<master::DiskObject> to_announce_;
  std::vector<master::DiskObject> spilled_;
  std::vector<std::string> removed_;
  // Promotions that found no memory, with the attempts made.
  std::vector<std::pair<master::DiskObject, int>> promotion_retries_;

  mutable yuebing::Mutex mu_;
  bool stop_ ABSL_GUARDED_BY(mu_) = false;
  DiskTierStats stats_ ABSL_GUARDED_BY(mu_);
};

}  // namespace yuebing::store
