// The object client: see object_client.h.
#include "store/object_client.h"

#include <algorithm>
#include <cstring>
#include <random>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "store/fault_point.h"
#include "store/request_checks.h"
#include "yuebing/common/checksum.h"
#include "yuebing/common/error_code.h"
#include "yuebing/common/host_port.h"
#include "yuebing/common/limits.h"
#include "yuebing/common/logging.h"
#include "yuebing/common/status.h"

namespace yuebing::store {
namespace {

// Hashing large values while they are written saves a pass over them and costs their PutEnd one
// more master-to-store round trip (about 0.1 ms on this 2-core machine): worth it from about the
// bytes that two threads hash in that time before the put (20-40 GB/s each).
constexpr uint64_t kHashWhileWritingMinBytes = 8 << 20;

using master::ObjectLocation;
using master::Replica;
using transport::OpCode;
using transport::SegmentHandle;
using transport::TransferRequest;
using transport::TransferState;
using transport::TransferStatus;

// Per key: values[i] where its read succeeded, else the read's error.
template <typename T>
std::vector<absl::StatusOr<T>> ValuesWhereRead(const std::vector<absl::StatusOr<uint64_t>>& read,
                                               std::vector<T> values) {
  std::vector<absl::StatusOr<T>> out;
  out.reserve(read.size());
  for (size_t i = 0; i < read.size(); ++i) {
    if (read[i].ok()) {
      out.emplace_back(std::move(values[i]));
    } else {
      out.emplace_back(read[i].status());
    }
  }
  return out;
}

// Bytes a read plan moves.
template <typename Plan>
uint64_t BytesOf(const Plan& plan) {
  uint64_t bytes = 0;
  for (const auto& piece : plan.pieces) bytes += piece.length;
  return bytes;
}

std::string HostOf(const std::string& segment_name) {
  absl::StatusOr<HostPort> parsed = ParseHostPort(segment_name, 0);
  return parsed.ok() ? parsed->host : segment_name;
}

// Calls `call` with the valid keys only (one master call for the batch) and scatters its per-key
// results back in order; invalid keys get their validation error and no master call is made when
// none is valid. `call` returns one Result per key it is given.
template <typename Result, typename Call>
std::vector<Result> ForValidKeys(const std::vector<std::string>& keys, Call call) {
  std::vector<Result> out;
  out.reserve(keys.size());
  std::vector<size_t> valid;
  std::vector<std::string> valid_keys;
  for (size_t i = 0; i < keys.size(); ++i) {
    absl::Status status = ValidateKey(keys[i]);
    out.emplace_back(status.ok() ? MakeError(ErrorCode::kInternalError, "no result") : status);
    if (status.ok()) {
      valid.push_back(i);
      valid_keys.push_back(keys[i]);
    }
  }
  if (valid_keys.empty()) return out;
  std::vector<Result> results = call(valid_keys);
  for (size_t j = 0; j < valid.size(); ++j) out[valid[j]] = std::move(results[j]);
  return out;
}

}  // namespace

ObjectClient::ObjectClient(const ClientConfig& config, master::ClientId id,
                           transport::TransferEngine* engine, MasterApi* master)
    : config_(config),
      id_(std::move(id)),
      engine_(engine),
      master_(master),
      host_(HostOf(engine->LocalSegmentName())),
      hashed_transfers_(engine, &checksum_worker_) {}

absl::StatusOr<uint64_t> ObjectClient::GetSize(const std::string& key) {
  YB_RETURN_IF_ERROR(ValidateKey(key));
  return master_->GetSize(key);
}

absl::StatusOr<SegmentHandle> ObjectClient::HandleFor(const Replica& replica) {
  SegmentHandle old_handle = -1;
  {
    yuebing::MutexLock lock(&segments_mu_);
    auto it = segments_.find(replica.segment_name);
    if (it != segments_.end() && it->second.handle >= 0) {
      if (it->second.epoch == replica.epoch) return it->second.handle;
      if (replica.epoch < it->second.epoch) {
        return MakeError(ErrorCode::kInvalidReplica,
                         absl::StrCat("replica on ", replica.segment_name, " has an old epoch"));
      }
      old_handle = it->second.handle;
    }
  }
  // Opening is a handshake with the peer (up to the connect timeout when it does not answer):
  // done without the lock, so a silent peer delays only the calls that need it.
  if (old_handle >= 0) (void)engine_->CloseSegment(old_handle);
  YB_ASSIGN_OR_RETURN(SegmentHandle handle, engine_->OpenSegment(replica.segment_name));
  yuebing::MutexLock lock(&segments_mu_);
  OpenedSegment& opened = segments_[replica.segment_name];
  if (opened.handle < 0 || opened.handle == old_handle || opened.epoch <= replica.epoch) {
    opened = OpenedSegment{replica.epoch, handle};
  }
  return handle;
}

std::vector<TransferStatus> ObjectClient::RunTransfers(
    const std::vector<TransferRequest>& requests) {
  absl::StatusOr<std::vector<TransferStatus>> statuses = engine_->TransferSyncStatuses(requests);
  if (statuses.ok()) return std::move(statuses).value();
  std::vector<TransferStatus> failed(requests.size());
  for (TransferStatus& s : failed) {
    s.state = TransferState::kFailed;
    s.reason = std::string(statuses.status().message());
  }
  return failed;
}

std::vector<Replica> ObjectClient::ReadOrder(std::vector<Replica> replicas) {
  thread_local std::mt19937_64 random(std::random_device{}());
  std::shuffle(replicas.begin(), replicas.end(), random);
  auto rank = [this](const Replica& r) {
    if (r.segment_name == engine_->LocalSegmentName()) return 0;
    return HostOf(r.segment_name) == host_ ? 1 : 2;
  };
  std::stable_sort(replicas.begin(), replicas.end(),
                   [&](const Replica& a, const Replica& b) { return rank(a) < rank(b); });
  return replicas;
}

std::vector<absl::Status> ObjectClient::BatchPut(const std::vector<std::string>& keys,
                                                 const std::vector<absl::string_view>& values,
                                                 const master::ReplicateConfig& config,
                                                 bool upsert) {
  if (keys.size() != values.size()) {
    return std::vector<absl::Status>(
        keys.size(), MakeError(ErrorCode::kInvalidParams, "keys and values differ in length"));
  }
  std::vector<std::vector<absl::string_view>> parts;
  parts.reserve(values.size());
  for (absl::string_view value : values) parts.push_back({value});
  return BatchPutParts(keys, parts, config, upsert);
}

std::vector<absl::Status> ObjectClient::BatchPutParts(
    const std::vector<std::string>& keys, const std::vector<std::vector<absl::string_view>>& parts,
    const master::ReplicateConfig& config, bool upsert) {
  std::vector<absl::Status> results(keys.size());
  if (absl::Status bad = CheckBatchPut(keys.size(), parts.size(), config.replica_num); !bad.ok()) {
    std::fill(results.begin(), results.end(), bad);
    return results;
  }
  // Valid keys go to the master; the rest keep their error.
  std::vector<size_t> index;
  std::vector<std::string> start_keys;
  std::vector<uint64_t> sizes, checksums;
  for (size_t i = 0; i < keys.size(); ++i) {
    uint64_t size = 0;
    for (absl::string_view part : parts[i]) size += part.size();
    results[i] = ValidateKey(keys[i]);
    if (results[i].ok() && size == 0) {
      results[i] = MakeError(ErrorCode::kInvalidParams, "cannot store an empty value");
    }
    if (!results[i].ok()) continue;
    index.push_back(i);
    start_keys.push_back(keys[i]);
    sizes.push_back(size);
  }
  checksums.assign(index.size(), kNoChecksum);
  // Two or more large values are hashed on this thread and the checksum worker's together: before
  // PutStart, which announces their checksums, or, from kHashWhileWritingMinBytes of them on and
  // when the previous put copied synchronously (shared memory), while they are written (the
  // helper hashes each value while the next one is copied), their checksums then recorded at
  // PutEnd, which waits for their owners to acknowledge them (docs/store.md, "Put"). Over TCP
  // hashing while writing only takes CPU from the transfer on a busy host. The others are hashed
  // here.
  std::vector<bool> hash_while_writing(index.size(), false);
  if (config_.enable_checksum) {
    size_t large = 0;
    uint64_t large_bytes = 0;
    for (uint64_t size : sizes) {
      if (size < ChecksumWorker::kMinBytes) continue;
      ++large;
      large_bytes += size;
    }
    const bool share = large >= 2;
    const bool while_writing = share && large_bytes >= kHashWhileWritingMinBytes &&
                               puts_copy_synchronously_.load(std::memory_order_relaxed);
    ChecksumWorker::Group hashing;
    for (size_t j = 0; j < index.size(); ++j) {
      if (!share || sizes[j] < ChecksumWorker::kMinBytes) {
        checksums[j] = ObjectChecksum(parts[index[j]]);
      } else if (while_writing) {
        hash_while_writing[j] = true;
      } else {
        checksum_worker_.Add(&hashing, parts[index[j]], &checksums[j]);
      }
    }
    checksum_worker_.Wait(&hashing);
  }
  puts_.fetch_add(index.size(), std::memory_order_relaxed);
  if (index.empty()) return results;
  auto starts = master_->BatchPutStart(id_, start_keys, sizes, config, upsert, checksums);
  FaultPoint("put_after_start");
  // One transfer batch writes every replica of every started object.
  std::vector<TransferRequest> requests;
  std::vector<size_t> owner;  // position in `index` of each request
  std::vector<HashedTransfers::Object> objects;
  std::vector<size_t> object_of(index.size(), 0);  // for the values hashed while written
  std::vector<bool> started(index.size(), false);
  absl::flat_hash_map<std::string, absl::Status> unreachable;  // segments that failed to open
  for (size_t j = 0; j < index.size(); ++j) {
    size_t i = index[j];
    if (!starts[j].ok()) {
      // Mooncake semantics: an existing object is kept and the put reports success.
      results[i] = ToErrorCode(starts[j].status()) == ErrorCode::kObjectAlreadyExists
                       ? absl::OkStatus()
                       : starts[j].status();
      continue;
    }
    started[j] = true;
    HashedTransfers::Object object;
    object.first_request = requests.size();
    object.hash = hash_while_writing[j];
    object.bytes = parts[i];
    for (const Replica& replica : *starts[j]) {
      auto failed = unreachable.find(replica.segment_name);
      absl::StatusOr<SegmentHandle> handle = failed != unreachable.end()
                                                 ? absl::StatusOr<SegmentHandle>(failed->second)
                                                 : HandleFor(replica);
      if (!handle.ok()) {
        if (ToErrorCode(handle.status()) != ErrorCode::kInvalidReplica) {
          unreachable.emplace(replica.segment_name, handle.status());
        }
        results[i] = MakeError(
            ErrorCode::kTransferFail,
            absl::StrCat("segment ", replica.segment_name, ": ", handle.status().message()));
        continue;
      }
      uint64_t offset = 0;
      for (absl::string_view part : parts[i]) {
        if (part.empty()) continue;
        TransferRequest r;
        r.opcode = OpCode::kWrite;
        r.source = const_cast<char*>(part.data());
        r.target_id = *handle;
        r.target_offset = replica.address + offset;
        r.length = part.size();
        requests.push_back(r);
        owner.push_back(j);
        offset += part.size();
      }
    }
    object.request_count = requests.size() - object.first_request;
    if (object.request_count > 0) {
      object_of[j] = objects.size();
      objects.push_back(std::move(object));
    }
  }
  HashedTransfers::Outcome written = hashed_transfers_.Run(requests, objects);
  if (!requests.empty()) {
    puts_copy_synchronously_.store(written.synchronous, std::memory_order_relaxed);
  }
  const std::vector<TransferStatus>& statuses = written.statuses;
  FaultPoint("put_before_end");
  for (size_t k = 0; k < requests.size(); ++k) {
    size_t i = index[owner[k]];
    if (statuses[k].state != TransferState::kCompleted && results[i].ok()) {
      results[i] = MakeError(
          ErrorCode::kTransferFail,
          absl::StrCat("writing '", keys[i], "': ", transport::TransferStateName(statuses[k].state),
                       " ", statuses[k].reason));
    }
  }
  std::vector<std::string> end_keys, revoke_keys;
  std::vector<uint64_t> end_checksums;
  std::vector<size_t> end_index;
  for (size_t j = 0; j < index.size(); ++j) {
    if (!started[j]) continue;
    if (results[index[j]].ok()) {
      end_keys.push_back(start_keys[j]);
      // Every request of the value completed, so a value hashed while written has its checksum.
      end_checksums.push_back(hash_while_writing[j] ? written.checksums[object_of[j]]
                                                    : checksums[j]);
      end_index.push_back(index[j]);
    } else {
      revoke_keys.push_back(start_keys[j]);
    }
  }
  if (!end_keys.empty()) {
    std::vector<absl::Status> ends = master_->BatchPutEnd(id_, end_keys, end_checksums);
    for (size_t k = 0; k < ends.size(); ++k) results[end_index[k]] = ends[k];
  }
  if (!revoke_keys.empty()) {
    for (const absl::Status& s : master_->BatchPutRevoke(id_, revoke_keys)) {
      if (!s.ok()) YB_LOG_DEBUG("put revoke: {}", s.ToString());
    }
  }
  return results;
}

ObjectClient::Lookup ObjectClient::LookUp(const std::vector<std::string>& keys) {
  Lookup lookup;
  const auto asked_at = std::chrono::steady_clock::now();
  lookup.locations = ForValidKeys<absl::StatusOr<ObjectLocation>>(
      keys, [this](const std::vector<std::string>& valid) {
        return master_->BatchGetReplicaList(valid);
      });
  lookup.asked_at.assign(keys.size(), asked_at);
  return lookup;
}

absl::StatusOr<ObjectClient::ReadPlan> ObjectClient::WholeObject(const std::string& key,
                                                                 const std::vector<Buffer>& buffers,
                                                                 uint64_t size) {
  uint64_t capacity = 0;
  for (const Buffer& b : buffers) capacity += b.data != nullptr ? b.size : 0;
  if (capacity < size) {
    return MakeError(ErrorCode::kInvalidParams,
                     absl::StrCat("buffer of ", capacity, " bytes is too small for '", key, "' (",
                                  size, " bytes)"));
  }
  ReadPlan plan;
  plan.whole = true;
  uint64_t offset = 0;
  for (const Buffer& b : buffers) {
    const uint64_t length = std::min(b.data != nullptr ? b.size : 0, size - offset);
    if (length == 0) continue;
    plan.pieces.push_back(Piece{b.data, offset, length});
    offset += length;
  }
  return plan;
}

template <typename Make>
std::vector<absl::StatusOr<ObjectClient::ReadPlan>> ObjectClient::PlanEach(const Lookup& lookup,
                                                                           Make make) {
  std::vector<absl::StatusOr<ReadPlan>> plans;
  plans.reserve(lookup.locations.size());
  for (size_t i = 0; i < lookup.locations.size(); ++i) {
    const auto& location = lookup.locations[i];
    plans.push_back(location.ok() ? make(i, *location)
                                  : absl::StatusOr<ReadPlan>(location.status()));
  }
  return plans;
}

std::vector<absl::StatusOr<ObjectClient::ReadPlan>> ObjectClient::WholeObjects(
    const std::vector<std::string>& keys, const std::vector<std::vector<Buffer>>& buffers,
    const Lookup& lookup) {
  return PlanEach(lookup, [&](size_t i, const ObjectLocation& location) {
    return WholeObject(keys[i], buffers[i], location.size);
  });
}

std::vector<absl::StatusOr<uint64_t>> ObjectClient::ReadObjects(
    const std::vector<std::string>& keys, const std::vector<absl::StatusOr<ReadPlan>>& plans,
    const Lookup& lookup) {
  const size_t n = keys.size();
  gets_.fetch_add(n, std::memory_order_relaxed);
  std::vector<absl::StatusOr<uint64_t>> results(n, uint64_t{0});
  std::vector<std::vector<Replica>> candidates(n);
  std::vector<size_t> next(n, 0);
  std::vector<bool> checksum_failed(n, false);
  // A request that timed out may still be moving bytes: its object's lease is left to expire.
  std::vector<bool> maybe_in_flight(n, false);
  std::vector<size_t> pending;
  for (size_t i = 0; i < n; ++i) {
    const auto& location = lookup.locations[i];
    if (!location.ok()) {
      results[i] = location.status();
      if (ToErrorCode(location.status()) == ErrorCode::kObjectNotFound) ++misses_;
      continue;
    }
    if (!plans[i].ok()) {
      results[i] = plans[i].status();
      continue;
    }
    if (plans[i]->pieces.empty()) continue;  // nothing asked of it (0 bytes); its lease ends below
    if (location->replicas.empty()) {
      results[i] = MakeError(ErrorCode::kObjectNotFound, "object has no replica");
      ++misses_;
      continue;
    }
    if (!location->replicas.front().disk_endpoint.empty()) {
      // Disk-only objects (the master lists one disk replica and nothing else).
      absl::Status read = ReadFromDisk(keys[i], location->replicas.front(), *location, *plans[i]);
      if (read.ok()) {
        ++hits_;
        ++disk_reads_;
        results[i] = BytesOf(*plans[i]);
        continue;
      }
      if (ToErrorCode(read) == ErrorCode::kObjectNotFound) ++misses_;
      results[i] = std::move(read);
      continue;
    }
    candidates[i] = ReadOrder(location->replicas);
    pending.push_back(i);
  }
  // Segments that could not be opened during this call are not tried again in it: a peer that
  // does not answer costs one handshake timeout per call, not one per key.
  absl::flat_hash_set<std::string> unreachable;
  // Each round reads every pending object from its next replica.
  while (!pending.empty()) {
    std::vector<TransferRequest> requests;
    std::vector<size_t> owner;
    std::vector<HashedTransfers::Object> objects;
    std::vector<size_t> object_of(n, 0);
    std::vector<bool> open_failed(n, false);
    for (size_t i : pending) {
      const Replica& replica = candidates[i][next[i]];
      absl::StatusOr<SegmentHandle> handle =
          unreachable.contains(replica.segment_name)
              ? MakeError(ErrorCode::kTransferFail, "segment unreachable in this call")
              : HandleFor(replica);
      if (!handle.ok()) {
        if (ToErrorCode(handle.status()) != ErrorCode::kInvalidReplica) {
          unreachable.insert(replica.segment_name);
        }
        open_failed[i] = true;
        continue;
      }
      HashedTransfers::Object object;
      object.first_request = requests.size();
      object.request_count = plans[i]->pieces.size();
      object.hash = config_.enable_checksum && plans[i]->whole &&
                    lookup.locations[i]->checksum != kNoChecksum;
      for (const Piece& piece : plans[i]->pieces) {
        TransferRequest r;
        r.opcode = OpCode::kRead;
        r.source = piece.data;
        r.target_id = *handle;
        r.target_offset = replica.address + piece.offset;
        r.length = piece.length;
        requests.push_back(r);
        owner.push_back(i);
        object.bytes.emplace_back(static_cast<const char*>(piece.data), piece.length);
      }
      object_of[i] = objects.size();
      objects.push_back(std::move(object));
    }
    HashedTransfers::Outcome outcome = hashed_transfers_.Run(requests, objects);
    const std::vector<TransferStatus>& statuses = outcome.statuses;
    std::vector<bool> failed = open_failed;
    std::vector<std::string> reasons(n);
    for (size_t k = 0; k < requests.size(); ++k) {
      if (statuses[k].state != TransferState::kCompleted) {
        failed[owner[k]] = true;
        reasons[owner[k]] = statuses[k].reason;
        if (statuses[k].state == TransferState::kTimeout) maybe_in_flight[owner[k]] = true;
      }
    }
    std::vector<size_t> still_pending;
    for (size_t i : pending) {
      const ObjectLocation& location = *lookup.locations[i];
      bool ok = !failed[i];
      if (ok && objects[object_of[i]].hash &&
          outcome.checksums[object_of[i]] != location.checksum) {
        ok = false;
        checksum_failed[i] = true;
        ++checksum_failures_;
        YB_LOG_WARN("checksum mismatch reading '{}' from {}", keys[i],
                    candidates[i][next[i]].segment_name);
      }
      if (ok) {
        if (std::chrono::steady_clock::now() > lookup.asked_at[i] + location.lease_ttl) {
          ++lease_expired_;
          results[i] = MakeError(ErrorCode::kLeaseExpired,
                                 absl::StrCat("read of '", keys[i], "' outlived its lease"));
        } else {
          ++hits_;
          results[i] = BytesOf(*plans[i]);
        }
        continue;
      }
      if (++next[i] < candidates[i].size()) {
        ++failovers_;
        still_pending.push_back(i);
        continue;
      }
      if (checksum_failed[i]) {
        ++misses_;
        results[i] = MakeError(ErrorCode::kObjectNotFound,
                               absl::StrCat("no replica of '", keys[i], "' passed its checksum"));
      } else {
        results[i] = MakeError(ErrorCode::kTransferFail,
                               absl::StrCat("reading '", keys[i], "' failed on every replica: ",
                                            open_failed[i] ? "segment unreachable" : reasons[i]));
      }
    }
    pending.swap(still_pending);
  }
  // The reads are over: end their leases so that the master may free or evict at once.
  if (!lookup.end_leases) return results;
  std::vector<uint64_t> leases;
  for (size_t i = 0; i < n; ++i) {
    const auto& location = lookup.locations[i];
    if (location.ok() && location->lease_id != 0 && !maybe_in_flight[i]) {
      leases.push_back(location->lease_id);
    }
  }
  master_->ReleaseLeases(std::move(leases));
  return results;
}

absl::Status ObjectClient::ReadFromDisk(const std::string& key, const Replica& replica,
                                        const ObjectLocation& location, const ReadPlan& plan) {
  // The owning store's engine serves the file by key (its object source) straight into the
  // caller's buffers, over the same authenticated TCP server as transfers. A file is read and
  // verified whole: parts of it go through a scratch copy.
  std::string scratch;
  std::vector<transport::ObjectBuffer> dest;
  if (plan.whole) {
    for (const Piece& piece : plan.pieces) {
      dest.push_back(transport::ObjectBuffer{piece.data, piece.length});
    }
  } else {
    scratch.resize(location.size);
    dest.push_back(transport::ObjectBuffer{scratch.data(), scratch.size()});
  }
  absl::StatusOr<uint64_t> read =
      engine_->ReadObject(replica.disk_endpoint, key, dest,
                          std::chrono::steady_clock::now() + config_.transfer_timeout);
  if (absl::IsNotFound(read.status())) {
    return MakeError(ErrorCode::kObjectNotFound,
                     absl::StrCat("'", key, "' is gone from ", replica.disk_endpoint));
  }
  if (absl::IsDataLoss(read.status())) {  // the store found its file broken and dropped it
    return MakeError(ErrorCode::kObjectNotFound,
                     absl::StrCat("'", key, "' is gone from ", replica.disk_endpoint, ": ",
                                  read.status().message()));
  }
  if (absl::IsOutOfRange(read.status()) || (read.ok() && *read != location.size)) {
    ++checksum_failures_;  // the store's copy is larger than the buffer, or not the recorded size
    return MakeError(ErrorCode::kObjectNotFound,
                     absl::StrCat("disk copy of '", key, "' has the wrong size"));
  }
  if (!read.ok()) {
    return MakeError(ErrorCode::kTransferFail,
                     absl::StrCat("disk read of '", key, "' from ", replica.disk_endpoint, ": ",
                                  read.status().message()));
  }
  std::vector<absl::string_view> pieces;
  uint64_t left = *read;
  for (const transport::ObjectBuffer& piece : dest) {
    const uint64_t length = std::min(piece.size, left);
    if (length == 0) break;
    pieces.emplace_back(static_cast<const char*>(piece.data), length);
    left -= length;
  }
  if (config_.enable_checksum && !ChecksumMatches(location.checksum, pieces)) {
    ++checksum_failures_;
    YB_LOG_WARN("checksum mismatch reading '{}' from disk on {}", key, replica.disk_endpoint);
    return MakeError(ErrorCode::kObjectNotFound,
                     absl::StrCat("disk copy of '", key, "' failed its checksum"));
  }
  if (!plan.whole) {
    for (const Piece& piece : plan.pieces) {
      std::memcpy(piece.data, scratch.data() + piece.offset, piece.length);
    }
  }
  return absl::OkStatus();
}

std::vector<absl::StatusOr<std::string>> ObjectClient::BatchGet(
    const std::vector<std::string>& keys) {
  std::vector<std::string> values(keys.size());
  auto allocate = [&values](const std::vector<absl::StatusOr<uint64_t>>& sizes) {
    std::vector<Buffer> buffers(sizes.size());
    for (size_t i = 0; i < sizes.size(); ++i) {
      if (!sizes[i].ok()) continue;
      values[i].resize(*sizes[i]);
      buffers[i] = Buffer{values[i].data(), values[i].size()};
    }
    return buffers;
  };
  const std::vector<absl::StatusOr<uint64_t>> read = BatchGetAllocated(keys, allocate);
  return ValuesWhereRead(read, std::move(values));  // after the read: it fills `values`
}

std::vector<absl::StatusOr<uint64_t>> ObjectClient::BatchGetAllocated(
    const std::vector<std::string>& keys, const Client::Allocate& allocate) {
  const Lookup lookup = LookUp(keys);
  std::vector<absl::StatusOr<uint64_t>> sizes;
  sizes.reserve(keys.size());
  for (const auto& location : lookup.locations) {
    if (location.ok()) {
      sizes.emplace_back(location->size);
    } else {
      sizes.emplace_back(location.status());
    }
  }
  const std::vector<Buffer> given = allocate(sizes);
  std::vector<std::vector<Buffer>> buffers(keys.size());
  for (size_t i = 0; i < keys.size() && i < given.size(); ++i) {
    if (given[i].data != nullptr) buffers[i].push_back(given[i]);
  }
  return ReadObjects(keys, WholeObjects(keys, buffers, lookup), lookup);
}

std::vector<absl::StatusOr<uint64_t>> ObjectClient::BatchGetIntoParts(
    const std::vector<std::string>& keys, const std::vector<std::vector<Buffer>>& buffers) {
  if (keys.size() != buffers.size()) {
    return std::vector<absl::StatusOr<uint64_t>>(
        keys.size(), MakeError(ErrorCode::kInvalidParams, "keys and buffers differ in length"));
  }
  const Lookup lookup = LookUp(keys);
  return ReadObjects(keys, WholeObjects(keys, buffers, lookup), lookup);
}

std::vector<absl::StatusOr<uint64_t>> ObjectClient::BatchGetInto(
    const std::vector<std::string>& keys, const std::vector<Buffer>& buffers) {
  if (keys.size() != buffers.size()) {
    return std::vector<absl::StatusOr<uint64_t>>(
        keys.size(), MakeError(ErrorCode::kInvalidParams, "keys and buffers differ in length"));
  }
  std::vector<std::vector<Buffer>> parts;
  parts.reserve(buffers.size());
  for (const Buffer& b : buffers) parts.push_back({b});
  const Lookup lookup = LookUp(keys);
  return ReadObjects(keys, WholeObjects(keys, parts, lookup), lookup);
}

ObjectClient::ReadPlan ObjectClient::PlanRanges(const std::string& key,
                                                const std::vector<Client::Range>& ranges,
                                                uint64_t size,
                                                std::vector<absl::Status>* statuses) {
  ReadPlan plan;
  uint64_t next = 0;  // where the pieces so far end, while they cover the object in order
  bool in_order = true;
  for (const Client::Range& range : ranges) {
    absl::Status status = CheckRange(range, size, key);
    const bool ok = status.ok();
    statuses->push_back(std::move(status));
    if (!ok) {
      in_order = false;
      continue;
    }
    if (range.size == 0) continue;
    in_order = in_order && range.offset == next;
    next = range.offset + range.size;
    plan.pieces.push_back(Piece{range.data, range.offset, range.size});
  }
  plan.whole = in_order && next == size;
  return plan;
}

std::vector<absl::StatusOr<std::vector<absl::Status>>> ObjectClient::BatchGetRanges(
    const std::vector<std::string>& keys, const std::vector<std::vector<Client::Range>>& ranges) {
  using Result = absl::StatusOr<std::vector<absl::Status>>;
  if (keys.size() != ranges.size()) {
    return std::vector<Result>(
        keys.size(), MakeError(ErrorCode::kInvalidParams, "keys and ranges differ in length"));
  }
  const Lookup lookup = LookUp(keys);
  std::vector<std::vector<absl::Status>> range_statuses(keys.size());
  const std::vector<absl::StatusOr<ReadPlan>> plans =
      PlanEach(lookup, [&](size_t i, const ObjectLocation& location) -> absl::StatusOr<ReadPlan> {
        return PlanRanges(keys[i], ranges[i], location.size, &range_statuses[i]);
      });
  return ValuesWhereRead(ReadObjects(keys, plans, lookup), std::move(range_statuses));
}

std::vector<absl::Status> ObjectClient::StartReadSessions(const std::vector<std::string>& keys) {
  Lookup lookup = LookUp(keys);
  std::vector<absl::Status> out;
  out.reserve(keys.size());
  std::vector<uint64_t> replaced;  // leases of the sessions these replace
  {
    yuebing::MutexLock lock(&sessions_mu_);
    for (size_t i = 0; i < keys.size(); ++i) {
      auto old = sessions_.find(keys[i]);
      if (old != sessions_.end()) {
        if (old->second.location.lease_id != 0) replaced.push_back(old->second.location.lease_id);
        sessions_.erase(old);
      }
      absl::StatusOr<ObjectLocation>& location = lookup.locations[i];
      if (!location.ok()) {
        out.push_back(location.status());
        continue;
      }
      if (location->replicas.empty()) {
        out.push_back(MakeError(ErrorCode::kInvalidReplica, "object has no replica"));
        continue;
      }
      // (A key twice in one call: its first session was replaced above, as an older one is.)
      sessions_.emplace(keys[i], ReadSession{std::move(location).value(), lookup.asked_at[i]});
      out.push_back(absl::OkStatus());
    }
    PruneSessions();
  }
  master_->ReleaseLeases(std::move(replaced));
  return out;
}

void ObjectClient::PruneSessions() {
  if (sessions_.size() < prune_sessions_at_) return;
  const auto now = std::chrono::steady_clock::now();
  absl::erase_if(sessions_, [&](const auto& entry) {
    return now > entry.second.asked_at + entry.second.location.lease_ttl;
  });
  prune_sessions_at_ = std::max<size_t>(4096, 2 * sessions_.size());
}

std::vector<absl::StatusOr<uint64_t>> ObjectClient::ReadSessionRanges(
    const std::vector<std::string>& keys, const std::vector<std::vector<Client::Range>>& ranges) {
  using Result = absl::StatusOr<uint64_t>;
  if (keys.size() != ranges.size()) {
    return std::vector<Result>(
        keys.size(), MakeError(ErrorCode::kInvalidParams, "keys and ranges differ in length"));
  }
  const auto now = std::chrono::steady_clock::now();
  Lookup lookup;
  lookup.end_leases = false;  // the sessions keep them
  lookup.asked_at.resize(keys.size());
  {
    yuebing::MutexLock lock(&sessions_mu_);
    for (size_t i = 0; i < keys.size(); ++i) {
      auto it = sessions_.find(keys[i]);
      if (it == sessions_.end()) {
        lookup.locations.push_back(MakeError(ErrorCode::kInvalidParams,
                                             absl::StrCat("no read session of '", keys[i], "'")));
        continue;
      }
      if (now > it->second.asked_at + it->second.location.lease_ttl) {
        sessions_.erase(it);
        ++lease_expired_;
        lookup.locations.push_back(MakeError(
            ErrorCode::kLeaseExpired, absl::StrCat("read session of '", keys[i], "' expired")));
        continue;
      }
      lookup.locations.push_back(it->second.location);
      lookup.asked_at[i] = it->second.asked_at;
    }
  }
  const std::vector<absl::StatusOr<ReadPlan>> plans =
      PlanEach(lookup, [&](size_t i, const ObjectLocation& location) -> absl::StatusOr<ReadPlan> {
        std::vector<absl::Status> statuses;
        ReadPlan plan = PlanRanges(keys[i], ranges[i], location.size, &statuses);
        for (absl::Status& status : statuses) {
          if (!status.ok()) return std::move(status);  // all or nothing per key
        }
        return plan;
      });
  std::vector<Result> read = ReadObjects(keys, plans, lookup);
  yuebing::MutexLock lock(&sessions_mu_);
  for (size_t i = 0; i < keys.size(); ++i) {
    if (!read[i].ok() && ToErrorCode(read[i].status()) == ErrorCode::kLeaseExpired) {
      sessions_.erase(keys[i]);  // outlived during this read
    }
  }
  return read;
}

void ObjectClient::EndReadSessions(const std::vector<std::string>& keys) {
  std::vector<uint64_t> leases;
  {
    yuebing::MutexLock lock(&sessions_mu_);
    for (const std::string& key : keys) {
      auto it = sessions_.find(key);
      if (it == sessions_.end()) continue;
      if (it->second.location.lease_id != 0) leases.push_back(it->second.location.lease_id);
      sessions_.erase(it);
    }
  }
  master_->ReleaseLeases(std::move(leases));
}

std::vector<absl::StatusOr<bool>> ObjectClient::BatchIsExist(const std::vector<std::string>& keys) {
  return ForValidKeys<absl::StatusOr<bool>>(keys, [this](const std::vector<std::string>& valid) {
    absl::StatusOr<std::vector<bool>> exists = master_->BatchExist(valid);
    std::vector<absl::StatusOr<bool>> out;
    out.reserve(valid.size());
    for (size_t j = 0; j < valid.size(); ++j) {
      if (exists.ok()) {
        out.emplace_back(static_cast<bool>((*exists)[j]));
      } else {
        out.emplace_back(exists.status());
      }
    }
    return out;
  });
}

std::vector<absl::Status> ObjectClient::BatchRemove(const std::vector<std::string>& keys,
                                                    bool force) {
  return ForValidKeys<absl::Status>(keys, [this, force](const std::vector<std::string>& valid) {
    return master_->BatchRemove(valid, force);
  });
}

std::vector<absl::StatusOr<ObjectLocation>> ObjectClient::BatchQueryReplicas(
    const std::vector<std::string>& keys) {
  return ForValidKeys<absl::StatusOr<ObjectLocation>>(
      keys,
      [this](const std::vector<std::string>& valid) { return master_->BatchQueryReplicas(valid); });
}

std::vector<absl::Status> ObjectClient::BatchReplicaClear(const std::vector<std::string>& keys,
                                                          const std::string& segment_name) {
  return ForValidKeys<absl::Status>(keys, [&](const std::vector<std::string>& valid) {
    return master_->BatchReplicaClear(valid, segment_name);
  });
}

ClientStats ObjectClient::Stats() const {
  ClientStats stats;
  stats.puts = puts_.load();
  stats.gets = gets_.load();
  stats.hits = hits_.load();
  stats.misses = misses_.load();
  stats.checksum_failures = checksum_failures_.load();
  stats.lease_expired = lease_expired_.load();
  stats.replica_failovers = failovers_.load();
  stats.disk_reads = disk_reads_.load();
  return stats;
}

}  // namespace yuebing::store
