#include "config_binding.h"

#include <Python.h>

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "yuebing/common/config.h"
#include "yuebing/store/store_config.h"

namespace yuebing::python {
namespace {

namespace py = pybind11;
using nlohmann::json;
using store::StoreConfig;

// A Python value as JSON: None, bool, int, float, str, dicts (keys as str()), lists and tuples
// map to their JSON counterparts; anything else (and an int beyond 64 bits) becomes its str().
json ToJson(py::handle value) {
  if (value.is_none()) return nullptr;
  if (py::isinstance<py::bool_>(value)) return value.cast<bool>();
  if (py::isinstance<py::int_>(value)) {
    int overflow = 0;
    const long long number = PyLong_AsLongLongAndOverflow(value.ptr(), &overflow);
    if (overflow == 0) return static_cast<int64_t>(number);
    if (overflow > 0) {
      const unsigned long long big = PyLong_AsUnsignedLongLong(value.ptr());
      if (!PyErr_Occurred()) return static_cast<uint64_t>(big);
      PyErr_Clear();
    }
    return py::str(value).cast<std::string>();
  }
  if (py::isinstance<py::float_>(value)) return value.cast<double>();
  if (py::isinstance<py::str>(value)) return value.cast<std::string>();
  if (py::isinstance<py::dict>(value)) {
    json object = json::object();
    for (auto item : value.cast<py::dict>()) {
      object[py::str(item.first).cast<std::string>()] = ToJson(item.second);
    }
    return object;
  }
  if (py::isinstance<py::list>(value) || py::isinstance<py::tuple>(value)) {
    json array = json::array();
    for (py::handle item : value) array.push_back(ToJson(item));
    return array;
  }
  if (PyMapping_Check(value.ptr()) && py::hasattr(value, "keys")) {  // other mappings
    json object = json::object();
    for (py::handle key : value.attr("keys")()) {
      object[py::str(key).cast<std::string>()] = ToJson(value[key]);
    }
    return object;
  }
  return py::str(value).cast<std::string>();
}

// Raises the Python exception for a failed StoreConfig call.
[[noreturn]] void Raise(const absl::Status& status) {
  PyObject* type = PyExc_ValueError;
  if (absl::IsNotFound(status)) {
    type = PyExc_FileNotFoundError;
  } else if (absl::IsPermissionDenied(status)) {
    type = PyExc_PermissionError;
  } else if (absl::IsUnavailable(status)) {
    type = PyExc_OSError;
  }
  PyErr_SetString(type, std::string(status.message()).c_str());
  throw py::error_already_set();
}

template <typename T>
T OrRaise(absl::StatusOr<T> result) {
  if (!result.ok()) Raise(result.status());
  return *std::move(result);
}

// The seven fields MooncakeConfig's constructor normalizes.
py::dict CoreFields(const StoreConfig& c) {
  py::dict out;
  out["local_hostname"] = c.local_hostname;
  out["metadata_server"] = c.metadata_server;
  out["global_segment_size"] = c.global_segment_size;
  out["local_buffer_size"] = c.local_buffer_size;
  out["protocol"] = c.protocol;
  out["device_name"] = c.device_name;
  out["master_server_address"] = c.master_server_address;
  return out;
}

// Every field of a MooncakeConfig.
py::dict AllFields(const StoreConfig& c) {
  py::dict out = CoreFields(c);
  out["enable_ssd_offload"] = c.enable_ssd_offload;
  out["ssd_offload_path"] = c.ssd_offload_path;
  out["tenant_id"] = c.tenant_id;
  out["enable_client_http_server"] = c.enable_client_http_server;
  out["client_http_port"] = c.client_http_port;
  return out;
}

}  // namespace

void BindConfig(py::module_& m) {
  m.attr("DEFAULT_GLOBAL_SEGMENT_SIZE") = store::kDefaultGlobalSegmentSize;
  m.attr("DEFAULT_LOCAL_BUFFER_SIZE") = store::kDefaultLocalBufferSize;
  m.def(
      "parse_size",
      [](const std::string& text) {
        absl::StatusOr<uint64_t> size = ParseSize(text);
        if (!size.ok()) throw py::value_error(std::string(size.status().message()));
        return *size;
      },
      py::arg("text"),
      "Parses a byte size such as '16MB', '1.5 GiB' or '4096' (KB/MB/GB = 1024^n).");
  m.def(
      "_parse_size_value",
      [](py::handle value) { return OrRaise(store::SizeFromValue(ToJson(value))); },
      py::arg("value"));
  m.def(
      "_parse_bool_value",
      [](py::handle value) { return OrRaise(store::BoolFromValue(ToJson(value))); },
      py::arg("value"));
  m.def(
      "_store_config_fields",
      [](py::handle fields) {
        return CoreFields(OrRaise(StoreConfig::FromFields(ToJson(fields))));
      },
      py::arg("fields"));
  m.def(
      "_store_config_from_dict",
      [](py::handle data) { return AllFields(OrRaise(StoreConfig::FromJson(ToJson(data)))); },
      py::arg("data"));
  m.def(
      "_store_config_from_file",
      [](const std::string& path) { return AllFields(OrRaise(StoreConfig::FromJsonFile(path))); },
      py::arg("path"));
  m.def("_store_config_from_env",
        []() { return AllFields(OrRaise(StoreConfig::FromEnvironment())); });
}

}  // namespace yuebing::python
