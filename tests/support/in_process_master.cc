#include "support/in_process_master.h"

#include <algorithm>
#include <thread>
#include <utility>

#include "absl/strings/str_cat.h"
#include "master/request_rules.h"
#include "yuebing/common/error_code.h"
#include "yuebing/common/limits.h"

namespace yuebing::test_support {
namespace {

template <typename T>
std::vector<T> Repeat(size_t n, const absl::Status& status) {
  return std::vector<T>(n, T(status));
}

}  // namespace

InProcessMaster::InProcessMaster(master::MasterOptions options, uint64_t seed)
    : options_(options),
      service_(std::make_shared<master::MasterService>(options)),
      random_(seed) {}

void InProcessMaster::Restart() {
  auto fresh = std::make_shared<master::MasterService>(options_);
  yuebing::MutexLock lock(&mu_);
  service_ = std::move(fresh);
  ++term_;
}

void InProcessMaster::Tick() { Current().service->Tick(); }

void InProcessMaster::SetFaults(const InProcessFaults& faults) {
  yuebing::MutexLock lock(&mu_);
  faults_ = faults;
}

InProcessMaster::Snapshot InProcessMaster::Current() const {
  yuebing::MutexLock lock(&mu_);
  return Snapshot{service_, term_};
}

InProcessMaster::Fault InProcessMaster::DrawFault() {
  ++calls_;
  Fault fault;
  yuebing::MutexLock lock(&mu_);
  std::uniform_real_distribution<double> unit(0, 1);
  if (faults_.fail_probability > 0 && unit(random_) < faults_.fail_probability) {
    fault.fail = true;
    ++failed_calls_;
  }
  if (faults_.delay_probability > 0 && faults_.max_delay.count() > 0 &&
      unit(random_) < faults_.delay_probability) {
    fault.delay = std::chrono::milliseconds(
        std::uniform_int_distribution<int64_t>(1, faults_.max_delay.count())(random_));
    ++delayed_calls_;
  }
  return fault;
}

InProcessMasterApi::InProcessMasterApi(InProcessMaster* master, std::chrono::milliseconds timeout)
    : master_(master), timeout_(timeout) {}

absl::Status InProcessMasterApi::Call(const char* name,
                                      const std::function<void(master::MasterService&)>& body) {
  const InProcessMaster::Fault fault = master_->DrawFault();
  if (fault.fail) {  // never reached the master
    return MakeError(ErrorCode::kRpcFail, absl::StrCat(name, ": UNAVAILABLE (injected)"));
  }
  const InProcessMaster::Snapshot current = master_->Current();
  body(*current.service);
  // A late reply: the call was served; past the deadline the caller never sees the answer.
  if (fault.delay >= timeout_) {
    std::this_thread::sleep_for(timeout_);
    return MakeError(ErrorCode::kRpcFail, absl::StrCat(name, ": deadline exceeded (injected)"));
  }
  if (fault.delay.count() > 0) std::this_thread::sleep_for(fault.delay);
  uint64_t seen = max_term_.load();
  while (current.term > seen && !max_term_.compare_exchange_weak(seen, current.term)) {
  }
  if (current.term > seen && seen != 0 && on_new_term_) on_new_term_(current.term);
  if (current.term < max_term_.load()) {
    return MakeError(ErrorCode::kRpcFail,
                     absl::StrCat(name, ": reply from stale master term ", current.term));
  }
  return absl::OkStatus();
}

absl::StatusOr<uint64_t> InProcessMasterApi::MountSegment(const master::ClientId& client,
                                                          const master::Segment& segment) {
  absl::StatusOr<uint64_t> epoch = MakeError(ErrorCode::kInternalError, "no reply");
  absl::Status call = Call("MountSegment", [&](master::MasterService& service) {
    absl::Status check = master::CheckClientId(client);
    if (check.ok()) check = master::CheckSegmentRange(segment);
    epoch = check.ok() ? service.MountSegment(client, segment) : check;
  });
  if (!call.ok()) return call;
  return epoch;
}

absl::StatusOr<master::MountResult> InProcessMasterApi::MountSegmentForRestore(
    const master::ClientId& client, const master::Segment& segment, bool has_disk_tier) {
  absl::StatusOr<master::MountResult> mount = MakeError(ErrorCode::kInternalError, "no reply");
  absl::Status call = Call("MountSegment", [&](master::MasterService& service) {
    absl::Status check = master::CheckClientId(client);
    if (check.ok()) check = master::CheckSegmentRange(segment);
    mount = check.ok() ? service.MountSegmentForRestore(client, segment, has_disk_tier) : check;
  });
  if (!call.ok()) return call;
  return mount;
}

absl::StatusOr<std::vector<absl::Status>> InProcessMasterApi::RestoreObjects(
    const master::ClientId& client, const std::string& segment_name,
    const std::vector<master::RestoredObject>& objects, bool last) {
  absl::StatusOr<std::vector<absl::Status>> results =
      MakeError(ErrorCode::kInternalError, "no reply");
  absl::Status call = Call("RestoreObjects", [&](master::MasterService& service) {
    results = service.RestoreObjects(client, segment_name, objects, last);
  });
  if (!call.ok()) return call;
  return results;
}

absl::StatusOr<master::JournalBatch> InProcessMasterApi::PullJournal(
    const master::ClientId& client, uint64_t journal_id, uint64_t ack,
    std::chrono::milliseconds wait) {
  const auto deadline = std::chrono::steady_clock::now() + wait;
  while (true) {
    absl::StatusOr<master::JournalBatch> batch = MakeError(ErrorCode::kInternalError, "no reply");
    absl::Status call = Call("PullJournal", [&](master::MasterService& service) {
      batch = service.PullJournal(client, journal_id, ack, 4096);
    });
    if (!call.ok()) return call;
    if (!batch.ok() || !batch->entries.empty() || batch->reset ||
        std::chrono::steady_clock::now() >= deadline) {
      return batch;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
}

absl::Status InProcessMasterApi::UnmountSegment(const master::ClientId& client,
                                                const std::string& name) {
  absl::Status result;
  absl::Status call = Call("UnmountSegment", [&](master::MasterService& service) {
    result = master::CheckClientId(client);
    if (result.ok()) result = service.UnmountSegment(client, name);
  });
  return call.ok() ? result : call;
}

absl::StatusOr<master::ClientState> InProcessMasterApi::Ping(const master::ClientId& client) {
  absl::StatusOr<master::ClientState> state = master::ClientState::kOk;
  absl::Status call = Call("Ping", [&](master::MasterService& service) {
    absl::Status check = master::CheckClientId(client);
    state = check.ok() ? absl::StatusOr<master::ClientState>(service.Ping(client)) : check;
  });
  if (!call.ok()) return call;
  return state;
}

std::vector<absl::StatusOr<std::vector<master::Replica>>> InProcessMasterApi::BatchPutStart(
    const master::ClientId& client, const std::vector<std::string>& keys,
    const std::vector<uint64_t>& sizes, const master::ReplicateConfig& config, bool upsert,
    const std::vector<uint64_t>& checksums) {
  using Result = absl::StatusOr<std::vector<master::Replica>>;
  std::vector<Result> results;
  absl::Status call = Call("BatchPutStart", [&](master::MasterService& service) {
    absl::Status check = master::CheckClientId(client);
    if (check.ok()) check = master::CheckBatchSize(keys.size());
    if (check.ok()) check = master::CheckPutSizes(keys.size(), sizes.size());
    if (check.ok()) check = master::CheckPutChecksums(keys.size(), checksums.size());
    results = check.ok()
                  ? master::StartPuts(service, client, keys, sizes, config, upsert, checksums)
                  : Repeat<Result>(keys.size(), check);
  });
  return call.ok() ? results : Repeat<Result>(keys.size(), call);
}

std::vector<absl::Status> InProcessMasterApi::BatchPutEnd(const master::ClientId& client,
                                                          const std::vector<std::string>& keys,
                                                          const std::vector<uint64_t>& checksums) {
  std::vector<absl::Status> results;
  absl::Status call = Call("BatchPutEnd", [&](master::MasterService& service) {
    absl::Status check = master::CheckClientId(client);
    if (check.ok()) check = master::CheckBatchSize(keys.size());
    if (check.ok()) check = master::CheckPutChecksums(keys.size(), checksums.size());
    if (!check.ok()) {
      results = Repeat<absl::Status>(keys.size(), check);
      return;
    }
    std::vector<uint64_t> padded = checksums;
    padded.resize(keys.size(), 0);
    results = service.BatchPutEnd(client, keys, padded);
  });
  return call.ok() ? results : Repeat<absl::Status>(keys.size(), call);
}

std::vector<absl::Status> InProcessMasterApi::BatchPutRevoke(const master::ClientId& client,
                                                             const std::vector<std::string>& keys) {
  std::vector<absl::Status> results;
  absl::Status call = Call("BatchPutRevoke", [&](master::MasterService& service) {
    absl::Status check = master::CheckClientId(client);
    if (check.ok()) check = master::CheckBatchSize(keys.size());
    results = check.ok() ? service.BatchPutRevoke(client, keys)
                         : Repeat<absl::Status>(keys.size(), check);
  });
  return call.ok() ? results : Repeat<absl::Status>(keys.size(), call);
}

std::vector<absl::StatusOr<master::ObjectLocation>> InProcessMasterApi::BatchGetReplicaList(
    const std::vector<std::string>& keys) {
  using Result = absl::StatusOr<master::ObjectLocation>;
  std::vector<Result> results;
  absl::Status call = Call("BatchGetReplicaList", [&](master::MasterService& service) {
    absl::Status check = master::CheckBatchSize(keys.size());
    if (!check.ok()) {
      results = Repeat<Result>(keys.size(), check);
      return;
    }
    results = service.BatchGetReplicaList(keys);
    for (Result& result : results) {  // the wire carries whole, non-negative milliseconds
      if (result.ok() && result->lease_ttl.count() < 0) result->lease_ttl = {};
    }
  });
  return call.ok() ? results : Repeat<Result>(keys.size(), call);
}

std::vector<absl::StatusOr<master::ObjectLocation>> InProcessMasterApi::BatchQueryReplicas(
    const std::vector<std::string>& keys) {
  using Result = absl::StatusOr<master::ObjectLocation>;
  std::vector<Result> results;
  absl::Status call = Call("BatchGetReplicaList", [&](master::MasterService& service) {
    results = service.BatchQueryReplicas(keys);
  });
  return call.ok() ? results : Repeat<Result>(keys.size(), call);
}

void InProcessMasterApi::ReleaseLeases(std::vector<uint64_t> lease_ids) {
  for (size_t start = 0; start < lease_ids.size(); start += limits::kMaxBatchKeys) {
    const size_t end = std::min(lease_ids.size(), start + limits::kMaxBatchKeys);
    std::vector<uint64_t> chunk(lease_ids.begin() + start, lease_ids.begin() + end);
    (void)Call("ReleaseLeases",
               [&](master::MasterService& service) { (void)service.ReleaseLeases(chunk); });
  }
}

absl::StatusOr<std::vector<bool>> InProcessMasterApi::BatchExist(
    const std::vector<std::string>& keys) {
  absl::StatusOr<std::vector<bool>> result = std::vector<bool>{};
  absl::Status call = Call("BatchExist", [&](master::MasterService& service) {
    absl::Status check = master::CheckBatchSize(keys.size());
    result = check.ok() ? absl::StatusOr<std::vector<bool>>(service.BatchExist(keys)) : check;
  });
  if (!call.ok()) return call;
  return result;
}

std::vector<absl::Status> InProcessMasterApi::BatchRemove(const std::vector<std::string>& keys,
                                                          bool force) {
  std::vector<absl::Status> results;
  absl::Status call = Call("BatchRemove", [&](master::MasterService& service) {
    absl::Status check = master::CheckBatchSize(keys.size());
    results =
        check.ok() ? service.BatchRemove(keys, force) : Repeat<absl::Status>(keys.size(), check);
  });
  return call.ok() ? results : Repeat<absl::Status>(keys.size(), call);
}

std::vector<absl::Status> InProcessMasterApi::BatchReplicaClear(
    const std::vector<std::string>& keys, const std::string& segment_name) {
  std::vector<absl::Status> results;
  absl::Status call = Call("BatchReplicaClear", [&](master::MasterService& service) {
    absl::Status check = master::CheckBatchSize(keys.size());
    results = check.ok() ? service.BatchReplicaClear(keys, segment_name)
                         : Repeat<absl::Status>(keys.size(), check);
  });
  return call.ok() ? results : Repeat<absl::Status>(keys.size(), call);
}

absl::StatusOr<master::CopyPlan> InProcessMasterApi::ReplicaCopyStart(
    const master::ClientId& client, const std::string& key, const std::string& source,
    const std::vector<std::string>& targets, bool move) {
  absl::StatusOr<master::CopyPlan> plan = master::CopyPlan{};
  absl::Status call = Call("ReplicaCopyStart", [&](master::MasterService& service) {
    absl::Status check = master::CheckClientId(client);
    plan = check.ok() ? service.ReplicaCopyStart(client, key, source, targets, move)
                      : absl::StatusOr<master::CopyPlan>(check);
  });
  if (!call.ok()) return call;
  return plan;
}

absl::Status InProcessMasterApi::ReplicaCopyEnd(const master::ClientId& client,
                                                const std::string& key, bool revoke) {
  absl::Status result;
  absl::Status call = Call("ReplicaCopyEnd", [&](master::MasterService& service) {
    result = master::CheckClientId(client);
    if (result.ok()) result = service.ReplicaCopyEnd(client, key, revoke);
  });
  return call.ok() ? result : call;
}

absl::StatusOr<std::vector<master::DrainUnit>> InProcessMasterApi::FetchDrainWork(
    const master::ClientId& client, uint32_t max_units) {
  absl::StatusOr<std::vector<master::DrainUnit>> units;
  absl::Status call = Call("FetchDrainWork", [&](master::MasterService& service) {
    units = service.FetchDrainWork(client, max_units);
  });
  if (!call.ok()) return call;
  return units;
}

absl::Status InProcessMasterApi::ReportDrainWork(const master::ClientId& client,
                                                 const std::string& job_id, const std::string& key,
                                                 const absl::Status& outcome) {
  return Call("ReportDrainWork", [&](master::MasterService& service) {
    service.ReportDrainWork(client, job_id, key, outcome);
  });
}

absl::StatusOr<uint64_t> InProcessMasterApi::GetSize(const std::string& key) {
  absl::StatusOr<uint64_t> size = uint64_t{0};
  absl::Status call =
      Call("GetSize", [&](master::MasterService& service) { size = service.GetSize(key); });
  if (!call.ok()) return call;
  return size;
}

absl::StatusOr<uint64_t> InProcessMasterApi::RemoveByRegex(const std::string& pattern, bool force,
                                                           const std::string& tenant) {
  absl::StatusOr<uint64_t> removed = uint64_t{0};
  absl::Status call = Call("RemoveByRegex", [&](master::MasterService& service) {
    absl::Status check = master::CheckRegexSize(pattern);
    removed = check.ok() ? service.RemoveByRegex(pattern, force, TenantOrDefault(tenant)) : check;
  });
  if (!call.ok()) return call;
  return removed;
}

absl::StatusOr<uint64_t> InProcessMasterApi::RemoveAll(bool force, const std::string& tenant) {
  uint64_t removed = 0;
  absl::Status call = Call("RemoveAll", [&](master::MasterService& service) {
    removed = service.RemoveAll(force, tenant);
  });
  if (!call.ok()) return call;
  return removed;
}

absl::StatusOr<master::DiskSyncReply> InProcessMasterApi::SyncDiskTier(
    const master::ClientId& client, const master::DiskSyncRequest& request) {
  absl::StatusOr<master::DiskSyncReply> reply = master::DiskSyncReply{};
  absl::Status call = Call("SyncDiskTier", [&](master::MasterService& service) {
    absl::Status check = master::CheckClientId(client);
    reply = check.ok() ? service.SyncDiskTier(client, request) : check;
  });
  if (!call.ok()) return call;
  return reply;
}

}  // namespace yuebing::test_support
