// Mooncake's replica descriptors (`ReplicaStatus`, `ReplicaDescriptor`, `MemoryDescriptor`,
// `DiskDescriptor`, `Descriptor`), what get_replica_desc / batch_get_replica_desc return, built
// from the master's ObjectLocation. Plain values: no thread-safety concerns.
#pragma once

#include <pybind11/pybind11.h>

#include <cstdint>
#include <string>
#include <vector>

#include "yuebing/master/types.h"
#include "yuebing/store/replica_task.h"

namespace yuebing::python {

// Upstream's replica states (values as upstream's). Only complete replicas are ever reported.
enum class ReplicaStatus {
  kUndefined = 0,
  kInitialized = 1,
  kProcessing = 2,
  kComplete = 3,
  kRemoved = 4,
  kFailed = 5
};

// A buffer on a store: `size` bytes at `buffer_address` of segment `transport_endpoint`.
struct BufferDescriptor {
  uint64_t size = 0;
  uint64_t buffer_address = 0;
  std::string transport_endpoint;
};

struct MemoryDescriptor {
  BufferDescriptor buffer_descriptor;
};

// A file on shared storage (upstream's DFS tier). yuebing has none: never returned, bound so that
// callers can name the type.
struct DiskDescriptor {
  std::string file_path;
  uint64_t object_size = 0;
};

// One replica: in a store's memory segment, or in a store's disk tier (upstream's LOCAL_DISK,
// read through that store; no descriptor getter, as upstream).
struct ReplicaDescriptor {
  ReplicaStatus status = ReplicaStatus::kComplete;
  bool local_disk = false;
  MemoryDescriptor memory;  // valid unless local_disk
};

// query_task's answer (upstream's QueryTaskResponse). `assigned_client` is the client running
// the task: the one that created it.
struct QueryTaskResponse {
  store::TaskInfo info;
  store::TaskId assigned_client;
};

// A client id (32 hex digits) as upstream's pair of numbers; (0, 0) if it does not parse.
store::TaskId ClientIdAsPair(const std::string& client_id);

// The descriptors of an object's replicas, in the master's order.
std::vector<ReplicaDescriptor> DescribeReplicas(const master::ObjectLocation& location);

// Registers the types above in module `m`.
void BindReplicaTypes(pybind11::module_& m);

}  // namespace yuebing::python
