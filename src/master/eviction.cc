// Eviction (approximate LRU over complete, unleased, unpinned objects) and reclaim of
// abandoned puts.
//
// A pass works per class (unpinned, then soft-pinned when allowed). First a sample of the
// candidates gives the last-access cut-off that covers the targets: every entry when the master
// holds at most kEvictionSampleCap objects (the order is then exact), else kEvictionSampleCap
// entries probed at random (each standing for index_limit / probes entries of its shard). Then
// the segment lists (SegmentMembers: least recently used at the tail) are walked from their tails
// while entries are at or below the cut-off, evicting the candidates until the targets are met.
// So a pass costs the sample plus the entries it evicts or passes over (leased, pinned, being
// spilled, or of the other class), not a scan of every object. Both steps hold one shard lock at
// a time.
//
// Lazy eviction (MasterOptions::lazy_eviction, the default): the pass that the watermark starts
// condemns its victims instead of freeing them. A condemned object stays readable (a read
// reprieves it) and its memory counts as free for the watermark; a put that finds no room frees
// condemned objects, oldest first across shards, before it runs a pass of its own. So the
// segments stay full of readable objects while puts still find room without waiting for a pass.
#include <algorithm>
#include <cmath>
#include <string>

#include "master/master_impl.h"
#include "yuebing/common/logging.h"

namespace yuebing::master {
namespace {

struct Sampled {
  uint64_t access;
  uint64_t bytes;
};

bool Evictable(const ObjectEntry& entry, int64_t now) {
  return (entry.flags & (kEntryUsed | kEntryComplete)) == (kEntryUsed | kEntryComplete) &&
         !(entry.flags & (kEntryHardPin | kEntryPendingUpsert | kEntrySpilling)) &&
         entry.time_ns <= now;
}

bool SoftPinned(const Shard& s, uint32_t index, int64_t now) ABSL_SHARED_LOCKS_REQUIRED(s.mu) {
  if (!(s.table.at(index).flags & kEntrySoftPin)) return false;
  auto it = s.soft_pin_until.find(index);
  return it != s.soft_pin_until.end() && it->second > now;
}

// Whether entry `i` is a candidate of a pass over the soft-pinned (or the other) objects of
// `tenant` (empty: of every tenant); a pass that condemns skips those it condemned already.
bool Candidate(const Shard& s, uint32_t i, int64_t now, bool soft_pinned, const std::string& tenant,
               bool condemn) ABSL_SHARED_LOCKS_REQUIRED(s.mu) {
  const ObjectEntry& entry = s.table.at(i);
  return Evictable(entry, now) && SoftPinned(s, i, now) == soft_pinned &&
         !(condemn && (entry.flags & kEntryCondemned)) &&
         (tenant.empty() || InTenant(s.table.key(i), tenant));
}

uint64_t NextRandom(uint64_t& state) {  // splitmix64
  uint64_t z = (state += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

}  // namespace

struct MasterService::Impl::EvictionProgress {
  uint64_t count_target;
  uint64_t bytes_target;
  std::string tenant;    // only this tenant's objects; empty: every object
  bool condemn = false;  // condemn the victims (lazy eviction) rather than free them
  uint64_t count = 0;
  uint64_t bytes = 0;
  bool Done() const { return count >= count_target && bytes >= bytes_target; }
};

void MasterService::Impl::EvictClass(bool soft_pinned, int64_t now, EvictionProgress& progress) {
  std::vector<Sampled> sample;
  long double seen = 0;
  long double seen_bytes = 0;
  const bool exact = objects_.load() <= kEvictionSampleCap;
  const uint64_t probes_per_shard = std::max<uint64_t>(1, kEvictionSampleCap / shards_.size());
  for (const std::unique_ptr<Shard>& shard : shards_) {
    Shard& s = *shard;
    yuebing::ReaderMutexLock lock(&s.mu);
    const uint32_t limit = s.table.index_limit();
    if (limit == 0) continue;
    const uint64_t probes = exact ? limit : probes_per_shard;
    const long double weight = static_cast<long double>(limit) / probes;
    for (uint64_t p = 0; p < probes; ++p) {
      const uint32_t i = exact ? static_cast<uint32_t>(p)
                               : static_cast<uint32_t>(NextRandom(sample_seed_) % limit);
      if (!Candidate(s, i, now, soft_pinned, progress.tenant, progress.condemn)) continue;
      const ObjectEntry& entry = s.table.at(i);
      const Sampled item{entry.last_access, MemoryOf(entry)};
      seen += weight;
      seen_bytes += weight * item.bytes;
      sample.push_back(item);
    }
  }
  if (sample.empty()) return;
  std::sort(sample.begin(), sample.end(),
            [](const Sampled& a, const Sampled& b) { return a.access < b.access; });
  long double sample_bytes = 0;
  for (const Sampled& item : sample) sample_bytes += item.bytes;
  const uint64_t need_count =
      progress.count_target > progress.count ? progress.count_target - progress.count : 0;
  const uint64_t need_bytes =
      progress.bytes_target > progress.bytes ? progress.bytes_target - progress.bytes : 0;
  uint64_t cutoff = UINT64_MAX;
  long double prefix_bytes = 0;
  for (size_t k = 0; k < sample.size(); ++k) {
    prefix_bytes += sample[k].bytes;
    const long double est_count = static_cast<long double>(k + 1) * seen / sample.size();
    const long double est_bytes = sample_bytes > 0 ? prefix_bytes * seen_bytes / sample_bytes : 0;
    if (est_count >= need_count && est_bytes >= need_bytes) {
      cutoff = sample[k].access;
      break;
    }
  }
  for (const std::unique_ptr<Shard>& shard : shards_) {
    Shard& s = *shard;
    yuebing::MutexLock lock(&s.mu);
    for (uint32_t segment : s.members.Segments()) {
      uint32_t i = s.members.Tail(segment);
      while (i != ObjectTable::kNone) {
        const ObjectEntry& entry = s.table.at(i);
        const uint32_t newer = entry.seg_prev;  // read first: the entry may go
        if (entry.last_access > cutoff) break;  // the rest of the list is newer still
        if (Candidate(s, i, now, soft_pinned, progress.tenant, progress.condemn)) {
          progress.bytes += MemoryOf(entry);
          ++progress.count;
          // With a disk tier the object is copied out first and freed when the copy is
          // reported; its bytes count as freed here so that one pass does not queue more than
          // it needs.
          Reprieve(s, i);  // a pass that frees takes condemned objects first (they are oldest)
          if (!TrySpill(s, i, now)) {
            if (progress.condemn) {
              Condemn(s, i);
            } else {
              DropObject(s, i, now, Unfinished::kFreeNow);
            }
          }
          if (progress.Done()) return;
        }
        i = newer;
      }
    }
  }
}

void MasterService::Impl::EvictRounds(int64_t now, EvictionProgress& progress) {
  // A sampled cut-off can fall short; a few more rounds reach the rest of the unpinned objects
  // before any soft-pinned one goes.
  for (int round = 0; round < 4 && !progress.Done(); ++round) {
    const uint64_t before = progress.count;
    EvictClass(/*soft_pinned=*/false, now, progress);
    if (progress.count == before) break;
  }
  if (!progress.Done() && options_.allow_evict_soft_pinned_objects) {
    EvictClass(/*soft_pinned=*/true, now, progress);
  }
  if (!progress.condemn) evicted_objects_.fetch_add(progress.count);
}

uint64_t MasterService::Impl::RunEviction(uint64_t bytes_target, int64_t now, bool condemn) {
  const int64_t backoff_ns =
      std::chrono::duration_cast<std::chrono::nanoseconds>(kFutileEvictionBackoff).count();
  if (had_futile_eviction_ && now >= last_futile_eviction_ns_ &&
      now - last_futile_eviction_ns_ < backoff_ns) {
    return 0;
  }
  eviction_passes_.fetch_add(1);
  const uint64_t objects = objects_.load();
  EvictionProgress progress{
      std::max<uint64_t>(
          1, static_cast<uint64_t>(std::ceil(options_.eviction_ratio * objects - 1e-9))),
      bytes_target, /*tenant=*/{}, condemn};
  EvictRounds(now, progress);
  had_futile_eviction_ = progress.count == 0;
  last_futile_eviction_ns_ = now;
  YB_LOG_DEBUG("eviction pass: {} objects, {} bytes {} (targets {} objects, {} bytes)",
               progress.count, progress.bytes, condemn ? "condemned" : "freed",
               progress.count_target, progress.bytes_target);
  return progress.count;
}

uint64_t MasterService::Impl::EvictTenant(uint32_t tenant, uint64_t bytes, int64_t now) {
  yuebing::MutexLock lock(&eviction_mu_);
  // A little more than the deficit (eviction_ratio of the tenant's charge), so that a tenant
  // writing at its quota does not pay a pass for every put.
  const auto slack = static_cast<uint64_t>(options_.eviction_ratio *
                                           static_cast<double>(quotas_->Charged(tenant)));
  EvictionProgress progress{1, std::max(bytes, slack), quotas_->Name(tenant)};
  EvictRounds(now, progress);
  if (progress.bytes != 0) quotas_->CountEvictedBytes(tenant, progress.bytes);
  return progress.count;
}

void MasterService::Impl::EvictForSpace(uint64_t bytes_target, int64_t now) {
  // Spills under way will free at least this much: another pass would only spill more objects
  // (the put fails now and finds the room on a retry).
  if (spilling_bytes_.load() >= bytes_target) return;
  const uint64_t passes_before = eviction_passes_.load();
  yuebing::MutexLock lock(&eviction_mu_);
  if (eviction_passes_.load() != passes_before) return;  // one just ran: retry with its result
  RunEviction(bytes_target, now, /*condemn=*/false);
}

void MasterService::Impl::EvictAboveWatermark(int64_t now) {
  const uint64_t capacity = capacity_bytes_.load();
  // Memory being spilled or condemned is as good as freed: counting it again would spill or
  // condemn more than needed.
  const uint64_t in_use = used_bytes_.load();
  const uint64_t going = spilling_bytes_.load() + condemned_bytes_.load();
  const uint64_t used = in_use - std::min(in_use, going);
  if (capacity == 0) return;
  const long double limit =
      static_cast<long double>(options_.eviction_high_watermark_ratio) * capacity;
  if (static_cast<long double>(used) <= limit) return;
  const uint64_t bytes_target = used - static_cast<uint64_t>(std::floor(limit));
  if (!eviction_mu_.TryLock()) return;  // another pass is running
  RunEviction(bytes_target, now, options_.lazy_eviction);
  eviction_mu_.Unlock();
}

void MasterService::Impl::Condemn(Shard& s, uint32_t index) {
  ObjectEntry& entry = s.table.at(index);
  if (entry.flags & kEntryCondemned) return;
  const uint64_t bytes = MemoryOf(entry);
  if (!s.condemned.emplace(entry.last_access, Shard::Condemned{index, bytes}).second) return;
  entry.flags |= kEntryCondemned;
  condemned_bytes_.fetch_add(bytes);
}

void MasterService::Impl::Reprieve(Shard& s, uint32_t index) {
  ObjectEntry& entry = s.table.at(index);
  if (!(entry.flags & kEntryCondemned)) return;
  entry.flags &= static_cast<uint8_t>(~kEntryCondemned);
  auto it = s.condemned.find(entry.last_access);
  if (it == s.condemned.end() || it->second.index != index) return;
  condemned_bytes_.fetch_sub(it->second.bytes);
  s.condemned.erase(it);
}

uint64_t MasterService::Impl::ReclaimCondemned(uint64_t bytes_target, int64_t now) {
  uint64_t freed = 0;
  uint64_t count = 0;
  while (freed < bytes_target && condemned_bytes_.load() != 0) {
    // The shard whose oldest condemned entry is the oldest of all. Another thread may take it
    // before this one locks the shard again; then its next oldest goes, which is as good.
    Shard* oldest = nullptr;
    uint64_t oldest_access = UINT64_MAX;
    for (const std::unique_ptr<Shard>& shard : shards_) {
      yuebing::ReaderMutexLock lock(&shard->mu);
      if (shard->condemned.empty()) continue;
      const uint64_t access = shard->condemned.begin()->first;
      if (access < oldest_access) {
        oldest_access = access;
        oldest = shard.get();
      }
    }
    if (oldest == nullptr) break;
    Shard& s = *oldest;
    yuebing::MutexLock lock(&s.mu);
    if (s.condemned.empty()) continue;
    const uint32_t index = s.condemned.begin()->second.index;
    const ObjectEntry& entry = s.table.at(index);
    if (!Evictable(entry, now)) {  // pinned or replaced since it was chosen: it stays
      Reprieve(s, index);
      continue;
    }
    freed += MemoryOf(entry);
    ++count;
    DropObject(s, index, now, Unfinished::kFreeNow);
  }
  evicted_objects_.fetch_add(count);
  return freed;
}

void MasterService::Impl::ReleaseZombiePuts(int64_t now) {
  for (const std::unique_ptr<Shard>& shard : shards_) {
    Shard& s = *shard;
    yuebing::MutexLock lock(&s.mu);
    std::vector<uint32_t> stale;
    for (const auto& [i, announced] : s.in_progress) {
      if (s.table.at(i).time_ns + release_timeout_ns_ <= now) stale.push_back(i);
    }
    for (uint32_t i : stale) {
      YB_LOG_WARN("reclaiming an unfinished put of {} bytes older than put_start_release_timeout",
                  s.table.at(i).size);
      DropObject(s, i, now, Unfinished::kFreeNow);
    }
    stale.clear();
    for (const auto& [i, pending] : s.pending) {
      if (pending.start_ns + release_timeout_ns_ <= now) stale.push_back(i);
    }
    for (uint32_t i : stale) CancelPending(s, i, now, Unfinished::kFreeNow);
  }
}

}  // namespace yuebing::master
