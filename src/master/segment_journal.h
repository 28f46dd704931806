// SegmentJournal: the queue of manifest changes (JournalEntry) the master owes each segment
// owner, numbered per owner. Owners pull them (MasterService::PullJournal) and acknowledge by
// sequence number; acknowledged entries are forgotten. An owner that falls more than
// `max_entries` behind loses its queue and is told so (JournalBatch::reset): its manifest then
// keeps only objects whose bytes it can check, so it may restore fewer, never wrong ones.
//
// Thread safety: every method is thread-safe; its mutex is a leaf (taken under shard and topology
// locks, nothing is taken under it). The listener runs after an Add, outside the mutex. An
// acknowledgement is not announced: the caller of Pull retries what waits on it (the master's
// PullJournal handler runs the parked PutEnds itself, without waking another thread).
#pragma once

#include <cstdint>
#include <deque>
#include <functional>

#include "absl/container/flat_hash_map.h"
#include "yuebing/common/mutex.h"
#include "yuebing/master/types.h"

namespace yuebing::master {

class SegmentJournal {
 public:
  SegmentJournal(uint64_t journal_id, size_t max_entries);

  uint64_t id() const { return id_; }
  void Add(uint64_t owner, JournalEntry entry);
  // Forgets entries up to `ack` (when `journal_id` is this journal's) and returns up to `max`
  // entries after it.
  JournalBatch Pull(uint64_t owner, uint64_t journal_id, uint64_t ack, size_t max);
  // The sequence number of the newest entry `owner` has not acknowledged; 0 when none waits.
  uint64_t NewestUnacknowledged(uint64_t owner) const;
  // Whether `owner` no longer waits for entries up to `seq`: it acknowledged them, or its queue
  // was dropped (Forget, or a reset that makes it start over).
  bool Acknowledged(uint64_t owner, uint64_t seq) const;
  // Drops an owner's queue (the owner is gone).
  void Forget(uint64_t owner);
  void SetListener(std::function<void()> listener);
  // Entries queued for every owner (for tests and metrics).
  size_t queued() const;

 private:
  struct Queue {
    std::deque<JournalEntry> entries;
    uint64_t first_seq = 1;  // sequence number of entries.front()
    // Entries up to this were dropped unsent: a client behind it must reset its manifest.
    uint64_t reset_seq = 0;
  };

  const uint64_t id_;
  const size_t max_entries_;
  mutable yuebing::Mutex mu_;
  absl::flat_hash_map<uint64_t, Queue> queues_ ABSL_GUARDED_BY(mu_);
  size_t queued_ ABSL_GUARDED_BY(mu_) = 0;
  std::function<void()> listener_ ABSL_GUARDED_BY(mu_);
};

}  // namespace yuebing::master
