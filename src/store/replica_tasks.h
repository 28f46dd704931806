// ReplicaTasks: the copy and move tasks of one store client (Mooncake's create_copy_task /
// create_move_task / query_task). A task is started at once in the caller's thread (the master
// checks it and reserves the new replicas, so bad requests fail with their error code there and
// then), then written by a background worker; its state is kept for QueryTask.
//
// Differs from upstream, where the master queues tasks for the client owning the source segment:
// here the client that creates a task runs it (it reads the object from any replica), and only
// that client can query it (another gets kTaskNotFound).
//
// Thread safety: all methods may be called from any thread. The destructor waits for the task
// being written and fails those still pending ("client closed"; their reservations are revoked).
#pragma once

#include <cstdint>
#include <deque>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "store/object_client.h"
#include "yuebing/common/mutex.h"
#include "yuebing/store/replica_task.h"

namespace yuebing::store {

class ReplicaTasks {
 public:
  // Upstream's limits: tasks waiting to be written, and finished tasks kept for queries.
  static constexpr size_t kMaxPending = 10000;
  static constexpr size_t kMaxFinished = 10000;

  explicit ReplicaTasks(ObjectClient* objects) : objects_(objects) {}
  ReplicaTasks(const ReplicaTasks&) = delete;
  ReplicaTasks& operator=(const ReplicaTasks&) = delete;
  ~ReplicaTasks();

  // `source` is used by moves (and may narrow a copy's source; empty: any replica). Errors: the
  // master's (see MasterService::ReplicaCopyStart), kTaskPendingLimitExceeded.
  absl::StatusOr<TaskId> Create(TaskType type, const std::string& key, const std::string& source,
                                const std::vector<std::string>& targets);
  // kTaskNotFound for an id this client did not create, or one forgotten (kMaxFinished).
  absl::StatusOr<TaskInfo> Query(const TaskId& id);

 private:
  struct Task {
    TaskInfo info;
    std::string key;
    master::CopyPlan plan;
  };
  void Work();
  void Finish(Task& task, const absl::Status& status) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  ObjectClient* const objects_;
  yuebing::Mutex mu_;
  absl::flat_hash_map<TaskId, Task> tasks_ ABSL_GUARDED_BY(mu_);
  std::deque<TaskId> pending_ ABSL_GUARDED_BY(mu_);
  std::deque<TaskId> finished_ ABSL_GUARDED_BY(mu_);  // oldest first
  std::mt19937_64 random_ ABSL_GUARDED_BY(mu_){std::random_device{}()};
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  std::thread worker_ ABSL_GUARDED_BY(mu_);  // started by the first task
};

}  // namespace yuebing::store
