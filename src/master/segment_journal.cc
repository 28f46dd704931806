#include "master/segment_journal.h"

#include <utility>

namespace yuebing::master {

SegmentJournal::SegmentJournal(uint64_t journal_id, size_t max_entries)
    : id_(journal_id), max_entries_(max_entries == 0 ? 1 : max_entries) {}

void SegmentJournal::Add(uint64_t owner, JournalEntry entry) {
  std::function<void()> listener;
  {
    yuebing::MutexLock lock(&mu_);
    Queue& queue = queues_[owner];
    if (queue.entries.size() >= max_entries_) {
      // The owner stopped pulling: drop what it missed and make it start over.
      queue.first_seq += queue.entries.size();
      queue.reset_seq = queue.first_seq - 1;
      queued_ -= queue.entries.size();
      queue.entries.clear();
    }
    queue.entries.push_back(std::move(entry));
    ++queued_;
    listener = listener_;
  }
  if (listener) listener();
}

JournalBatch SegmentJournal::Pull(uint64_t owner, uint64_t journal_id, uint64_t ack, size_t max) {
  JournalBatch batch;
  batch.journal_id = id_;
  if (journal_id != id_) ack = 0;
  {
    yuebing::MutexLock lock(&mu_);
    auto it = queues_.find(owner);
    if (it == queues_.end()) return batch;
    Queue& queue = it->second;
    while (!queue.entries.empty() && queue.first_seq <= ack) {
      queue.entries.pop_front();
      ++queue.first_seq;
      --queued_;
    }
    batch.reset = ack < queue.reset_seq;
    batch.last_seq = queue.first_seq - 1;
    for (size_t i = 0; i < queue.entries.size() && batch.entries.size() < max; ++i) {
      batch.entries.push_back(queue.entries[i]);
      ++batch.last_seq;
    }
  }
  return batch;
}

uint64_t SegmentJournal::NewestUnacknowledged(uint64_t owner) const {
  yuebing::MutexLock lock(&mu_);
  auto it = queues_.find(owner);
  if (it == queues_.end() || it->second.entries.empty()) return 0;
  return it->second.first_seq - 1 + it->second.entries.size();
}

bool SegmentJournal::Acknowledged(uint64_t owner, uint64_t seq) const {
  yuebing::MutexLock lock(&mu_);
  auto it = queues_.find(owner);
  return it == queues_.end() || it->second.first_seq > seq;
}

void SegmentJournal::Forget(uint64_t owner) {
  yuebing::MutexLock lock(&mu_);
  auto it = queues_.find(owner);
  if (it == queues_.end()) return;
  queued_ -= it->second.entries.size();
  queues_.erase(it);
}

void SegmentJournal::SetListener(std::function<void()> listener) {
  yuebing::MutexLock lock(&mu_);
  listener_ = std::move(listener);
}

size_t SegmentJournal::queued() const {
  yuebing::MutexLock lock(&mu_);
  return queued_;
}

}  // namespace yuebing::master
