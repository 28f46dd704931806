#include "replica_binding.h"

#include <pybind11/stl.h>

#include <stdexcept>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"

namespace yuebing::python {

namespace py = pybind11;

std::vector<ReplicaDescriptor> DescribeReplicas(const master::ObjectLocation& location) {
  std::vector<ReplicaDescriptor> out;
  out.reserve(location.replicas.size());
  for (const master::Replica& replica : location.replicas) {
    ReplicaDescriptor descriptor;
    if (!replica.disk_endpoint.empty()) {
      descriptor.local_disk = true;
    } else {
      descriptor.memory.buffer_descriptor =
          BufferDescriptor{location.size, replica.address, replica.segment_name};
    }
    out.push_back(std::move(descriptor));
  }
  return out;
}

store::TaskId ClientIdAsPair(const std::string& client_id) {
  store::TaskId id;
  if (client_id.size() != 32 || !absl::SimpleHexAtoi(client_id.substr(0, 16), &id.hi) ||
      !absl::SimpleHexAtoi(client_id.substr(16), &id.lo)) {
    return {};
  }
  return id;
}

namespace {

std::string PairText(const store::TaskId& id) { return absl::StrCat(id.hi, "-", id.lo); }

}  // namespace

void BindReplicaTypes(py::module_& m) {
  py::enum_<store::TaskType>(m, "TaskType")
      .value("REPLICA_COPY", store::TaskType::kReplicaCopy)
      .value("REPLICA_MOVE", store::TaskType::kReplicaMove);
  py::enum_<store::TaskStatus>(m, "TaskStatus")
      .value("PENDING", store::TaskStatus::kPending)
      .value("PROCESSING", store::TaskStatus::kProcessing)
      .value("SUCCESS", store::TaskStatus::kSuccess)
      .value("FAILED", store::TaskStatus::kFailed);
  auto pair = [](const store::TaskId& id) { return py::make_tuple(id.hi, id.lo); };
  py::class_<QueryTaskResponse>(m, "QueryTaskResponse", "A copy or move task's state.")
      .def(py::init<>())
      .def_property_readonly("id", [pair](const QueryTaskResponse& r) { return pair(r.info.id); })
      .def_property_readonly("type", [](const QueryTaskResponse& r) { return r.info.type; })
      .def_property_readonly("status", [](const QueryTaskResponse& r) { return r.info.status; })
      .def_property_readonly("created_at_ms_epoch",
                             [](const QueryTaskResponse& r) { return r.info.created_at_ms; })
      .def_property_readonly("last_updated_at_ms_epoch",
                             [](const QueryTaskResponse& r) { return r.info.last_updated_at_ms; })
      .def_property_readonly("assigned_client",
                             [pair](const QueryTaskResponse& r) { return pair(r.assigned_client); })
      .def_property_readonly("message", [](const QueryTaskResponse& r) { return r.info.message; })
      .def("__repr__", [](const QueryTaskResponse& r) {
        return absl::StrCat(
            "QueryTaskResponse(id=", PairText(r.info.id), ", type=", static_cast<int>(r.info.type),
            ", status=", static_cast<int>(r.info.status), ", created_at=", r.info.created_at_ms,
            ", last_updated_at=", r.info.last_updated_at_ms,
            ", assigned_client=", PairText(r.assigned_client), ", message=\"", r.info.message,
            "\")");
      });

  py::enum_<ReplicaStatus>(m, "ReplicaStatus")
      .value("UNDEFINED", ReplicaStatus::kUndefined)
      .value("INITIALIZED", ReplicaStatus::kInitialized)
      .value("PROCESSING", ReplicaStatus::kProcessing)
      .value("COMPLETE", ReplicaStatus::kComplete)
      .value("REMOVED", ReplicaStatus::kRemoved)
      .value("FAILED", ReplicaStatus::kFailed);

  py::class_<BufferDescriptor>(m, "Descriptor", "A replica's buffer on a store (size, address).")
      .def(py::init<>())
      .def_readwrite("size", &BufferDescriptor::size)
      .def_readwrite("buffer_address", &BufferDescriptor::buffer_address)
      .def_readwrite("transport_endpoint", &BufferDescriptor::transport_endpoint)
      .def("__repr__", [](const BufferDescriptor& d) {
        return absl::StrCat("<Descriptor size=", d.size, " buffer_address=", d.buffer_address,
                            " transport_endpoint=", d.transport_endpoint, ">");
      });

  py::class_<MemoryDescriptor>(m, "MemoryDescriptor")
      .def_readwrite("buffer_descriptor", &MemoryDescriptor::buffer_descriptor);

  py::class_<DiskDescriptor>(m, "DiskDescriptor")
      .def_readwrite("file_path", &DiskDescriptor::file_path)
      .def_readwrite("object_size", &DiskDescriptor::object_size);

  py::class_<ReplicaDescriptor>(m, "ReplicaDescriptor")
      .def_property_readonly("status", [](const ReplicaDescriptor& r) { return r.status; })
      .def("is_memory_replica", [](const ReplicaDescriptor& r) { return !r.local_disk; })
      .def("is_disk_replica", [](const ReplicaDescriptor&) { return false; })
      .def("is_local_disk_replica", [](const ReplicaDescriptor& r) { return r.local_disk; })
      .def(
          "get_memory_descriptor",
          [](ReplicaDescriptor& r) -> MemoryDescriptor& {
            if (r.local_disk) throw std::runtime_error("Expected MemoryDescriptor");
            return r.memory;
          },
          py::return_value_policy::reference_internal)
      .def("get_disk_descriptor", [](const ReplicaDescriptor&) -> DiskDescriptor {
        throw std::runtime_error("Expected DiskDescriptor");
      });
}

}  // namespace yuebing::python
