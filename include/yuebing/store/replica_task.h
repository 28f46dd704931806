// Mooncake's replica copy/move tasks as the store client exposes them (Client::CreateCopyTask,
// CreateMoveTask, QueryTask): plain values.
#pragma once

#include <cstdint>
#include <string>

namespace yuebing::store {

// Upstream's task id: a pair of 64-bit numbers (a tuple (hi, lo) in Python).
struct TaskId {
  uint64_t hi = 0;
  uint64_t lo = 0;
  friend bool operator==(const TaskId&, const TaskId&) = default;
  template <typename H>
  friend H AbslHashValue(H h, const TaskId& id) {
    return H::combine(std::move(h), id.hi, id.lo);
  }
};

// Values as upstream's.
enum class TaskType { kReplicaCopy = 0, kReplicaMove = 1 };
enum class TaskStatus { kPending = 0, kProcessing = 1, kFailed = 2, kSuccess = 3 };

struct TaskInfo {
  TaskId id;
  TaskType type = TaskType::kReplicaCopy;
  TaskStatus status = TaskStatus::kPending;
  int64_t created_at_ms = 0;       // milliseconds since the Unix epoch
  int64_t last_updated_at_ms = 0;  // the last change of status
  std::string message;             // why it failed; "Task completed successfully" on success
};

}  // namespace yuebing::store
