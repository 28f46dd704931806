// Put sessions of the object client (Client::StartPutSessions and the rest): a put whose bytes
// come in ranges over several calls, as a layer-by-layer KV writer produces them.
#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "store/object_client.h"
#include "store/request_checks.h"
#include "yuebing/common/checksum.h"
#include "yuebing/common/error_code.h"
#include "yuebing/common/logging.h"

namespace yuebing::store {
namespace {

using master::Replica;
using transport::OpCode;
using transport::SegmentHandle;
using transport::TransferRequest;
using transport::TransferState;
using transport::TransferStatus;

absl::Status NoSession(const std::string& key) {
  return MakeError(ErrorCode::kInvalidParams, absl::StrCat("no put session of '", key, "'"));
}

// Adds [begin, end) to sorted, merged ranges.
void AddRange(std::vector<std::pair<uint64_t, uint64_t>>& ranges, uint64_t begin, uint64_t end) {
  if (begin >= end) return;
  std::vector<std::pair<uint64_t, uint64_t>> merged;
  merged.reserve(ranges.size() + 1);
  bool placed = false;
  for (const auto& [b, e] : ranges) {
    if (e < begin || placed) {
      merged.emplace_back(b, e);
    } else if (b > end) {
      merged.emplace_back(begin, end);
      merged.emplace_back(b, e);
      placed = true;
    } else {
      begin = std::min(begin, b);
      end = std::max(end, e);
    }
  }
  if (!placed) merged.emplace_back(begin, end);
  std::sort(merged.begin(), merged.end());
  ranges = std::move(merged);
}

uint64_t Covered(const std::vector<std::pair<uint64_t, uint64_t>>& ranges) {
  uint64_t bytes = 0;
  for (const auto& [b, e] : ranges) bytes += e - b;
  return bytes;
}

}  // namespace

std::vector<absl::Status> ObjectClient::StartPutSessions(const std::vector<std::string>& keys,
                                                         const std::vector<uint64_t>& sizes,
                                                         const master::ReplicateConfig& config) {
  std::vector<absl::Status> out(keys.size());
  if (absl::Status bad = CheckBatchPut(keys.size(), sizes.size(), config.replica_num); !bad.ok()) {
    std::fill(out.begin(), out.end(), bad);
    return out;
  }
  std::vector<size_t> index;
  std::vector<std::string> start_keys;
  std::vector<uint64_t> start_sizes;
  {
    yuebing::MutexLock lock(&put_sessions_mu_);
    for (size_t i = 0; i < keys.size(); ++i) {
      out[i] = ValidateKey(keys[i]);
      if (out[i].ok() && sizes[i] == 0) {
        out[i] = MakeError(ErrorCode::kInvalidParams, "cannot store an empty value");
      }
      const bool duplicate =
          put_sessions_.contains(keys[i]) ||
          std::find(start_keys.begin(), start_keys.end(), keys[i]) != start_keys.end();
      if (out[i].ok() && duplicate) {
        out[i] = MakeError(ErrorCode::kInvalidParams,
                           absl::StrCat("'", keys[i], "' already has a put session"));
      }
      if (!out[i].ok()) continue;
      index.push_back(i);
      start_keys.push_back(keys[i]);
      start_sizes.push_back(sizes[i]);
    }
  }
  if (index.empty()) return out;
  puts_.fetch_add(index.size(), std::memory_order_relaxed);
  auto starts = master_->BatchPutStart(id_, start_keys, start_sizes, config, /*upsert=*/false,
                                       std::vector<uint64_t>(start_keys.size(), kNoChecksum));
  yuebing::MutexLock lock(&put_sessions_mu_);
  for (size_t j = 0; j < index.size(); ++j) {
    if (!starts[j].ok()) {
      out[index[j]] = starts[j].status();
      continue;
    }
    PutSession& session = put_sessions_[start_keys[j]];
    session.replicas = std::move(starts[j]).value();
    session.size = start_sizes[j];
    session.started = std::chrono::steady_clock::now();
  }
  return out;
}

std::vector<absl::StatusOr<uint64_t>> ObjectClient::WritePutSessionRanges(
    const std::vector<std::string>& keys, const std::vector<std::vector<Client::Range>>& ranges) {
  using Result = absl::StatusOr<uint64_t>;
  if (keys.size() != ranges.size()) {
    return std::vector<Result>(
        keys.size(), MakeError(ErrorCode::kInvalidParams, "keys and ranges differ in length"));
  }
  std::vector<Result> out(keys.size(), uint64_t{0});
  std::vector<std::vector<Replica>> replicas(keys.size());
  std::vector<bool> writing(keys.size(), false);
  const auto now = std::chrono::steady_clock::now();
  {
    yuebing::MutexLock lock(&put_sessions_mu_);
    for (size_t i = 0; i < keys.size(); ++i) {
      auto it = put_sessions_.find(keys[i]);
      if (it == put_sessions_.end() || it->second.sealed) {
        out[i] = NoSession(keys[i]);
        continue;
      }
      if (now - it->second.started > kPutSessionWriteWindow) {
        out[i] = MakeError(ErrorCode::kLeaseExpired,
                           absl::StrCat("the put session of '", keys[i],
                                        "' is older than its write window: revoke it"));
        continue;
      }
      uint64_t bytes = 0;
      for (const Client::Range& range : ranges[i]) {
        absl::Status checked = CheckRange(range, it->second.size, keys[i]);
        if (!checked.ok()) {
          out[i] = std::move(checked);
          break;
        }
        bytes += range.size;
      }
      if (!out[i].ok()) continue;
      out[i] = bytes;
      replicas[i] = it->second.replicas;
      writing[i] = true;
      ++it->second.writing;
    }
  }
  // One engine batch writes every range of every key to each of its replicas.
  std::vector<TransferRequest> requests;
  std::vector<size_t> owner;  // key of each request
  for (size_t i = 0; i < keys.size(); ++i) {
    if (!writing[i]) continue;
    for (const Replica& replica : replicas[i]) {
      absl::StatusOr<SegmentHandle> handle = HandleFor(replica);
      if (!handle.ok()) {
        out[i] = MakeError(ErrorCode::kTransferFail, absl::StrCat("segment ", replica.segment_name,
                                                                  ": ", handle.status().message()));
        continue;
      }
      for (const Client::Range& range : ranges[i]) {
        if (range.size == 0) continue;
        TransferRequest r;
        r.opcode = OpCode::kWrite;
        r.source = range.data;
        r.target_id = *handle;
        r.target_offset = replica.address + range.offset;
        r.length = range.size;
        requests.push_back(r);
        owner.push_back(i);
      }
    }
  }
  const std::vector<TransferStatus> statuses = RunTransfers(requests);
  for (size_t k = 0; k < requests.size(); ++k) {
    const size_t i = owner[k];
    if (statuses[k].state != TransferState::kCompleted && out[i].ok()) {
      out[i] = MakeError(
          ErrorCode::kTransferFail,
          absl::StrCat("writing '", keys[i], "': ", transport::TransferStateName(statuses[k].state),
                       " ", statuses[k].reason));
    }
  }
  yuebing::MutexLock lock(&put_sessions_mu_);
  for (size_t i = 0; i < keys.size(); ++i) {
    if (!writing[i]) continue;
    auto it = put_sessions_.find(keys[i]);
    if (it == put_sessions_.end()) continue;  // cannot happen: end and revoke wait for writes
    --it->second.writing;
    if (!out[i].ok()) continue;
    for (const Client::Range& range : ranges[i]) {
      AddRange(it->second.written, range.offset, range.offset + range.size);
    }
  }
  return out;
}

std::vector<size_t> ObjectClient::SealPutSessions(const std::vector<std::string>& keys,
                                                  std::vector<absl::Status>* statuses) {
  std::vector<size_t> sealed;
  for (size_t i = 0; i < keys.size(); ++i) {
    auto it = put_sessions_.find(keys[i]);
    if (it == put_sessions_.end()) {
      (*statuses)[i] = NoSession(keys[i]);
      continue;
    }
    it->second.sealed = true;
    sealed.push_back(i);
  }
  struct Wait {
    ObjectClient* self;
    const std::vector<std::string>* keys;
    const std::vector<size_t>* sealed;
  } wait{this, &keys, &sealed};
  put_sessions_mu_.Await(yuebing::Condition(
      +[](Wait* w) ABSL_NO_THREAD_SAFETY_ANALYSIS {
        for (size_t i : *w->sealed) {
          auto it = w->self->put_sessions_.find((*w->keys)[i]);
          if (it != w->self->put_sessions_.end() && it->second.writing > 0) return false;
        }
        return true;
      },
      &wait));
  return sealed;
}

std::vector<absl::Status> ObjectClient::EndPutSessions(const std::vector<std::string>& keys) {
  std::vector<absl::Status> out(keys.size());
  std::vector<std::string> end_keys;
  std::vector<size_t> end_index;
  {
    yuebing::MutexLock lock(&put_sessions_mu_);
    for (size_t i : SealPutSessions(keys, &out)) {
      PutSession& session = put_sessions_.at(keys[i]);
      const uint64_t covered = Covered(session.written);
      if (covered != session.size) {
        session.sealed = false;  // to be written further, or revoked
        out[i] = MakeError(ErrorCode::kInvalidParams,
                           absl::StrCat("the ranges written cover ", covered, " of the ",
                                        session.size, " bytes of '", keys[i], "'"));
        continue;
      }
      if (std::find(end_keys.begin(), end_keys.end(), keys[i]) != end_keys.end()) continue;
      end_keys.push_back(keys[i]);
      end_index.push_back(i);
    }
  }
  if (end_keys.empty()) return out;
  const std::vector<absl::Status> ends =
      master_->BatchPutEnd(id_, end_keys, std::vector<uint64_t>(end_keys.size(), kNoChecksum));
  yuebing::MutexLock lock(&put_sessions_mu_);
  for (size_t j = 0; j < end_keys.size(); ++j) {
    out[end_index[j]] = ends[j];
    auto it = put_sessions_.find(end_keys[j]);
    if (ends[j].ok() || ToErrorCode(ends[j]) == ErrorCode::kObjectNotFound) {
      put_sessions_.erase(it);
    } else {
      it->second.sealed = false;  // kept for a retry or a revoke
    }
  }
  for (size_t i = 0; i < keys.size(); ++i) {
    // A key given twice: its later places get the first one's result.
    auto first = std::find(end_keys.begin(), end_keys.end(), keys[i]);
    if (first != end_keys.end() && out[i].ok()) out[i] = out[end_index[first - end_keys.begin()]];
  }
  return out;
}

std::vector<absl::Status> ObjectClient::RevokePutSessions(const std::vector<std::string>& keys) {
  std::vector<absl::Status> out(keys.size());
  std::vector<std::string> revoke_keys;
  std::vector<size_t> revoke_index;
  {
    yuebing::MutexLock lock(&put_sessions_mu_);
    for (size_t i : SealPutSessions(keys, &out)) {
      if (std::find(revoke_keys.begin(), revoke_keys.end(), keys[i]) != revoke_keys.end()) {
        continue;
      }
      revoke_keys.push_back(keys[i]);
      revoke_index.push_back(i);
    }
  }
  if (revoke_keys.empty()) return out;
  const std::vector<absl::Status> revoked = master_->BatchPutRevoke(id_, revoke_keys);
  yuebing::MutexLock lock(&put_sessions_mu_);
  for (size_t j = 0; j < revoke_keys.size(); ++j) {
    // kObjectNotFound: the master no longer has the put (reclaimed): nothing is left to revoke.
    const bool gone = revoked[j].ok() || ToErrorCode(revoked[j]) == ErrorCode::kObjectNotFound;
    out[revoke_index[j]] = gone ? absl::OkStatus() : revoked[j];
    if (gone) put_sessions_.erase(revoke_keys[j]);
  }
  return out;
}

}  // namespace yuebing::store
