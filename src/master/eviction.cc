// Eviction (approximate LRU over complete, unleased, unpinned objects) and reclaim of
// abandoned puts.
//
// A pass works per class (unpinned, then soft-pinned when allowed): a first scan counts the
// candidates and samples up to kEvictionSampleCap of them (all of them when fewer, making the
// order exact); the sample gives the last-access cut-off that covers the targets; a second scan
// evicts candidates at or below the cut-off until the targets are met. Both scans are bounded
// by the number of objects and hold one shard lock at a time.
#include <algorithm>
#include <cmath>

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

bool SoftPinned(const ObjectEntry& entry, int64_t now) {
  return (entry.flags & kEntrySoftPin) && entry.soft_pin_until_ns > now;
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
  uint64_t count = 0;
  uint64_t bytes = 0;
  bool Done() const { return count >= count_target && bytes >= bytes_target; }
};

void MasterService::Impl::EvictClass(bool soft_pinned, int64_t now, EvictionProgress& progress) {
  std::vector<Sampled> sample;
  uint64_t seen = 0;
  uint64_t seen_bytes = 0;
  for (const std::unique_ptr<Shard>& shard : shards_) {
    Shard& s = *shard;
    yuebing::ReaderMutexLock lock(&s.mu);
    for (uint32_t i = 0; i < s.table.index_limit(); ++i) {
      const ObjectEntry& entry = s.table.at(i);
      if (!Evictable(entry, now) || SoftPinned(entry, now) != soft_pinned) continue;
      const Sampled item{entry.last_access, AlignedSize(entry.size) * entry.replicas};
      ++seen;
      seen_bytes += item.bytes;
      if (sample.size() < kEvictionSampleCap) {
        sample.push_back(item);
      } else if (const uint64_t j = NextRandom(sample_seed_) % seen; j < kEvictionSampleCap) {
        sample[j] = item;
      }
    }
  }
  if (seen == 0) return;
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
    for (uint32_t i = 0; i < s.table.index_limit(); ++i) {
      const ObjectEntry& entry = s.table.at(i);
      if (!Evictable(entry, now) || SoftPinned(entry, now) != soft_pinned ||
          entry.last_access > cutoff) {
        continue;
      }
      progress.bytes += AlignedSize(entry.size) * entry.replicas;
      ++progress.count;
      // With a disk tier the object is copied out first and freed when the copy is reported;
      // its bytes count as freed here so that one pass does not queue more than it needs.
      if (TrySpill(s, i, now)) continue;
      DropObject(s, i, now, Unfinished::kFreeNow);
      if (progress.Done()) return;
    }
  }
}

uint64_t MasterService::Impl::RunEviction(uint64_t bytes_target, int64_t now) {
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
      bytes_target};
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
  evicted_objects_.fetch_add(progress.count);
  had_futile_eviction_ = progress.count == 0;
  last_futile_eviction_ns_ = now;
  YB_LOG_DEBUG("eviction pass: {} objects, {} bytes freed (targets {} objects, {} bytes)",
               progress.count, progress.bytes, progress.count_target, progress.bytes_target);
  return progress.count;
}

void MasterService::Impl::EvictForSpace(uint64_t bytes_target, int64_t now) {
  // Spills under way will free at least this much: another pass would only spill more objects
  // (the put fails now and finds the room on a retry).
  if (spilling_bytes_.load() >= bytes_target) return;
  const uint64_t passes_before = eviction_passes_.load();
  yuebing::MutexLock lock(&eviction_mu_);
  if (eviction_passes_.load() != passes_before) return;  // one just ran: retry with its result
  RunEviction(bytes_target, now);
}

void MasterService::Impl::EvictAboveWatermark(int64_t now) {
  const uint64_t capacity = capacity_bytes_.load();
  // Memory being spilled is as good as freed: counting it again would spill more than needed.
  const uint64_t in_use = used_bytes_.load();
  const uint64_t used = in_use - std::min(in_use, spilling_bytes_.load());
  if (capacity == 0) return;
  const long double limit =
      static_cast<long double>(options_.eviction_high_watermark_ratio) * capacity;
  if (static_cast<long double>(used) <= limit) return;
  const uint64_t bytes_target = used - static_cast<uint64_t>(std::floor(limit));
  if (!eviction_mu_.TryLock()) return;  // another pass is running
  RunEviction(bytes_target, now);
  eviction_mu_.Unlock();
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
