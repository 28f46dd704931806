// A helper thread that computes object checksums (yuebing/common/checksum.h) for the store
// client, so that hashing large objects overlaps with the caller's own work: copying the next
// object of a read or a write (HashedTransfers).
//
// A caller opens a Group, adds jobs to it and later calls Wait, which runs the group's jobs the
// helper has not taken yet on the calling thread (one at a time, so both threads drain the queue
// together) and then waits for those the helper is running. Jobs below kMinBytes are not worth a
// hand-over (a few microseconds of hashing against a thread wake-up): callers hash those.
//
// Ownership: the bytes a job reads and the value it writes belong to the caller and must stay
// valid until Wait returns. Thread safety: all methods may be called from many threads at once;
// one helper thread serves them all, started by the first job and joined by the destructor. A
// Group belongs to one thread.
#pragma once

#include <atomic>
#include <cstdint>
#include <deque>
#include <memory>
#include <thread>

#include "absl/base/thread_annotations.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "yuebing/common/mutex.h"

namespace yuebing::store {

class ChecksumWorker {
 public:
  static constexpr uint64_t kMinBytes = 256 << 10;

  ChecksumWorker() = default;
  ~ChecksumWorker();
  ChecksumWorker(const ChecksumWorker&) = delete;
  ChecksumWorker& operator=(const ChecksumWorker&) = delete;

  class Group {
   public:
    Group() : state_(std::make_shared<State>()) {}

   private:
    friend class ChecksumWorker;
    // Shared with the queued jobs: the helper may still be signalling when Wait sees the count
    // reach 0 and the group goes away.
    struct State {
      yuebing::Mutex mu;
      yuebing::CondVar done;
      size_t left ABSL_GUARDED_BY(mu) = 0;
    };
    std::shared_ptr<State> state_;
  };

  // Queues the checksum of the concatenation of `pieces` for `group`; *out holds it once Wait
  // returns.
  void Add(Group* group, absl::Span<const absl::string_view> pieces, uint64_t* out);
  // Runs the group's jobs still queued on this thread, then waits until the helper has finished
  // the ones it took.
  void Wait(Group* group);

  // Jobs added so far, and those of them the helper thread has run (tests and benchmarks).
  uint64_t JobsAdded() const { return jobs_added_.load(std::memory_order_relaxed); }
  uint64_t HelperJobs() const { return helper_jobs_.load(std::memory_order_relaxed); }

 private:
  struct Job {
    absl::Span<const absl::string_view> pieces;
    uint64_t* out = nullptr;
    std::shared_ptr<Group::State> group;
  };
  static void Run(const Job& job);
  void HelperLoop();

  yuebing::Mutex mu_;
  yuebing::CondVar work_;
  std::deque<Job> queue_ ABSL_GUARDED_BY(mu_);
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  std::thread helper_ ABSL_GUARDED_BY(mu_);
  std::atomic<uint64_t> jobs_added_{0};
  std::atomic<uint64_t> helper_jobs_{0};
};

}  // namespace yuebing::store
