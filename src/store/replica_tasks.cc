#include "store/replica_tasks.h"

#include <chrono>
#include <utility>

#include "yuebing/common/error_code.h"
#include "yuebing/common/status.h"

namespace yuebing::store {
namespace {

int64_t NowMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

}  // namespace

ReplicaTasks::~ReplicaTasks() {
  std::thread worker;
  {
    yuebing::MutexLock lock(&mu_);
    stopping_ = true;
    worker = std::move(worker_);
  }
  if (worker.joinable()) worker.join();
  // Tasks never written give their reservations back.
  yuebing::MutexLock lock(&mu_);
  for (const TaskId& id : pending_) {
    const Task& task = tasks_.at(id);
    if (!task.plan.targets.empty()) objects_->RevokeCopy(task.key);
  }
}

absl::StatusOr<TaskId> ReplicaTasks::Create(TaskType type, const std::string& key,
                                            const std::string& source,
                                            const std::vector<std::string>& targets) {
  {
    yuebing::MutexLock lock(&mu_);
    if (pending_.size() >= kMaxPending) {
      return MakeError(ErrorCode::kTaskPendingLimitExceeded, "too many copy/move tasks pending");
    }
  }
  YB_ASSIGN_OR_RETURN(master::CopyPlan plan,
                      objects_->StartCopy(key, source, targets, type == TaskType::kReplicaMove));
  yuebing::MutexLock lock(&mu_);
  TaskId id{random_() | 1, random_()};
  Task task;
  task.info.id = id;
  task.info.type = type;
  task.info.created_at_ms = task.info.last_updated_at_ms = NowMs();
  task.key = key;
  task.plan = std::move(plan);
  tasks_.emplace(id, std::move(task));
  pending_.push_back(id);
  if (!worker_.joinable()) worker_ = std::thread([this] { Work(); });
  return id;
}

absl::StatusOr<TaskInfo> ReplicaTasks::Query(const TaskId& id) {
  yuebing::MutexLock lock(&mu_);
  auto it = tasks_.find(id);
  if (it == tasks_.end()) return MakeError(ErrorCode::kTaskNotFound, "no such task");
  return it->second.info;
}

void ReplicaTasks::Finish(Task& task, const absl::Status& status) {
  task.info.status = status.ok() ? TaskStatus::kSuccess : TaskStatus::kFailed;
  task.info.message = status.ok() ? "Task completed successfully" : status.ToString();
  task.info.last_updated_at_ms = NowMs();
  task.plan = {};
  finished_.push_back(task.info.id);
  while (finished_.size() > kMaxFinished) {
    tasks_.erase(finished_.front());
    finished_.pop_front();
  }
}

void ReplicaTasks::Work() {
  yuebing::MutexLock lock(&mu_);
  while (true) {
    mu_.Await(yuebing::Condition(
        +[](ReplicaTasks* self)
             ABSL_NO_THREAD_SAFETY_ANALYSIS { return self->stopping_ || !self->pending_.empty(); },
        this));
    if (stopping_) return;
    const TaskId id = pending_.front();
    pending_.pop_front();
    Task& task = tasks_.at(id);
    task.info.status = TaskStatus::kProcessing;
    task.info.last_updated_at_ms = NowMs();
    const std::string key = task.key;
    const master::CopyPlan plan = task.plan;
    mu_.Unlock();
    const absl::Status done = objects_->FinishCopy(key, plan);
    mu_.Lock();
    Finish(tasks_.at(id), done);  // still there: only finished tasks are forgotten
  }
}

}  // namespace yuebing::store
