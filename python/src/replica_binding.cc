#include "replica_binding.h"

#include <stdexcept>

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

void BindReplicaTypes(py::module_& m) {
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
