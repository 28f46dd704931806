// Read leases that end with the read (docs/master.md "Read leases").
//
// GetReplicaList grants a lease of default_kv_lease_ttl and counts a reader on the object's read
// hold; the reader's client releases the lease by id when its transfer is over. While a hold has
// readers, the object is not evicted or removed without force, and if it is dropped or replaced
// anyway its replicas stay with the (detached) hold. When the last reader releases, the object is
// free to go at once and a detached hold frees its replicas. A reader that never releases (it
// died) is bounded by the lease deadline as before.
//
// Lease ids: shard (12 bits) | hold slot (24 bits) | slot generation (28 bits). A release whose
// generation does not match the slot's is stale (its hold ended, the slot was reused) and is
// ignored, so a late or repeated release never ends another version's readers.
#include <algorithm>

#include "master/master_impl.h"
#include "yuebing/common/check.h"

namespace yuebing::master {
namespace {

constexpr int kGenerationBits = 28;
constexpr int kSlotBits = 24;
constexpr int kShardBits = 12;
constexpr uint32_t kGenerationMask = (1u << kGenerationBits) - 1;
constexpr uint32_t kMaxHoldSlots = 1u << kSlotBits;
static_assert(kMaxShards <= (1u << kShardBits), "shard numbers fit their lease id field");
static_assert(kGenerationBits + kSlotBits + kShardBits == 64, "lease ids use all 64 bits");

uint64_t LeaseId(uint32_t shard, uint32_t slot, uint32_t generation) {
  return (uint64_t{shard} << (kSlotBits + kGenerationBits)) | (uint64_t{slot} << kGenerationBits) |
         generation;
}

uint32_t NextGeneration(uint32_t generation) {
  generation = (generation + 1) & kGenerationMask;
  return generation == 0 ? 1 : generation;
}

bool HoldLater(const HoldExpiry& a, const HoldExpiry& b) { return a.deadline_ns > b.deadline_ns; }

}  // namespace

uint64_t MasterService::Impl::GrantLease(Shard& s, uint32_t index, int64_t now) {
  ObjectEntry& entry = s.table.at(index);
  entry.time_ns = std::max(entry.time_ns, now + lease_ttl_ns_);
  uint32_t slot;
  if (entry.hold != 0) {
    slot = entry.hold - 1;
    ReadHold& hold = s.holds[slot];
    if (hold.deadline_ns <= now) {
      // Its readers' leases all ended without a release: a new round under a new generation,
      // so that their late releases miss.
      hold.readers = 0;
      hold.generation = NextGeneration(hold.generation);
    }
  } else {
    if (!s.free_holds.empty()) {
      slot = s.free_holds.front();
      s.free_holds.pop_front();
    } else if (s.holds.size() < kMaxHoldSlots) {
      slot = static_cast<uint32_t>(s.holds.size());
      s.holds.emplace_back();
      s.holds.back().generation = NextGeneration(
          static_cast<uint32_t>(next_hold_generation_.fetch_add(0x9e3779b1u)) & kGenerationMask);
    } else {
      return 0;  // every slot in use: this lease only ends at its deadline
    }
    entry.hold = slot + 1;
    s.holds[slot].entry = index;
  }
  ReadHold& hold = s.holds[slot];
  YB_CHECK(hold.entry == index && hold.ranges.empty(), "an attached hold covers its entry only");
  ++hold.readers;
  hold.deadline_ns = entry.time_ns;
  return LeaseId(s.id, slot, hold.generation);
}

void MasterService::Impl::ReleaseReplicas(Shard& s, uint32_t index,
                                          const std::vector<ReplicaRef>& refs, uint64_t length,
                                          int64_t now) {
  JournalReplicas(s, index, refs, JournalEntry::Op::kDrop);
  ObjectEntry& entry = s.table.at(index);
  const int64_t lease_end = entry.time_ns;
  entry.time_ns = 0;
  if (entry.hold == 0) {
    // No counted readers; a lease granted without a hold slot still keeps the bytes.
    for (const ReplicaRef& ref : refs) Retire(ref, length, std::max(now, lease_end), now);
    return;
  }
  const uint32_t slot = entry.hold - 1;
  entry.hold = 0;
  ReadHold& hold = s.holds[slot];
  YB_CHECK(hold.entry == index, "an entry's hold points back at it");
  hold.entry = ReadHold::kNoEntry;
  if (hold.readers == 0 || hold.deadline_ns <= now) {
    EndHold(s, slot);
    for (const ReplicaRef& ref : refs) FreeRange(ref.segment, ref.offset, length);
    return;
  }
  for (const ReplicaRef& ref : refs) {
    const SegmentState* seg = segments_[ref.segment].get();
    if (seg == nullptr || seg->dying) continue;  // the whole allocator goes
    hold.ranges.push_back(HeldRange{ref.segment, seg->epoch, ref.offset, length});
  }
  yuebing::MutexLock lock(&retired_mu_);
  hold_expiry_.push_back(HoldExpiry{hold.deadline_ns, s.id, slot, hold.generation});
  std::push_heap(hold_expiry_.begin(), hold_expiry_.end(), HoldLater);
}

void MasterService::Impl::EndHold(Shard& s, uint32_t slot) {
  ReadHold& hold = s.holds[slot];
  if (hold.entry != ReadHold::kNoEntry) {
    ObjectEntry& entry = s.table.at(hold.entry);
    YB_CHECK(entry.hold == slot + 1, "an attached hold's entry points back at it");
    entry.hold = 0;
    entry.time_ns = 0;  // no reader left: the object may go at once
    hold.entry = ReadHold::kNoEntry;
  }
  for (const HeldRange& range : hold.ranges) {
    const SegmentState* seg =
        range.segment < segments_.size() ? segments_[range.segment].get() : nullptr;
    if (seg != nullptr && seg->epoch == range.epoch) {
      FreeRange(range.segment, range.offset, range.length);
    }
  }
  hold.ranges.clear();
  hold.readers = 0;
  hold.deadline_ns = 0;
  hold.generation = NextGeneration(hold.generation);
  s.free_holds.push_back(slot);
}

uint64_t MasterService::Impl::ReleaseLeases(const std::vector<uint64_t>& ids) {
  yuebing::ReaderMutexLock topo(&topo_mu_);
  const int64_t now = NowNs();
  uint64_t released = 0;
  for (uint64_t id : ids) {
    const uint32_t shard = static_cast<uint32_t>(id >> (kSlotBits + kGenerationBits));
    const uint32_t slot = static_cast<uint32_t>(id >> kGenerationBits) & (kMaxHoldSlots - 1);
    const uint32_t generation = static_cast<uint32_t>(id) & kGenerationMask;
    if (id == 0 || shard >= shards_.size()) continue;
    Shard& s = *shards_[shard];
    yuebing::MutexLock lock(&s.mu);
    if (slot >= s.holds.size()) continue;
    ReadHold& hold = s.holds[slot];
    if (hold.generation != generation || hold.readers == 0) continue;
    ++released;
    if (hold.deadline_ns <= now) continue;  // over anyway; cleaned up by the next grant or expiry
    if (--hold.readers == 0) EndHold(s, slot);
  }
  return released;
}

void MasterService::Impl::ExpireHolds(int64_t now) {
  std::vector<HoldExpiry> due;
  {
    yuebing::MutexLock lock(&retired_mu_);
    while (!hold_expiry_.empty() && hold_expiry_.front().deadline_ns <= now) {
      std::pop_heap(hold_expiry_.begin(), hold_expiry_.end(), HoldLater);
      due.push_back(hold_expiry_.back());
      hold_expiry_.pop_back();
    }
  }
  for (const HoldExpiry& expiry : due) {
    Shard& s = *shards_[expiry.shard];
    yuebing::MutexLock lock(&s.mu);
    ReadHold& hold = s.holds[expiry.slot];
    // A hold that ended by its last release already freed its ranges (and changed generation).
    if (hold.generation == expiry.generation && hold.entry == ReadHold::kNoEntry) {
      EndHold(s, expiry.slot);
    }
  }
}

}  // namespace yuebing::master
