// Segment manifests (docs/master.md "Restart and failover"): the journal of what each owner's
// segment holds, and the restore of objects an owner reports after a fresh mount.
#include <algorithm>
#include <utility>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "master/master_impl.h"
#include "yuebing/common/error_code.h"
#include "yuebing/common/logging.h"
#include "yuebing/common/status.h"

namespace yuebing::master {
namespace {

// ObjectEntry pin flags <-> JournalEntry / RestoredObject pins.
uint32_t PinsOf(uint8_t flags) {
  return ((flags & kEntrySoftPin) ? JournalEntry::kPinSoft : 0) |
         ((flags & kEntryHardPin) ? JournalEntry::kPinHard : 0);
}
uint8_t FlagsOf(uint32_t pins) {
  return ((pins & JournalEntry::kPinSoft) ? kEntrySoftPin : 0) |
         ((pins & JournalEntry::kPinHard) ? kEntryHardPin : 0);
}

}  // namespace

const SegmentState* MasterService::Impl::JournaledSegment(const ReplicaRef& ref) const {
  const SegmentState* seg = segments_[ref.segment].get();
  // A segment being unmounted has no manifest to keep: its owner is gone or leaving. One
  // mounted without a restore has no manifest at all.
  if (seg == nullptr || seg->dying || !seg->journaled || seg->owner == nullptr) return nullptr;
  return seg;
}

void MasterService::Impl::JournalRefs(const std::vector<ReplicaRef>& refs, JournalEntry::Op op,
                                      bool committed, absl::string_view key, uint64_t size,
                                      uint64_t checksum, uint8_t flags) {
  for (const ReplicaRef& ref : refs) {
    const SegmentState* seg = JournaledSegment(ref);
    if (seg == nullptr) continue;
    JournalEntry change;
    change.op = op;
    change.address = seg->segment.base + ref.offset;
    if (op == JournalEntry::Op::kAdd) {
      change.committed = committed;
      change.size = size;
      change.checksum = checksum;
      change.pins = PinsOf(flags);
      change.key = std::string(key);
    }
    journal_.Add(seg->owner->serial, std::move(change));
  }
}

void MasterService::Impl::JournalReplicas(Shard& s, uint32_t index,
                                          const std::vector<ReplicaRef>& refs,
                                          JournalEntry::Op op) {
  const ObjectEntry& entry = s.table.at(index);
  JournalRefs(refs, op, /*committed=*/true, s.table.key(index), entry.size, entry.aux, entry.flags);
}

std::vector<ManifestMark> MasterService::Impl::ManifestMarks(const std::vector<std::string>& keys) {
  absl::flat_hash_set<uint64_t> owners;
  {
    yuebing::ReaderMutexLock topo(&topo_mu_);
    for (const std::string& key : keys) {
      Shard& s = ShardFor(key);
      yuebing::MutexLock lock(&s.mu);
      const uint32_t index = s.table.Find(key);
      if (index == ObjectTable::kNone) continue;
      for (const ReplicaRef& ref : ReplicasOf(s, index)) {
        if (const SegmentState* seg = JournaledSegment(ref)) owners.insert(seg->owner->serial);
      }
    }
  }
  std::vector<ManifestMark> marks;
  for (uint64_t owner : owners) {
    if (const uint64_t seq = journal_.NewestUnacknowledged(owner)) marks.push_back({owner, seq});
  }
  return marks;
}

absl::StatusOr<JournalBatch> MasterService::Impl::PullJournal(const ClientId& client,
                                                              uint64_t journal_id, uint64_t ack,
                                                              size_t max_entries) {
  if (client.empty() || client.size() > kMaxClientIdBytes) {
    return MakeError(ErrorCode::kInvalidParams, "bad client id");
  }
  uint64_t serial = 0;
  {
    yuebing::ReaderMutexLock topo(&topo_mu_);
    serial = SerialOf(client);
  }
  if (serial == 0) {  // unknown: it will re-mount (its ping says so) and start a new journal
    JournalBatch none;
    none.journal_id = journal_.id();
    return none;
  }
  return journal_.Pull(serial, journal_id, ack, max_entries);
}

absl::StatusOr<std::vector<absl::Status>> MasterService::Impl::RestoreObjects(
    const ClientId& client, const std::string& segment_name,
    const std::vector<RestoredObject>& objects, bool last) {
  if (objects.size() > limits::kMaxBatchKeys) {
    return MakeError(ErrorCode::kInvalidParams,
                     absl::StrCat("at most ", limits::kMaxBatchKeys, " objects per restore call"));
  }
  yuebing::ReaderMutexLock topo(&topo_mu_);
  auto named = segment_by_name_.find(segment_name);
  if (named == segment_by_name_.end()) {
    return MakeError(ErrorCode::kSegmentNotFound, "no such segment");
  }
  const uint32_t slot = named->second;
  SegmentState& seg = *segments_[slot];
  if (seg.client_id != client) {
    return MakeError(ErrorCode::kIllegalClient, "segment is owned by another client");
  }
  if (!seg.restoring.load()) {
    return MakeError(ErrorCode::kInvalidParams, "the segment's restore has ended");
  }
  const int64_t now = NowNs();
  std::vector<absl::Status> results;
  results.reserve(objects.size());
  uint64_t restored = 0;
  for (const RestoredObject& object : objects) {
    results.push_back(RestoreOne(seg, slot, object, now));
    if (results.back().ok()) ++restored;
  }
  if (last) seg.restoring.store(false);
  YB_LOG_INFO("segment {}: restored {} of {} reported objects{}", segment_name, restored,
              objects.size(), last ? "; restore done" : "");
  return results;
}

absl::Status MasterService::Impl::RestoreOne(SegmentState& seg, uint32_t slot,
                                             const RestoredObject& object, int64_t now) {
  YB_RETURN_IF_ERROR(ValidateKey(object.key));
  const uint64_t length = AlignedSize(object.size);
  if (object.size == 0 || length == 0 || object.address < seg.segment.base) {
    return MakeError(ErrorCode::kInvalidParams, "object outside the segment");
  }
  const ReplicaRef ref{slot, object.address - seg.segment.base};
  const uint32_t tenant = TenantOf(object.key);
  auto take_range = [&]() -> absl::Status {
    yuebing::MutexLock lock(&seg.mu);
    if (!seg.alloc.AllocateAt(ref.offset, length)) {
      return MakeError(ErrorCode::kInvalidParams, "range outside the segment or not free");
    }
    seg.free_bytes.store(seg.alloc.free_bytes());
    used_bytes_.fetch_add(length);
    // What was written before a restart stays charged, within the quota or not.
    if (tenant != 0) quotas_->Charge(tenant, length);
    OwnRange(seg, ref.offset, length, tenant);
    return absl::OkStatus();
  };
  Shard& s = ShardFor(object.key);
  yuebing::MutexLock lock(&s.mu);
  if (s.disk.contains(object.key)) {
    return MakeError(ErrorCode::kObjectAlreadyExists, "key held by a disk tier");
  }
  uint32_t index = s.table.Find(object.key);
  if (index != ObjectTable::kNone) {
    const ObjectEntry& entry = s.table.at(index);
    if (!(entry.flags & kEntryComplete) || entry.size != object.size ||
        entry.aux != object.checksum) {
      return MakeError(ErrorCode::kObjectAlreadyExists, "key held by another object");
    }
    std::vector<ReplicaRef> refs = ReplicasOf(s, index);
    for (const ReplicaRef& r : refs) {
      if (r.segment != slot) continue;
      if (r.offset == ref.offset) return absl::OkStatus();  // restored by an earlier attempt
      return MakeError(ErrorCode::kObjectAlreadyExists, "replica not needed");
    }
    if (refs.size() >= kMaxReplicas) {
      return MakeError(ErrorCode::kObjectAlreadyExists, "replica not needed");
    }
    YB_RETURN_IF_ERROR(take_range());
    refs.push_back(ref);
    SetReplicas(s, index, refs);
    return absl::OkStatus();
  }
  YB_RETURN_IF_ERROR(take_range());
  index = s.table.Insert(object.key);
  if (index == ObjectTable::kNone) {
    FreeRange(ref.segment, ref.offset, length);
    return MakeError(ErrorCode::kNoAvailableHandle, "object index shard is full");
  }
  ObjectEntry& entry = s.table.at(index);
  entry.size = object.size;
  entry.aux = object.checksum;
  entry.time_ns = 0;
  entry.last_access = access_seq_.fetch_add(1) + 1;
  entry.flags |= kEntryComplete | FlagsOf(object.pins);
  if (entry.flags & kEntrySoftPin) s.soft_pin_until[index] = now + soft_pin_ttl_ns_;
  SetReplicas(s, index, {ref});
  objects_.fetch_add(1);
  return absl::OkStatus();
}

}  // namespace yuebing::master
